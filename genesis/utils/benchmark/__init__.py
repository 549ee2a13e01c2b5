"""genesis.utils.benchmark: `Timer` and `Measurement` as torch.utils.benchmark's (timer.py),
`Compare` to print many Measurements as tables (compare.py), and the CUDA performance tools
genesis.cuda re-exports: memory-bandwidth analysis and kernel warm-up (bandwidth.py)."""

from .bandwidth import analyze_memory_bandwidth, measured_peak_bandwidth, warm_up_kernels
from .compare import Colorize, Compare, ordered_unique, trim_sigfig, unit_to_english
from .timer import Measurement, TaskSpec, Timer, select_unit, timer

__all__ = ["Colorize", "Compare", "Measurement", "TaskSpec", "Timer", "ordered_unique",
           "select_unit", "timer", "trim_sigfig", "unit_to_english",
           "analyze_memory_bandwidth", "measured_peak_bandwidth", "warm_up_kernels"]
