"""Tensor methods that call a Python function on each element in place: apply_, map_ and map2_,
as PyTorch's (CPU tensors only; one Python call an element, for small tensors and quick
scripts)."""

import numbers

import numpy as np


def _values(t, op):
    """The numpy array `t` holds, writable in place, after PyTorch's checks."""
    if t.device.type != "cpu":
        raise RuntimeError(f"{op} is only implemented on CPU tensors")
    if t.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    return t._data


def _store(arr, index, value):
    if not isinstance(value, numbers.Number):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    arr[index] = value


def _map(t, op, fn, others):
    """`fn` of each element of `t` and of `others` (broadcast to t's shape), written into t."""
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")
    arr = _values(t, op)
    sources = [o.expand(t.shape)._host() for o in others]
    for index in np.ndindex(arr.shape):
        _store(arr, index, fn(arr[index].item(), *(s[index].item() for s in sources)))
    t._bump_version()
    return t


class PythonCallsMethods:
    """Tensor methods of this family."""

    def apply_(self, callable):
        """Each element replaced by `callable(element)`, elements passed as Python numbers."""
        return _map(self, "apply_", callable, ())

    def map_(self, tensor, callable):
        """Each element replaced by `callable(element, other)`, `tensor` broadcast to this
        tensor's shape."""
        return _map(self, "map_", callable, (tensor,))

    def map2_(self, x, y, callable):
        """Each element replaced by `callable(element, x's, y's)`, x and y broadcast."""
        return _map(self, "map2_", callable, (x, y))
