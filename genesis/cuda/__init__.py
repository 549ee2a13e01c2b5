"""`genesis.cuda`: the user-facing face of the CUDA backend, named as `torch.cuda`.

Nothing here touches the driver until a function is called; without a GPU or without the
`cuda` extra, `is_available()` is False and everything else raises a clear error.
"""

from .._warnings import deprecated_alias
from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import driver as _driver
from ..backends.cuda.runtime import sync_debug as _sync_debug
from ..backends.cuda.runtime.driver import AcceleratorError, CudaError, CudaUnavailable
from ..backends.cuda.autotune import AutoTuner
from ..backends.cuda.nvrtc import NVRTCError, compile_kernel
from ..backends.cuda.runtime.memory import OutOfMemoryError
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all,
                     seed, seed_all, set_rng_state, set_rng_state_all)
from .. import device as _device_types
from ..dispatch import GPU_OPS_REGISTRY, kernel as _kernel, list_gpu_ops
from ..tensor import Tensor as _Tensor
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from .graphed_callables import make_graphed_callables
from .profiler import GPUProfiler, enable_profiling, is_profiling_enabled
from .streams import ExternalStream, StreamContext, get_stream_from_external, set_stream
from .memory import (MemPool, caching_allocator_alloc, caching_allocator_delete,
                     caching_allocator_disabled, caching_allocator_enable, get_allocator_backend,
                     host_memory_stats, host_memory_stats_as_nested_dict,
                     memory_stats_as_nested_dict, reset_accumulated_host_memory_stats,
                     reset_peak_host_memory_stats, use_mem_pool)
from .nvml import (clock_rate, device_memory_used, list_gpu_processes, memory_usage, power_draw,
                   temperature, utilization)
from .cudart import check_error, cudaStatus, cudart
from ..utils.benchmark import analyze_memory_bandwidth, measured_peak_bandwidth, warm_up_kernels


has_half = True  # float16 tensors and kernels
has_magma = False  # linear algebra runs on cuSOLVER (or the host), never MAGMA


class DeferredCudaCallError(Exception):
    """PyTorch's error for a CUDA call it queued until initialisation and that then failed.
    Genesis queues none (seeding before initialisation needs no driver), so it never raises it;
    the name is here for scripts that catch it."""


def is_available():
    """Whether CUDA can be used: the `cuda` extra is installed, a driver loads and a device is
    visible. Never raises; touches no device.

    Returns:
        bool
    """
    return _driver.is_available()


def _runtime():
    """The runtime modules, after checking that CUDA can be used (clear error otherwise)."""
    from ..backends.cuda.runtime import device, stream
    _driver.load()
    return device, stream


def device_count():
    """The number of visible CUDA devices (0 without a driver or the `cuda` extra).

    Returns:
        int
    """
    try:
        return _driver.device_count()
    except CudaUnavailable:
        return 0


def init():
    """Initialise CUDA and the current device's context now instead of on first use.

    Note:
        Raises CudaUnavailable, naming what is missing, where `is_available()` is False.
    """
    _runtime()[0].get_context()


def is_initialized():
    """Whether any device's context has been created (by `init()` or a first CUDA op)."""
    from ..backends.cuda.runtime import device
    return bool(device.initialized_contexts())


def current_device():
    """The index of this thread's current device (0 until `set_device` says otherwise).

    Returns:
        int
    """
    if not _devices._contexts:
        _runtime()
    return _devices.current_device()


def _first_current_device():
    """`device("cuda")`'s index on first use: checks that CUDA can be used, then hands later
    calls straight to the runtime's thread-local current device."""
    index = current_device()
    _device_types.set_current_cuda_device(_devices.current_device)
    return index


_device_types.set_current_cuda_device(_first_current_device)


def set_device(device):
    """Make `device` this thread's current device.

    Args:
        device (int, str or genesis.device): the device; "cuda" without an index is a no-op.
    """
    _runtime()[0].set_device(_index(device))


_index = _devices.device_index  # a device argument as an index (also DataParallel's reader)


