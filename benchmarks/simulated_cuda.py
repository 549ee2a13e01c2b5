"""A CUDA device simulated on the host, to measure Genesis's host path on "cuda" without a GPU.

`install()` swaps the driver layer (genesis/backends/cuda/runtime/driver.py) for stand-ins: one
H200-like device, the caching allocator over the simulated driver of tests/cuda_sim.py, copies,
fills and synchronization as no-ops; and Triton compilation for a kernel whose launcher does
nothing. Everything Python does between a user's call and the launch runs as on a GPU: dispatch,
autograd, tensor creation and teardown, the allocator, launch cache lookups, and the BoundKernel's
argument assembly. What is not counted: Triton's C launcher and the driver's own time
(cuLaunchKernel, a few microseconds on a real host). Values are never computed: results hold
whatever the simulated memory holds, so use it for timing and profiling only.

    import simulated_cuda; simulated_cuda.install()   # before the first use of "cuda"
"""

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
              target_=None):
    """What launch.compile_kernel returns, minus the compilation: a no-op launcher."""
    return types.SimpleNamespace(name=getattr(fn, "__name__", "kernel"), run=_launcher,
                                 function=0, packed_metadata=(), _init_handles=lambda: None)


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
    sim = _sim_driver_class()
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
        "AllocatorDriver": lambda context: sim(total=total_memory, auto_complete=True),
    }
    for name, value in stand_ins.items():
        setattr(driver, name, value)
    launch.compile_kernel = _compiled
    triton_driver.install = lambda: None
    _installed = True
