"""Helpers every op family shares: wrapping kernel results, views, broadcasting, checks.

Shape, stride and broadcast arithmetic lives here, once, for every device; backends only see
arrays whose shapes already agree.
"""

import operator

import ml_dtypes
import numpy as np

from .. import dtypes
from ..autograd.views import make_view  # noqa: F401  (re-exported)
from ..dispatch import kernel
from ..tensor import Tensor, contiguous_strides, wrap_dim  # noqa: F401  (re-exported)

SCALAR_TYPES = (bool, int, float)
NUMPY_SCALAR_TYPES = (np.number, np.bool_)


def python_number(x):
    """A numpy scalar as the Python number PyTorch reads it as (np.bool_ as a float, as torch
    reads it); anything else as it is."""
    if isinstance(x, np.bool_):
        return float(x)
    return x.item() if isinstance(x, np.number) else x


def _finfo(dtype):
    """numpy's finfo, which knows bfloat16 only through ml_dtypes."""
    return ml_dtypes.finfo(dtype.numpy_dtype)


# wrap(data, device, dtype=None): a new tensor owning the kernel result `data`; Tensor._make
# itself, so that every op's result costs no extra call.
wrap = Tensor._make


def call(op, *tensors_and_args, device=None, **kwargs):
    """Run kernel `op` on the device of the tensors; tensors are passed as backend arrays."""
    args = []
    for a in tensors_and_args:
        if isinstance(a, Tensor):
            if device is None:
                device = a.device
            a = a._data
        args.append(a)
    fn = kernel(op, device.type)
    return fn(*args, **kwargs) if kwargs else fn(*args)


def broadcast_shapes(*shapes, op="broadcast"):
    """PyTorch's broadcasting: align right, sizes equal or 1. The shapes are joined left to
    right, as torch's TensorIterator joins its operands, so that a mismatch is reported in
    torch's words (_broadcast_pair), between the op's name and every operand's shape."""
    out = shapes[0] if shapes else ()
    for shape in shapes[1:]:
        if shape != out:
            out = _broadcast_pair(out, shape, op, shapes)
    return tuple(out)


def _broadcast_pair(a, b, op, shapes):
    """The broadcast of shapes a and b, read from the last dim; RuntimeError names the first
    mismatch from the right, by its dim in the result."""
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + tuple(a), (1,) * (ndim - len(b)) + tuple(b)
    for i in range(ndim - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise RuntimeError(f"{op}: The size of tensor a ({a[i]}) must match the size of "
                               f"tensor b ({b[i]}) at non-singleton dimension {i} (shapes "
                               f"{' and '.join(str(list(s)) for s in shapes)})")
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def expand_strides(t, shape):
    """Strides that view `t` as `shape` (broadcast dims get stride 0)."""
    sizes = t._data.shape
    lead = len(shape) - len(sizes)
    return (0,) * lead + tuple([stride if n == size else 0 for n, stride, size
                                in zip(sizes, t.stride(), shape[lead:])])


def broadcast_data(t, shape):
    """`t`'s backend array viewed as `shape` without copying."""
    if t._data.shape == tuple(shape):
        return t._data
    return kernel("as_strided", t.device.type)(t._storage, tuple(shape), expand_strides(t, shape),
                                              t._offset)


def sum_to(grad, shape):
    """Sum `grad` down to `shape`: the backward of broadcasting."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = list(range(lead))
    dims += [lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1]
    out = grad.sum(dim=dims, keepdim=True) if dims else grad
    if lead:
        out = out.reshape(shape)
    return out


def check_devices(op, *tensors):
    """All tensors on one device, or RuntimeError naming the op and the devices."""
    devices = {t.device for t in tensors if isinstance(t, Tensor)}
    if len(devices) > 1:
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at "
                           f"least two devices, {' and '.join(sorted(str(d) for d in devices))}!")
    return next(iter(devices))


def scalar_for(dtype, value):
    """A Python scalar converted the way a kernel of `dtype` will read it."""
    if dtype is dtypes.bool_:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


def rounded_scalar(dtype, value):
    """A Python scalar that PyTorch casts to `dtype` before its kernel reads it, as a kernel of
    `dtype` reads it: rounded to a half type first, so that kernels computing half types in
    float32 see the half value, as PyTorch's do; other dtypes as `scalar_for`."""
    if dtype in dtypes.half_dtypes:
        return dtypes.round_to_half(value, dtype)
    return scalar_for(dtype, value)


# The Python-scalar operand that PyTorch's CPU kernels read as the number itself (in float32 for
# half types): the second of mul and the divisions, and lerp's weight. Every other scalar operand
# of an elementwise op is cast to the op's dtype first (TensorIterator's "wrapped numbers").
_UNROUNDED_OPERAND = {"mul": 1, "div": 1, "floor_divide": 1, "trunc_divide": 1, "lerp": 2}


def operand_scalar(op, i, dtype, value):
    """The Python scalar `value`, operand `i` of elementwise kernel `op` computed in `dtype`, as
    the kernel reads it: rounded to the dtype first unless PyTorch reads that one unrounded."""
    if _UNROUNDED_OPERAND.get(op) == i:
        return scalar_for(dtype, value)
    return rounded_scalar(dtype, value)


def normalize_dims(dim, ndim, op):
    """`dim` (None, an int, a numpy integer or a sequence) as a sorted tuple of non-negative
    dims; None = all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    dims = tuple(sorted(wrap_dim(operator.index(d), ndim, op) for d in dim))
    if len(set(dims)) != len(dims):
        repeated = next(d for d, e in zip(dims, dims[1:]) if d == e)
        raise RuntimeError(f"{op}: dim {repeated} appears multiple times in the list of dims")
    return dims


def cast(t, dtype):
    """`t` as `dtype` (no autograd: callers handle the graph); returns `t` when already so."""
    if t.dtype is dtype:
        return t
    return wrap(kernel("cast", t.device.type)(t._data, dtype), t.device, dtype)