class device:
    """Context manager that changes the current device: `with genesis.cuda.device(1): ...`."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)

    def __enter__(self):
        self.prev_idx = current_device() if self.idx >= 0 else -1
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.prev_idx)
        return False


def is_bf16_supported(including_emulation=True):
    """Whether the current device computes in bfloat16: compute capability 8.0 or newer (every
    GPU Genesis's kernels target). False where CUDA is not available.

    Args:
        including_emulation (bool): accepted for PyTorch's signature; Genesis has no emulated
            bfloat16 path, so older devices answer False either way.
    """
    return is_available() and get_device_capability()[0] >= 8


def is_tf32_supported():
    """Whether the current device has TF32 tensor cores (compute capability 8.0 or newer)."""
    return is_bf16_supported(including_emulation=False)


class device_of(device):
    """Context manager that makes the device of tensor `obj` current; a no-op for CPU tensors."""

    def __init__(self, obj):
        super().__init__(obj.device if obj.device.type == "cuda" else None)


def get_device_properties(device=None):
    """The device's properties, read once per process, with PyTorch's field names: name,
    major, minor, total_memory, multi_processor_count, L2_cache_size, warp_size...

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _runtime()[0].get_context(_index(device)).properties


def get_device_name(device=None):
    """The device's name, e.g. "NVIDIA H100 80GB HBM3".

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return get_device_properties(device).name


def get_device_capability(device=None):
    """The device's compute capability as (major, minor), e.g. (9, 0).

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return get_device_properties(device).capability


def synchronize(device=None):
    """Wait until all work queued on the device, on every stream, has finished.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    _runtime()[1].synchronize(_index(device))


def mem_get_info(device=None):
    """The device's free and total memory as the driver reports them.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.

    Returns:
        (free, total) bytes. Free memory excludes what the caching allocator holds.
    """
    dev, _ = _runtime()
    dev.activate(_index(device))
    return _driver.mem_get_info()


def Stream(device=None, priority=0, **kwargs):
    """A new stream on the device, non-blocking with respect to the default stream.

    Args:
        device (optional): the device; the current one when None.
        priority (int): lower numbers run first, as in PyTorch (0 is the default priority).
    """
    return _runtime()[1].Stream(device, priority, **kwargs)


def Event(enable_timing=False, blocking=False, interprocess=False):
    """A CUDA event to record on a stream, wait on, query or synchronize.

    Args:
        enable_timing (bool): whether `elapsed_time` can measure between two such events.
        blocking (bool): whether `synchronize()` blocks the thread instead of spinning.
        interprocess (bool): accepted for PyTorch's signature; events are not shared.
    """
    return _runtime()[1].Event(enable_timing, blocking, interprocess)


def current_stream(device=None):
    """This thread's current stream on the device (its default stream unless one was set).

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _runtime()[1].current_stream(device)


def default_stream(device=None):
    """The device's default (legacy) stream, which waits for other blocking streams.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _runtime()[1].default_stream(device)


def stream(stream):
    """`with genesis.cuda.stream(s):` runs the block's work on `s` (a StreamContext; None: a
    no-op)."""
    return StreamContext(stream)


def can_device_access_peer(device, peer_device):
    """Whether `device` can read and write `peer_device`'s memory directly (NVLink or PCIe
    peer-to-peer); AssertionError for an index that names no device, as PyTorch's."""
    _runtime()
    count = device_count()
    index, peer = _index(device), _index(peer_device)
    if not 0 <= index < count:
        raise AssertionError("Invalid device id")
    if not 0 <= peer < count:
        raise AssertionError("Invalid peer device id")
    return _driver.can_access_peer(index, peer)


def _library_handle(name, lib):
    """The current device's handle of library `lib` (nvmath-python's bindings; made on first
    request, shared with Genesis's own calls), bound to the current stream."""
    handle = _runtime()[0].get_context().handle(name, lib.create, lib.destroy)
    lib.set_stream(handle, current_stream().cuda_stream)
    return handle


