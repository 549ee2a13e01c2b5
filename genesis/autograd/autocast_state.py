"""Autocast's per-thread state: which device types autocast, to which dtype, and the cast cache.

The state lives here, below the ops, so that the autograd engine and `Function.apply` can
switch autocast off: the policy applies where a user calls an op, not inside the forward of
Genesis's own Functions (their ops are the implementation, as PyTorch's kernels sit below its
autocast) nor in backward, where each op runs in the dtypes its forward chose. `genesis.amp.autocast` is the public face; the policy (which
op runs in which dtype) is `genesis.ops.autocast`.
"""

import threading

from .. import dtypes

DEVICE_TYPES = ("cpu", "cuda")


class _ThreadState(threading.local):
    """Each thread starts with autocast off: float16 on CUDA, bfloat16 on the CPU by default."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.suspended = 0
        self.active = False
        self.cache = {}


_state = _ThreadState()


def state():
    """This thread's state (read by the policy on every autocast-aware op)."""
    return _state


def _refresh():
    _state.active = not _state.suspended and any(_state.enabled.values())


def check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


def is_enabled(device_type):
    check_device_type(device_type)
    return _state.enabled[device_type]


def set_enabled(device_type, enabled):
    check_device_type(device_type)
    _state.enabled[device_type] = bool(enabled)
    _refresh()


def get_dtype(device_type):
    check_device_type(device_type)
    return _state.dtype[device_type]


def set_dtype(device_type, dtype):
    check_device_type(device_type)
    _state.dtype[device_type] = dtype


def is_cache_enabled():
    return _state.cache_enabled


def set_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def increment_nesting():
    _state.nesting += 1
    return _state.nesting


def decrement_nesting():
    _state.nesting -= 1
    return _state.nesting


def clear_cache():
    """Drop the cached low-precision copies of weights (done when the outermost region exits)."""
    _state.cache.clear()


class suspended:
    """No autocast policy applies inside (the forward of one of Genesis's own Functions, whose
    ops are its implementation); nests."""

    __slots__ = ()

    def __enter__(self):
        _state.suspended += 1
        _state.active = False

    def __exit__(self, *exc):
        _state.suspended -= 1
        _refresh()
        return False


class disabled:
    """Autocast off on every device type inside (a backward pass), restored on exit; a region
    opened inside (by `custom_bwd`) applies again."""

    __slots__ = ("_enabled",)

    def __enter__(self):
        self._enabled = dict(_state.enabled)
        for device_type in _state.enabled:
            _state.enabled[device_type] = False
        _refresh()

    def __exit__(self, *exc):
        _state.enabled.update(self._enabled)
        _refresh()
        return False
