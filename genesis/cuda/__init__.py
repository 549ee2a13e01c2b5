"""`genesis.cuda`: the user-facing face of the CUDA backend, named as `torch.cuda`.

Nothing here touches the driver until a function is called; without a GPU or without the
`cuda` extra, `is_available()` is False and everything else raises a clear error.
"""

import contextlib

from ..backends.cuda.runtime import driver as _driver
from ..backends.cuda.runtime.driver import CudaError, CudaUnavailable


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
    return _runtime()[0].current_device()


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


def manual_seed(seed):
    from ..random import manual_seed as _seed
    _seed(seed)


manual_seed_all = manual_seed

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
           "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
           "mem_get_info", "init", "is_initialized", "manual_seed", "manual_seed_all",
           "CudaError"]