def current_blas_handle():
    """The current device's cuBLAS handle (a cublasHandle_t as an int) on the current stream,
    for libraries that call cuBLAS themselves (Genesis's matmuls use cuBLASLt and Triton)."""
    from nvmath.bindings import cublas
    return _library_handle("cublas", cublas)


def current_solver_handle():
    """The current device's cuSOLVER dense handle (a cusolverDnHandle_t as an int) on the
    current stream: the one Genesis's linear algebra uses."""
    from nvmath.bindings import cusolverDn
    return _library_handle("cusolverDn", cusolverDn)


def get_arch_list():
    """The architectures Genesis's kernels are built for, "sm_90" and the like: Triton
    compiles them on first use for each visible device, so these are the devices'; [] without
    CUDA."""
    if not is_available():
        return []
    capabilities = {(_driver.device_attribute(i, "COMPUTE_CAPABILITY_MAJOR"),
                     _driver.device_attribute(i, "COMPUTE_CAPABILITY_MINOR"))
                    for i in range(device_count())}
    return [f"sm_{major}{minor}" for major, minor in sorted(capabilities)]


def get_gencode_flags():
    """`get_arch_list()` as NVCC's -gencode flags ("" without CUDA)."""
    return " ".join(f"-gencode compute=compute_{arch},code={kind}_{arch}"
                    for kind, arch in (name.split("_") for name in get_arch_list()))


def set_sync_debug_mode(debug_mode):
    """Whether implicit host-device synchronizations (.item(), .cpu(), a blocking copy to the
    device, nonzero, Stream.synchronize()) pass ("default" or 0), warn ("warn" or 1) or raise
    ("error" or 2) with PyTorch's message, "called a synchronizing CUDA operation"."""
    _sync_debug.set_mode(debug_mode)


def get_sync_debug_mode():
    """The synchronization debug mode as an int: 0 default, 1 warn, 2 error."""
    return _sync_debug.mode


def ipc_collect():
    """PyTorch frees memory other processes received through CUDA IPC here; Genesis shares no
    device memory between processes (no CUDA IPC), so there is none to collect."""


def _allocator(device=None):
    dev, _ = _runtime()
    return dev.get_context(_index(device)).allocator


def memory_allocated(device=None):
    """The bytes of device memory held by live tensors (as requested, before rounding).

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.

    Note:
        Less than `nvidia-smi` shows: the caching allocator keeps freed memory reserved for
        reuse (`memory_reserved`), and the CUDA context itself takes memory.
    """
    return _allocator(device).memory_allocated()


def memory_reserved(device=None):
    """The bytes of device memory the caching allocator holds from the driver: live blocks plus
    cached free ones.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.

    Note:
        `empty_cache()` gives the cached part back to the driver.
    """
    return _allocator(device).memory_reserved()


def max_memory_allocated(device=None):
    """The peak of `memory_allocated` since the start or the last `reset_peak_memory_stats`.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _allocator(device).max_memory_allocated()


def max_memory_reserved(device=None):
    """The peak of `memory_reserved` since the start or the last `reset_peak_memory_stats`.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _allocator(device).max_memory_reserved()


def reset_peak_memory_stats(device=None):
    """Reset the peaks (`max_memory_allocated`, `max_memory_reserved`, the ".peak" statistics) to
    the current values.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    _allocator(device).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None):
    """Reset the counting statistics (".allocated", ".freed", allocation and retry counts) to 0.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    _allocator(device).reset_accumulated_memory_stats()


def memory_stats(device=None):
    """The caching allocator's statistics.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.

    Returns:
        A dict with torch.cuda.memory_stats's keys ("allocated_bytes.all.current",
        "reserved_bytes.large_pool.peak", "num_alloc_retries"...) and summary keys: allocated,
        cached, reserved, free, total, peak_allocated, peak_reserved, cache_hits, cache_misses,
        cache_hit_rate, fragmentation, efficiency_score and the segment and block counts.

    Note:
        `configure_memory_manager({"enable_stats": False})` (or GENESIS_CUDA_STATS_ENABLED=0)
        stops the counting statistics for a little speed; the byte totals stay exact.
    """
    return _allocator(device).memory_stats()


