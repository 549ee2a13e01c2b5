"""`genesis.cuda`: the user-facing face of the CUDA backend, named as `torch.cuda`.

Nothing here touches the driver until a function is called; without a GPU or without the
`cuda` extra, `is_available()` is False and everything else raises a clear error.
"""

import contextlib

from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import driver as _driver
from ..backends.cuda.runtime.driver import CudaError, CudaUnavailable
from ..backends.cuda.autotune import AutoTuner
from ..backends.cuda.runtime.memory import OutOfMemoryError
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all,
                     seed, seed_all, set_rng_state, set_rng_state_all)
from ..dispatch import GPU_OPS_REGISTRY, dispatch_gpu_op, list_gpu_ops
from .profiler import GPUProfiler, enable_profiling, is_profiling_enabled
from .tools import analyze_memory_bandwidth, measured_peak_bandwidth, warm_up_kernels


def is_available():
    """True when the CUDA extra is installed, a driver is present and a device is visible."""
    return _driver.is_available()


def _runtime():
    """The runtime modules, after checking that CUDA can be used (clear error otherwise)."""
    from ..backends.cuda.runtime import device, stream
    _driver.load()
    return device, stream


def device_count():
    try:
        return _driver.device_count()
    except CudaUnavailable:
        return 0


def init():
    _runtime()[0].get_context()


def is_initialized():
    from ..backends.cuda.runtime import device
    return bool(device.initialized_contexts())


def current_device():
    if not _devices._contexts:
        _runtime()
    return _devices.current_device()


def set_device(device):
    _runtime()[0].set_device(_index(device))


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from ..device import as_device
    d = as_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


class device:
    """Context manager that changes the current device: `with genesis.cuda.device(1): ...`."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)

    def __enter__(self):
        self.prev_idx = current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.prev_idx)
        return False


def get_device_properties(device=None):
    return _runtime()[0].get_context(_index(device)).properties


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    return get_device_properties(device).capability


def synchronize(device=None):
    """Wait for all work on the device to finish."""
    dev, _ = _runtime()
    dev.activate(_index(device))
    _driver.context_synchronize()


def mem_get_info(device=None):
    """(free, total) bytes on the device, as the driver reports them."""
    dev, _ = _runtime()
    dev.activate(_index(device))
    return _driver.mem_get_info()


def Stream(device=None, priority=0, **kwargs):
    """A new non-blocking stream (`priority`: lower numbers run first, as in PyTorch)."""
    return _runtime()[1].Stream(device, priority, **kwargs)


def Event(enable_timing=False, blocking=False, interprocess=False):
    return _runtime()[1].Event(enable_timing, blocking, interprocess)


def current_stream(device=None):
    return _runtime()[1].current_stream(device)


def default_stream(device=None):
    return _runtime()[1].default_stream(device)


def set_stream(stream):
    _runtime()[1].set_stream(stream)


def stream(stream):
    """`with genesis.cuda.stream(s):` runs the block's work on `s`."""
    if stream is None:
        return contextlib.nullcontext()
    return _runtime()[1].stream_context(stream)


def _allocator(device=None):
    dev, _ = _runtime()
    return dev.get_context(_index(device)).allocator


def memory_allocated(device=None):
    """Bytes held by live tensors on the device."""
    return _allocator(device).memory_allocated()


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver (live plus cached)."""
    return _allocator(device).memory_reserved()


def max_memory_allocated(device=None):
    return _allocator(device).max_memory_allocated()


def max_memory_reserved(device=None):
    return _allocator(device).max_memory_reserved()


def reset_peak_memory_stats(device=None):
    _allocator(device).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None):
    _allocator(device).reset_accumulated_memory_stats()


def memory_stats(device=None):
    """The allocator's statistics: PyTorch's keys plus the seed's summary keys."""
    return _allocator(device).memory_stats()


def memory_summary(device=None, abbreviated=False):
    """A readable table of the allocator's statistics."""
    return _allocator(device).memory_summary()


def memory_snapshot(device=None):
    return _allocator(device).memory_snapshot()


def empty_cache():
    """Give every unused cached segment back to the driver, on every initialised device."""
    from ..backends.cuda.runtime import device as dev
    for ctx in dev.initialized_contexts():
        ctx.allocator.empty_cache()


def set_memory_fraction(fraction, device=None):
    """Cap this process's reserved memory at `fraction` of the device's total (a hard cap)."""
    _allocator(device).set_memory_fraction(fraction)


def configure_memory_manager(options, device=None):
    """Change allocator settings at run time, e.g. {"cache_size": "2GB", "enable_stats": False}."""
    _allocator(device).configure(options)


def warmup_cache(sizes, counts, device=None):
    """Pre-allocate `counts[i]` blocks of `sizes[i]` bytes into the cache."""
    _allocator(device).warmup_cache(sizes, counts)


def allocate_batch(sizes, device=None):
    """Raw blocks of the given sizes carved from one segment (free them with `free_block`)."""
    return _allocator(device).allocate_batch(sizes)


def allocate_async(size, device=None):
    """A concurrent.futures.Future resolving to a raw block of `size` bytes."""
    return _allocator(device).allocate_async(size)


def free_block(block, device=None):
    _allocator(device).free(block)


def set_memory_callback(callback, threshold=None, device=None):
    """Call `callback(event)` on allocator events (see the allocator's documentation)."""
    _allocator(device).set_memory_callback(callback, threshold)


def enable_memory_debugging(enabled=True, device=None):
    """Record a stack trace with every allocation, for `dump_allocation_trace`."""
    _allocator(device).enable_memory_debugging(enabled)


def dump_allocation_trace(file=None, device=None):
    """Write the live allocations and where they were made (debug mode) to `file` or stdout."""
    return _allocator(device).dump_allocation_trace(file)


__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
           "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
           "mem_get_info", "init", "is_initialized", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
           "set_rng_state_all",
           "CudaError", "OutOfMemoryError", "memory_allocated", "memory_reserved",
           "max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_accumulated_memory_stats", "memory_stats", "memory_summary", "memory_snapshot",
           "empty_cache", "set_memory_fraction", "configure_memory_manager", "warmup_cache",
           "allocate_batch", "allocate_async", "free_block", "set_memory_callback",
           "enable_memory_debugging", "dump_allocation_trace", "GPU_OPS_REGISTRY",
           "dispatch_gpu_op", "list_gpu_ops", "GPUProfiler", "enable_profiling",
           "is_profiling_enabled", "analyze_memory_bandwidth", "measured_peak_bandwidth",
           "warm_up_kernels", "AutoTuner"]


_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")


def __getattr__(name):
    """The legacy typed constructors (`genesis.cuda.FloatTensor`, ...), looked up on first use."""
    if name in _LEGACY_TYPES:
        from ..ops.legacy import CUDA_LEGACY_TYPES
        return CUDA_LEGACY_TYPES[name]
    raise AttributeError(f"module 'genesis.cuda' has no attribute '{name}'")
