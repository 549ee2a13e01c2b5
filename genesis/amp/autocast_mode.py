"""`autocast`: run a region in mixed precision, as `torch.autocast`.

Inside the region, matrix products, convolutions and attention run in the low-precision type
(float16 or bfloat16), numerically sensitive ops (softmax, norms, losses, exp, log, sums on CUDA)
in float32, and a few multi-input ops in the widest input type: the per-device lists are in
`genesis.ops.autocast`. Gradients flow back through the casts, so parameters keep float32
gradients. The backward pass needs no region: each op's backward runs in its forward's dtypes.
"""

import functools

from .. import dtypes
from .._warnings import warn
from ..autograd import autocast_state
from ..backends.cuda.runtime import driver
from ..ops.autocast import eligible
from ..tensor import Tensor

_SUPPORTED = {"cuda": (dtypes.float16, dtypes.bfloat16), "cpu": (dtypes.bfloat16, dtypes.float16)}


def is_autocast_available(device_type):
    """True for the device types autocast supports ("cpu" and "cuda")."""
    return device_type in autocast_state.DEVICE_TYPES


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on for `device_type` in this thread."""
    return autocast_state.is_enabled(device_type)


def set_autocast_enabled(device_type, enabled):
    autocast_state.set_enabled(device_type, enabled)


def get_autocast_dtype(device_type):
    """The low-precision type autocast uses on `device_type` (float16 on CUDA, bfloat16 on the
    CPU unless a region chose another)."""
    return autocast_state.get_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    autocast_state.set_dtype(device_type, dtypes.as_dtype(dtype))


def is_autocast_cache_enabled():
    return autocast_state.is_cache_enabled()


def set_autocast_cache_enabled(enabled):
    autocast_state.set_cache_enabled(enabled)


def clear_autocast_cache():
    """Drop the low-precision copies of weights cached by the current region."""
    autocast_state.clear_cache()


class autocast:
    """Context manager and decorator: ops in the region follow autocast's policy.

    `dtype` defaults to the device type's autocast dtype; `enabled=False` switches autocast off
    inside an enclosing region; `cache_enabled` keeps low-precision casts of weights for the
    region (the cache is cleared when the outermost region exits).
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        autocast_state.check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = (autocast_state.get_dtype(device_type) if dtype is None
                           else dtypes.as_dtype(dtype))
        self._enabled = bool(enabled)
        self._cache_enabled = (autocast_state.is_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        if self._enabled and device_type == "cuda" and not driver.is_available():
            warn("CUDA is not available. Disabling autocast.")
            self._enabled = False
        elif self._enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            names = ", ".join(f"genesis.{d.name}" for d in _SUPPORTED[device_type])
            warn(f"In {device_type.upper()} autocast, but the target dtype is not supported. "
                 f"Disabling autocast.\n{device_type.upper()} Autocast only supports dtypes of "
                 f"{names} currently.")
            self._enabled = False

    def __enter__(self):
        self._previous = (autocast_state.is_enabled(self.device),
                          autocast_state.get_dtype(self.device),
                          autocast_state.is_cache_enabled())
        autocast_state.set_enabled(self.device, self._enabled)
        autocast_state.set_dtype(self.device, self.fast_dtype)
        autocast_state.set_cache_enabled(self._cache_enabled)
        autocast_state.increment_nesting()
        return self

    def __exit__(self, *exc):
        if autocast_state.decrement_nesting() == 0:
            autocast_state.clear_cache()
        enabled, dtype, cache_enabled = self._previous
        autocast_state.set_enabled(self.device, enabled)
        autocast_state.set_dtype(self.device, dtype)
        autocast_state.set_cache_enabled(cache_enabled)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def in_region(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return in_region


def _cast(value, device_type, dtype):
    """Floating tensors of `device_type` in `value` (nested in lists, tuples, dicts) cast to
    `dtype`."""
    if isinstance(value, Tensor):
        return value.to(dtype) if eligible(value) and value.device.type == device_type else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom `Function.forward`: inside an autocast region, `cast_inputs`
    casts the floating inputs and runs forward with autocast off; otherwise forward runs in
    the region's state, which `custom_bwd` then restores for backward."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0]
        ctx._autocast_state = (autocast_state.is_enabled(device_type),
                               autocast_state.get_dtype(device_type))
        if cast_inputs is None or not ctx._autocast_state[0]:
            with autocast(device_type, ctx._autocast_state[1], ctx._autocast_state[0]):
                return fwd(*args, **kwargs)
        ctx._autocast_state = (False, ctx._autocast_state[1])
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return forward


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom `Function.backward`: it runs with the autocast state its forward
    (decorated with `custom_fwd`) ran with."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *grads):
        enabled, dtype = ctx._autocast_state
        with autocast(device_type, dtype, enabled):
            return bwd(ctx, *grads)
    return backward
