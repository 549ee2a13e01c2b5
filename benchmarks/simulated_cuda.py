"""A CUDA device simulated on the host, to measure Genesis's host path on "cuda" without a GPU.

`install()` swaps the driver layer (genesis/backends/cuda/runtime/driver.py) for stand-ins: one
H200-like device, the caching allocator over the simulated driver of tests/cuda_sim.py, copies,
fills and synchronization as no-ops; and Triton compilation for a kernel whose launcher does
nothing. Streams can be captured into CUDA graphs (recorded by the simulated driver, which
refuses what the real one refuses during capture); a replay runs nothing. Everything Python does
between a user's call and the launch runs as on a GPU: dispatch, autograd, tensor creation and
teardown, the allocator, launch cache lookups, and the BoundKernel's
argument assembly. What is not counted: Triton's C launcher and the driver's own time
(cuLaunchKernel, a few microseconds on a real host). Values are never computed: results hold
whatever the simulated memory holds, so use it for timing and profiling only.

    import simulated_cuda; simulated_cuda.install()   # before the first use of "cuda"
"""

import itertools
import pathlib
import sys
import types

GiB = 1 << 30
_PROPERTIES = {"COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
               "MULTIPROCESSOR_COUNT": 132, "L2_CACHE_SIZE": 50 << 20,
               "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
               "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448, "WARP_SIZE": 32}
_installed = False


def _launcher(*args):
    """Stands in for Triton's C launcher: takes the launch arguments, does nothing."""


def _compiled(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3,
              target_=None, pdl=False):
    """What launch.compile_kernel returns, minus the compilation: a no-op launcher."""
    return types.SimpleNamespace(name=getattr(fn, "__name__", "kernel"), run=_launcher,
                                 function=0, packed_metadata=(), _init_handles=lambda: None)


def _refused_during_capture(sim, name, allowed=lambda *args: False):
    """A no-op stand-in for a driver call that fails while any stream is captured, as the real
    one does (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED in global capture mode), unless `allowed`
    says the call's arguments make it capturable."""
    def call(*args):
        if sim.captures and not allowed(*args):
            raise driver_error(f"{name}: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (simulated)")
    return call


def _host_buffer(registry, nbytes):
    """The address of `nbytes` of host memory kept in `registry`."""
    import numpy as np
    buffer = np.empty(nbytes, np.uint8)
    registry[buffer.ctypes.data] = buffer
    return buffer.ctypes.data


def driver_error(message):
    from genesis.backends.cuda.runtime.driver import CudaError
    return CudaError(message)


def _sim_driver_class():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
    from cuda_sim import SimDriver
    return SimDriver


def install(total_memory=141 * GiB):
    """Make "cuda" a simulated device in this process (idempotent); call before using it."""
    global _installed
    if _installed:
        return
    from genesis.backends.cuda import launch, triton_driver
    from genesis.backends.cuda.runtime import driver
    sim = _sim_driver_class()(total=total_memory, auto_complete=True)
    streams = itertools.count(0x1000, 0x10)
    for name, value in vars(driver).items():
        if isinstance(value, types.FunctionType) and value.__module__ == driver.__name__:
            setattr(driver, name, lambda *args, **kwargs: 0)
    stand_ins = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "device_name": lambda index: "Simulated H200 (no kernels run)",
        "device_attribute": lambda index, name: _PROPERTIES[name],
        "total_memory": lambda index: total_memory,
        "mem_get_info": lambda: (total_memory, total_memory),
        "stream_query": lambda stream: True,
        "event_query": lambda event: True,
        "event_elapsed_ms": lambda start, end: 0.0,
        "stream_priority_range": lambda: (0, -5),
        "AllocatorDriver": lambda context: sim,
        "stream_create": lambda non_blocking=True, priority=0: next(streams),
        "stream_begin_capture": lambda stream, mode="global": sim.begin_capture(stream),
        "stream_end_capture": lambda stream: sim.end_capture(stream) or 1,
        "stream_capture_info": sim.stream_capture_info,
        "graph_instantiate": lambda graph: 1,
    }
    for name in ("stream_synchronize", "context_synchronize", "event_synchronize", "memcpy_dtoh"):
        stand_ins[name] = _refused_during_capture(sim, name)
    pinned = {}  # address -> the host memory standing in for a pinned buffer
    stand_ins["host_alloc_pinned"] = lambda nbytes: _host_buffer(pinned, nbytes)
    stand_ins["host_free_pinned"] = lambda ptr: pinned.pop(ptr, None)
    stand_ins["memcpy_htod"] = _refused_during_capture(
        sim, "memcpy_htod from pageable memory", allowed=lambda dst, src, *rest: src in pinned)
    for name, value in stand_ins.items():
        setattr(driver, name, value)
    launch.compile_kernel = _compiled
    triton_driver.install = lambda: None
    _installed = True
