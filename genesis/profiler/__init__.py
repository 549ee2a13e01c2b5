"""torch.profiler's API over Genesis: host time per op, device time per kernel, per step.

    with genesis.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                                  record_shapes=True) as prof:
        with genesis.profiler.record_function("model_inference"):
            model(x)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))

Ops are named as PyTorch's profiler names them where Genesis's kernels match an aten op
("aten::add", "aten::matmul", "aten::_to_copy" for casts), and "genesis::name" for Genesis's own
fused kernels. genesis.cuda.profiler (GPUProfiler, enable_profiling) stays the kernel-level tool.
"""

from .events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler"]
