"""Per-device execution contexts, created lazily on first use of each device.

A `DeviceContext` holds the device's primary context, its properties (read once), its caching
allocator, a grow-only workspace, and library handles created on demand and released in reverse
order at exit. The current device is per thread, as in PyTorch.
"""

import atexit
import threading
from dataclasses import dataclass

from ....device import as_device
from . import driver

_contexts = {}
_contexts_lock = threading.Lock()


class _ThreadState(threading.local):
    """This thread's current and active device (class defaults: reading them never misses,
    and a missed thread-local attribute costs half a microsecond)."""

    device = 0
    active = None


_local = _ThreadState()
_device_set = False  # whether any thread has called set_device: until then every thread's is 0


@dataclass(frozen=True)
class DeviceProperties:
    """What `genesis.cuda.get_device_properties` returns (PyTorch's field names)."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    L2_cache_size: int
    max_threads_per_multi_processor: int
    max_shared_memory_per_block_optin: int
    warp_size: int

    @property
    def capability(self):
        return (self.major, self.minor)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")


def _read_properties(index):
    attr = lambda name: driver.device_attribute(index, name)  # noqa: E731
    return DeviceProperties(
        name=driver.device_name(index),
        major=attr("COMPUTE_CAPABILITY_MAJOR"),
        minor=attr("COMPUTE_CAPABILITY_MINOR"),
        multi_processor_count=attr("MULTIPROCESSOR_COUNT"),
        total_memory=driver.total_memory(index),
        L2_cache_size=attr("L2_CACHE_SIZE"),
        max_threads_per_multi_processor=attr("MAX_THREADS_PER_MULTIPROCESSOR"),
        max_shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        warp_size=attr("WARP_SIZE"),
    )


class DeviceContext:
    """Everything Genesis keeps for one GPU."""

    def __init__(self, index):
        from .memory import CachingAllocator
        self.index = index
        self.context = driver.retain_primary_context(index)
        self.properties = _read_properties(index)
        self.default_stream = 0
        self.allocator = CachingAllocator(driver.AllocatorDriver(self.context), device=index)
        self._workspace = None
        self._handles = {}

    def make_current(self):
        driver.set_current_context(self.context)

    def workspace(self, nbytes, stream=0):
        """A scratch buffer of at least `nbytes`, grown (never shrunk) on demand; a graph being
        captured gets one of its own, which lives as long as the graph."""
        from . import graphs
        if graphs.active_capture(stream) is not None:
            return graphs.scratch(nbytes, self.index, stream).storage.block
        if self._workspace is None or self._workspace.size < nbytes:
            if self._workspace is not None:
                self.allocator.free(self._workspace)
            self._workspace = self.allocator.malloc(nbytes, stream)
        return self._workspace

    def handle(self, name, create, destroy=None):
        """A library handle (e.g. cuBLASLt) made on first request and kept for the process."""
        if name not in self._handles:
            self.make_current()
            self._handles[name] = (create(), destroy)
        return self._handles[name][0]

    def release(self):
        """Free library handles (newest first) and the workspace."""
        for name in reversed(list(self._handles)):
            value, destroy = self._handles.pop(name)
            if destroy is not None:
                destroy(value)
        if self._workspace is not None:
            self.allocator.free(self._workspace)
            self._workspace = None


def get_context(index=None):
    """The context of device `index` (default: the current device), created on first use."""
    if index is None:
        index = current_device()
    ctx = _contexts.get(index)
    if ctx is None:
        with _contexts_lock:
            ctx = _contexts.get(index)
            if ctx is None:
                count = driver.device_count()
                if not 0 <= index < count:
                    raise RuntimeError(f"CUDA error: invalid device ordinal {index} "
                                       f"({count} device(s) visible)")
                ctx = _contexts[index] = DeviceContext(index)
    return ctx


def current_device():
    return _local.device if _device_set else 0  # no thread-local read in a one-device program


def device_index(device):
    """The index of the CUDA device a `device` argument names, as PyTorch's CUDA functions read
    it: an int is the index itself; None, "cuda" and a cuda genesis.device without an index are
    the current device; any other device type is a ValueError. Needs no driver."""
    if isinstance(device, int):
        return device
    if device is None:
        return current_device()
    d = as_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return current_device() if d.index is None else d.index


def activate(index):
    """Make device `index`'s context current on this thread; cheap when it already is."""
    if _local.active != index:
        get_context(index).make_current()
        _local.active = index


def activated(index=None):
    """`index` (None: the current device) with its context made current on this thread, as
    `activate` does (one call on the allocation path)."""
    if index is None:
        index = _local.device if _device_set else 0
    if _local.active != index:
        get_context(index).make_current()
        _local.active = index
    return index


def set_device(index):
    count = driver.device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"set_device: invalid device ordinal {index} ({count} device(s) visible)")
    global _device_set
    _device_set = True  # before this thread's own value changes, so no reader misses it
    _local.device = index
    activate(index)


def initialized_contexts():
    return list(_contexts.values())


@atexit.register
def _release_all():
    for ctx in list(_contexts.values()):
        try:
            ctx.release()
        except Exception:  # the driver may already be shutting down
            pass