def memory_summary(device=None, abbreviated=False):
    """A readable table of `memory_stats()`, for printing.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
        abbreviated (bool): accepted for PyTorch's signature; the table is always the short one.
    """
    return _allocator(device).memory_summary()


def memory_snapshot(device=None):
    """Every segment the allocator holds and the blocks in it (address, size, state, stream), as
    a list of dicts in torch.cuda.memory_snapshot's form.

    Args:
        device (int, str or genesis.device, optional): the device; the current one
            (`current_device()`) when None.
    """
    return _allocator(device).memory_snapshot()


def empty_cache():
    """Give every entirely free segment back to the driver, on every initialised device.

    Note:
        Live tensors keep their memory, so this lowers `memory_reserved` but not
        `memory_allocated`; it waits for pending frees on other streams first.
    """
    from ..backends.cuda.runtime import device as dev
    for ctx in dev.initialized_contexts():
        ctx.allocator.empty_cache()


def set_memory_fraction(fraction, device=None):
    """Cap the memory this process may reserve on the device.

    Args:
        fraction (float): in (0, 1], of the device's total memory. An allocation that would
            reserve beyond it frees the cache and retries, then raises OutOfMemoryError.
        device (optional): the device; the current one when None.
    """
    _allocator(device).set_memory_fraction(fraction)


def set_per_process_memory_fraction(fraction, device=None):
    """PyTorch's name for `set_memory_fraction`."""
    set_memory_fraction(fraction, device)


def get_per_process_memory_fraction(device=None):
    """The fraction of the device's total memory this process may reserve (1.0 uncapped)."""
    return _allocator(device).config.memory_fraction


def _renamed(old, new):
    return deprecated_alias(new, old, f"`torch.cuda.{old}` has been renamed to "
                                      f"`torch.cuda.{new.__name__}`")


def _resets_every_peak(old):
    return deprecated_alias(reset_peak_memory_stats, old,
                            f"torch.cuda.{old} now calls torch.cuda.reset_peak_memory_stats, "
                            "which resets /all/ peak memory stats.")


memory_cached = _renamed("memory_cached", memory_reserved)
max_memory_cached = _renamed("max_memory_cached", max_memory_reserved)
reset_max_memory_allocated = _resets_every_peak("reset_max_memory_allocated")
reset_max_memory_cached = _resets_every_peak("reset_max_memory_cached")


def configure_memory_manager(options, device=None):
    """Change the caching allocator's settings at run time.

    Args:
        options (dict): any of the GENESIS_CUDA_* settings by name, e.g.
            {"cache_size": "2GB", "segment_size": "20MB", "enable_stats": False}, and
            "warmup_sizes": [(size, count), ...] to reserve blocks at once (`warmup_cache`).
        device (optional): the device; the current one when None.
    """
    _allocator(device).configure(options)


def warmup_cache(sizes, counts, device=None):
    """Reserve blocks ahead of use, so a steady state (a training step) finds them cached.

    Args:
        sizes (list of int): block sizes in bytes.
        counts (list of int): how many blocks of each size.
        device (optional): the device; the current one when None.

    Note:
        Small blocks (up to 1 MiB) go to the stream-local cache, large ones to the global pool,
        carved from as few segments as fit them. A no-op with GENESIS_CUDA_WARMUP_ENABLED=0.
    """
    _allocator(device).warmup_cache(sizes, counts)


def allocate_batch(sizes, device=None):
    """Raw device blocks for many sizes at once, carved from one contiguous region.

    Args:
        sizes (list of int): sizes in bytes (0 gives an empty block).
        device (optional): the device; the current one when None.

    Returns:
        A list of blocks (with `.ptr` and `.size`), one per size; give each back with
        `free_block`.
    """
    return _allocator(device).allocate_batch(sizes)


def allocate_async(size, device=None):
    """Allocate a raw device block on the allocator's worker threads.

    Args:
        size (int): bytes.
        device (optional): the device; the current one when None.

    Returns:
        A concurrent.futures.Future whose result is the block (give it back with `free_block`).
    """
    return _allocator(device).allocate_async(size)


