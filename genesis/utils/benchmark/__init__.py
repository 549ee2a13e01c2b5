"""genesis.utils.benchmark: `Timer` and `Measurement` as torch.utils.benchmark's (timer.py), and
the CUDA performance tools genesis.cuda re-exports: memory-bandwidth analysis and kernel warm-up
(bandwidth.py)."""

from .bandwidth import analyze_memory_bandwidth, measured_peak_bandwidth, warm_up_kernels
from .timer import Measurement, TaskSpec, Timer, select_unit, timer

__all__ = ["Measurement", "TaskSpec", "Timer", "select_unit", "timer",
           "analyze_memory_bandwidth", "measured_peak_bandwidth", "warm_up_kernels"]
