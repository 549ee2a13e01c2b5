"""genesis.utils.benchmark: `Timer`, `Measurement`, `Compare` and `Fuzzer` as
torch.utils.benchmark's (in utils/, laid out as torch's), and the CUDA performance tools
genesis.cuda re-exports: memory-bandwidth analysis and kernel warm-up (bandwidth.py)."""

from .bandwidth import analyze_memory_bandwidth, measured_peak_bandwidth, warm_up_kernels
from .utils.common import Measurement, TaskSpec, select_unit
from .utils.compare import Colorize, Compare, ordered_unique, trim_sigfig, unit_to_english
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .utils.timer import Language, Timer, timer

__all__ = ["Colorize", "Compare", "FuzzedParameter", "FuzzedTensor", "Fuzzer", "Language",
           "Measurement", "ParameterAlias", "TaskSpec", "Timer", "ordered_unique", "select_unit",
           "timer", "trim_sigfig", "unit_to_english", "analyze_memory_bandwidth",
           "measured_peak_bandwidth", "warm_up_kernels"]
