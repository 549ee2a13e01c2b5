"""torch.autograd.profiler: the profiler older scripts and tutorials use,

    with genesis.autograd.profiler.profile(use_cuda=True, record_shapes=True) as prof:
        with genesis.autograd.profiler.record_function("forward"):
            model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))

over genesis.profiler's recording (the same events, names and tables): `profile` takes the
legacy arguments (enabled, use_cuda or use_device, use_cpu) and holds the events in
`function_events` once its block ends. `emit_itt` and `emit_nvtx` take PyTorch's arguments and
checks; Genesis annotates no ITT or NVTX ranges, so the profile to read is genesis.profiler's.
"""

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function
from ..profiler import ProfilerActivity
from ..profiler import profile as _Profiler
from .._warnings import warn_once

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_itt", "emit_nvtx", "profile",
           "record_function"]


class profile:
    """Records the ops (and with `use_cuda`, or `use_device="cuda"`, the kernels they launch)
    run inside its block when `enabled`; then `function_events`, `key_averages()`, `table()`,
    `total_average()` and `export_chrome_trace()` report them. Entering a disabled profiler
    gives None, as PyTorch's does."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.function_events = None
        activities = {ProfilerActivity.CPU} if use_cpu else set()
        if use_cuda or use_device == "cuda":
            activities.add(ProfilerActivity.CUDA)
        self._profiler = _Profiler(activities=activities, record_shapes=record_shapes,
                                   profile_memory=profile_memory, with_stack=with_stack,
                                   with_flops=with_flops, with_modules=with_modules,
                                   acc_events=acc_events) if enabled else None

    def __enter__(self):
        if not self.enabled:
            return None
        self._profiler.__enter__()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._profiler.__exit__(*exc)
            self.function_events = self._profiler.events()
        return False

    def _events(self):
        """The recorded events; none before the block has run."""
        return EventList() if self.function_events is None else self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._events().key_averages(group_by_input_shape, group_by_stack_n,
                                           group_by_overload_name)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        return self._events().table(sort_by, row_limit, max_src_column_width,
                                    max_name_column_width, max_shapes_column_width, header,
                                    top_level_events_only)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self):
        return self._events().self_cpu_time_total

    def export_chrome_trace(self, path):
        return self._events().export_chrome_trace(path)

    def __str__(self):
        return self.table()

    __repr__ = __str__


class emit_itt:
    """A block whose ops PyTorch annotates as Intel ITT ranges for VTune. Genesis emits none:
    the block runs as is, after a warning (once a process) that says so; like PyTorch's, an
    instance enters once (`enabled=False`: no-op)."""

    _KIND = "ITT"

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError(f"{self._KIND} annotation context manager is not reentrant")
        self.entered = True
        self._start()
        warn_once(type(self).__name__,
                  f"{type(self).__name__}: Genesis emits no {self._KIND} ranges; time ops and "
                  "kernels with genesis.profiler.profile instead")
        return self

    def __exit__(self, *exc):
        return False

    def _start(self):
        """What entering does before the warning."""


class emit_nvtx(emit_itt):
    """A block whose ops PyTorch annotates as NVTX ranges for Nsight. Entering it waits for
    the GPU (and so fails without CUDA, as PyTorch's does), then warns as emit_itt does."""

    _KIND = "NVTX"

    def _start(self):
        from .. import cuda
        cuda.synchronize()
