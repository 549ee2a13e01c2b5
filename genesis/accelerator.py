"""genesis.accelerator: the device-agnostic accelerator API of torch.accelerator.

Scripts written for any accelerator pick their device with it (`device =
torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"`).
Genesis's one accelerator is CUDA, so each call is genesis.cuda's, and without a GPU
`is_available()` is False and `current_accelerator()` None, as on a CPU-only PyTorch.
"""

import contextlib

from . import cuda
from .device import device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream",
           "device_count", "device_index", "empty_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "set_device_idx", "set_device_index", "set_stream", "synchronize"]


def is_available():
    """Whether an accelerator (a CUDA device) can be used."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device("cuda") when a CUDA device is visible (and, with `check_available`, usable), else
    None."""
    if check_available and not is_available():
        return None
    return _device("cuda") if cuda.device_count() > 0 else None


def device_count():
    """The number of accelerator devices (0 without one)."""
    return cuda.device_count()


def _require():
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index():
    """The index of the current accelerator device."""
    _require()
    return cuda.current_device()


def set_device_index(device):
    """Make `device` (an index, a device or a string) the current accelerator device."""
    _require()
    cuda.set_device(device)


@contextlib.contextmanager
def device_index(device):
    """Within the block, `device` is the current accelerator device (None: unchanged)."""
    if device is None:
        yield
        return
    with cuda.device(device):
        yield


def synchronize(device=None):
    """Wait for every queued kernel on `device` (the current one by default)."""
    _require()
    cuda.synchronize(device)


def current_stream(device=None):
    """The current stream of `device`."""
    _require()
    return cuda.current_stream(device)


def set_stream(stream):
    """Make `stream` the current stream of its device."""
    _require()
    cuda.set_stream(stream)


def empty_cache():
    """Release the caching allocator's unused cached memory (a no-op without an accelerator)."""
    if is_available():
        cuda.empty_cache()


def get_memory_info(device_index=None):
    """(free, total) bytes of `device_index`'s memory, as the driver reports them."""
    _require()
    return cuda.mem_get_info(device_index)


# The caching allocator's statistics are genesis.cuda's own.
memory_allocated = cuda.memory_allocated
max_memory_allocated = cuda.max_memory_allocated
memory_reserved = cuda.memory_reserved
max_memory_reserved = cuda.max_memory_reserved
memory_stats = cuda.memory_stats
reset_peak_memory_stats = cuda.reset_peak_memory_stats
reset_accumulated_memory_stats = cuda.reset_accumulated_memory_stats
current_device_idx = current_device_index
set_device_idx = set_device_index