def free_block(block, device=None):
    """Give back a block from `allocate_batch` or `allocate_async`.

    Note:
        The memory is reusable on its stream at once, on other streams once their recorded
        work has completed. Freeing a block twice raises RuntimeError.
    """
    _allocator(device).free(block)


def set_memory_callback(callback, threshold=None, device=None):
    """Be told of the allocator's notable events.

    Args:
        callback: called as `callback(event)` with a MemoryEvent (kind: "oom", "alloc_retry",
            "segment_alloc", "segment_free" or "large_alloc"; nbytes, stream, allocated and
            reserved bytes after the event, device); None removes it.
        threshold (int or str, optional): allocations of at least this many bytes ("1GB") are
            reported as "large_alloc"; none when None.
        device (optional): the device; the current one when None.

    Note:
        The callback runs in the allocating thread after the allocator's lock is released, so
        it may read statistics.
    """
    _allocator(device).set_memory_callback(callback, threshold)


def enable_memory_debugging(enabled=True, device=None):
    """Record a short stack trace with every allocation from now on, for
    `dump_allocation_trace` (costs host time; GENESIS_CUDA_MEMORY_DEBUG=1 sets it at start)."""
    _allocator(device).enable_memory_debugging(enabled)


def dump_allocation_trace(file=None, device=None):
    """Write the live allocations, largest first, with the stack that made each (recorded while
    memory debugging is on), to `file` (default: stdout)."""
    return _allocator(device).dump_allocation_trace(file)


def dispatch_gpu_op(op_name, *args, **kwargs):
    """Call the CUDA kernel of `op_name` directly; Tensor arguments are passed as their arrays
    and array results come back as Tensors (arrays in, arrays out otherwise)."""
    tensors = [a for a in args if isinstance(a, _Tensor)]
    if not tensors:
        return _kernel(op_name, "cuda")(*args, **kwargs)
    device = tensors[0].device
    out = _kernel(op_name, "cuda")(*(a._data if isinstance(a, _Tensor) else a for a in args),
                                   **kwargs)
    return _wrap_arrays(out, device)


def _wrap_arrays(out, device):
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap_arrays(o, device) for o in out)
    return _Tensor._make(out, device) if hasattr(out, "strides") else out


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
           "warm_up_kernels", "AutoTuner", "CUDAGraph", "graph", "graph_pool_handle",
           "is_current_stream_capturing", "make_graphed_callables", "compile_kernel",
           "NVRTCError", "is_bf16_supported", "is_tf32_supported", "device_of",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction", "memory_cached",
           "max_memory_cached", "reset_max_memory_allocated", "reset_max_memory_cached",
           "AcceleratorError", "DeferredCudaCallError", "has_half", "has_magma", "StreamContext",
           "ExternalStream", "get_stream_from_external", "MemPool", "use_mem_pool",
           "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_enable",
           "caching_allocator_disabled", "get_allocator_backend", "memory_stats_as_nested_dict",
           "host_memory_stats", "host_memory_stats_as_nested_dict",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats",
           "device_memory_used", "memory_usage", "utilization", "temperature", "power_draw",
           "clock_rate", "list_gpu_processes", "can_device_access_peer", "current_blas_handle",
           "current_solver_handle", "get_arch_list", "get_gencode_flags", "set_sync_debug_mode",
           "get_sync_debug_mode", "ipc_collect", "cudart", "cudaStatus", "check_error"]


_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")


def __getattr__(name):
    """The legacy typed constructors (`genesis.cuda.FloatTensor`, ...), looked up on first use,
    and `default_generators`: the default generator of each visible device."""
    if name in _LEGACY_TYPES:
        from ..ops.legacy import CUDA_LEGACY_TYPES
        return CUDA_LEGACY_TYPES[name]
    if name == "default_generators":
        from .random import default_generator
        return tuple(default_generator(i) for i in range(device_count()))
    raise AttributeError(f"module 'genesis.cuda' has no attribute '{name}'")
