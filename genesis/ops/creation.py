"""Creating tensors, copying them, and moving them between devices and dtypes.

Values are built on the host with numpy where that is simplest (lists, arange, random draws) and
handed to the target device's backend; fills (`zeros`, `full`, `empty`) run on the device itself.
"""

import math
import numbers

import ml_dtypes
import numpy as np

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..device import as_device, resolve
from ..dispatch import kernel
from ..random import rng_for
from ..tensor import Tensor
from . import random as _draws
from .common import broadcast_shapes, call, contiguous_strides, wrap
from .inplace import write_fill, write_result


def _shape_arg(size, op):
    """Accept `f(2, 3)`, `f((2, 3))` and `f([2, 3])`; sizes must be non-negative ints."""
    if len(size) == 1:
        first = size[0]
        if type(first) is int and first >= 0:  # f(n): the usual case, checked first
            return size
        if isinstance(first, (tuple, list)):  # Size is a tuple
            size = first
    for s in size:
        if type(s) is not int or s < 0:
            break
    else:  # plain non-negative ints, the usual case
        return tuple(size)
    shape = tuple(map(int, size))
    if shape and min(shape) < 0:
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension in "
                           f"{list(shape)}")
    return shape


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _from_host(array, device, dtype=None, requires_grad=False):
    """Put a numpy array on `device` (copied to the GPU; kept as it is on the CPU)."""
    device = resolve(device)
    dtype = dtype or dtypes.from_numpy_dtype(array.dtype)
    if array.dtype != dtype.numpy_dtype:
        array = array.astype(dtype.numpy_dtype)
    data = kernel("from_numpy", device.type)(array, device.index)
    return _finish(_new(data, device, dtype), requires_grad)


def _new(data, device, dtype):
    """A tensor owning the fresh array `data`; empty ones get PyTorch's contiguous strides
    (numpy gives them zero strides)."""
    t = Tensor._make(data, device, dtype)
    if 0 in data.shape:
        t._data = kernel("as_strided", device.type)(t._storage, t.shape,
                                                    contiguous_strides(t.shape), 0)
    return t


_PYTHON_SCALAR_TYPES = (bool, int, float)


def _infer_dtype(data):
    """PyTorch's inference: the promotion of every element's type, where a Python float counts
    as the default dtype, an int as int64, and tensors and numpy values keep their own dtype.
    None for an empty sequence (which becomes the default dtype)."""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, (np.ndarray, np.generic)):
        return dtypes.from_numpy_dtype(data.dtype)
    if isinstance(data, _PYTHON_SCALAR_TYPES):
        return dtypes.scalar_dtype(data)
    if isinstance(data, (list, tuple)):
        kinds = set(map(type, data))
        if kinds <= set(_PYTHON_SCALAR_TYPES):
            return _promote_all(dtypes.scalar_dtype(k()) for k in kinds)
        return _promote_all(_infer_dtype(item) for item in data)
    return dtypes.from_numpy_dtype(np.asarray(data).dtype)


def _promote_all(found):
    out = None
    for d in found:
        if d is not None:
            out = d if out is None else dtypes.promote_types(out, d)
    return out


def _to_numpy(data, op):
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)):
        items = [_to_numpy(d, op) if isinstance(d, (Tensor, list, tuple)) else d for d in data]
        try:
            return np.array(items)
        except ValueError as e:
            raise ValueError(f"{op}: could not build a tensor from ragged nested sequences: "
                             f"{e}") from None
    if isinstance(data, (np.ndarray, np.generic, numbers.Number)):
        return np.asarray(data)
    if hasattr(data, "__array__") or hasattr(data, "__dlpack__"):
        return np.asarray(data)
    raise TypeError(f"{op}: Could not infer dtype of {type(data).__name__}")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, scalars, numpy arrays, tensors)."""
    array = _to_numpy(data, "tensor")
    if array.dtype == object:
        raise TypeError(f"tensor: Could not infer dtype of the elements of {type(data).__name__}")
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    else:
        dtype = _infer_dtype(data) or dtypes.get_default_dtype()
    with np.errstate(over="ignore"):
        array = np.array(array, dtype=dtype.numpy_dtype, copy=True, order="C")
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _from_host(array, as_device(device), dtype, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """`data` itself when it already is a tensor of that dtype and device, else a new tensor."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and device in (None, "cpu") and dtype in (None, ):
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with `array` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if any(s < 0 for s in array.strides):
        raise ValueError("from_numpy: At least one stride in the given numpy array is negative; "
                         "copy it first with array.copy()")
    dtype = dtypes.from_numpy_dtype(array.dtype)
    if any(s % array.itemsize for s in array.strides):
        raise ValueError("from_numpy: array strides are not a multiple of its element size")
    return Tensor._make(array, as_device("cpu"), dtype)


def _fill(shape, value, dtype, device, requires_grad):
    """A new tensor of `shape` filled with `value` (None: left uninitialized), in `dtype`
    (None: the default dtype, or the dtype of a Python scalar `value`)."""
    device = resolve(device)
    if dtype is None:
        dtype = dtypes.get_default_dtype() if value is None else dtypes.scalar_dtype(value)
    else:
        dtype = dtypes.as_dtype(dtype)
    if value is None:
        data = kernel("empty", device.type)(shape, dtype, device.index)
    else:
        data = kernel("full", device.type)(shape, value, dtype, device.index)
    return _finish(_new(data, device, dtype), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    return _fill(_shape_arg(size, "empty"), None, dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _fill(_shape_arg(size, "zeros"), 0, dtype or dtypes.get_default_dtype(), device,
                 requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _fill(_shape_arg(size, "ones"), 1, dtype or dtypes.get_default_dtype(), device,
                 requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _fill(_shape_arg((size,), "full"), fill_value, dtype, device, requires_grad)


def _like(t, dtype, device):
    return t.shape, (dtypes.as_dtype(dtype) if dtype is not None else t.dtype), \
        (device if device is not None else t.device)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    shape, dtype, device = _like(t, dtype, device)
    return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    shape, dtype, device = _like(t, dtype, device)
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    shape, dtype, device = _like(t, dtype, device)
    return ones(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    shape, dtype, device = _like(t, dtype, device)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = np.eye(n, m, dtype=dtype.numpy_dtype)
    return _from_host(values, as_device(device), dtype, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from `start` to `end` (exclusive) by `step`; integer dtype if all arguments are ints.

    As PyTorch: the count comes from the arguments as given (in float64, or in integers for
    int64), values are start + i * step in the dtype's accumulation type, which for integer dtypes
    means start and step truncated to integers first.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if dtype is None:
        is_int = all(isinstance(x, int) for x in (start, end, step))
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    dtype = dtypes.as_dtype(dtype)
    if dtype is dtypes.int64:
        start, end, step = int(start), int(end), int(step)
    _check_arange(start, end, step)
    if dtype is dtypes.int64:
        count = (end - start + step - (1 if step > 0 else -1)) // step
    else:
        count = max(0, math.ceil((float(end) - float(start)) / float(step)))
    if not dtype.is_floating_point:
        start, step = int(start), int(step)
    acc = np.float64 if dtype.is_floating_point and dtype.itemsize > 2 else \
        np.float32 if dtype.is_floating_point else np.int64
    values = acc(start) + np.arange(count, dtype=acc) * acc(step)
    return _from_host(values.astype(dtype.numpy_dtype), as_device(device), dtype, requires_grad)


def _check_arange(start, end, step):
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")


def _finfo(dtype):
    """numpy's finfo, which knows bfloat16 only through ml_dtypes."""
    return ml_dtypes.finfo(dtype.numpy_dtype)


def _check_representable(op, dtype, *values):
    """RuntimeError (as PyTorch) for a finite value beyond the range of floating `dtype`."""
    limit = float(_finfo(dtype).max)
    for v in values:
        if math.isfinite(v) and abs(v) > limit:
            raise RuntimeError(f"{op}: value {v} cannot be converted to type {dtype.name} "
                               "without overflow")


def _linear_steps(start, end, steps, dtype, op):
    """PyTorch's two-sided linspace: start + i*step below halfway, end - (n-1-i)*step above.

    Half types compute in their own arithmetic (rounding after every operation, as PyTorch's
    CPU kernel does); other floats in float64; integer dtypes truncate start and end first and
    step in float64.
    """
    if steps < 0:
        raise RuntimeError(f"{op}: number of steps must be non-negative, got {steps}")
    steps = int(steps)
    if dtype.is_floating_point:
        acc = dtype.numpy_dtype.type if dtype.itemsize == 2 else np.float64
        _check_representable(op, dtype, start, end)
        start, end = acc(start), acc(end)
    else:
        acc = np.float64
        start, end = acc(int(start)), acc(int(end))
    if steps == 1:
        return np.array([start], dtype=acc)
    step = (end - start) / acc(steps - 1)
    index = np.arange(steps).astype(acc)
    low = start + step * index
    high = end - step * (acc(steps - 1) - index)
    return np.where(np.arange(steps) < steps // 2, low, high)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = _linear_steps(start, end, steps, dtype, "linspace")
    return _from_host(values.astype(dtype.numpy_dtype), as_device(device), dtype, requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 and rounded once (integer
    dtypes truncate start and end first, as PyTorch)."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if dtype.is_floating_point:
        _check_representable("logspace", dtype, start, end)
    exponent_dtype = dtypes.float64 if dtype.is_floating_point else dtype
    exponents = _linear_steps(start, end, steps, exponent_dtype, "logspace")
    values = np.power(np.float64(base), exponents)
    return _from_host(values.astype(dtype.numpy_dtype), as_device(device), dtype, requires_grad)


def _random(shape, dtype, device, requires_grad, draw):
    """Draw `shape` values on the host with numpy and place them on `device`."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = np.asarray(draw(shape))
    return _from_host(values.astype(dtype.numpy_dtype), as_device(device), dtype, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1)."""
    if (drawn := _draws.draw("uniform_", _shape_arg(size, "rand"), dtype, device, generator,
                             requires_grad, 0.0, 1.0)) is not None:
        return drawn
    rng = rng_for(generator)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _random(_shape_arg(size, "rand"), dtype, device, requires_grad,
                   lambda s: _uniform_bits(rng, s, dtype))


def _uniform_bits(rng, shape, dtype):
    """k / 2**digits for k uniform below 2**digits, digits the dtype's mantissa bits (as
    PyTorch): every value is exact in the dtype, so rounding can never reach 1."""
    digits = _finfo(dtype).nmant + 1
    return rng.integers(0, 1 << digits, shape, dtype=np.int64) * 2.0 ** -digits


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal."""
    if (drawn := _draws.draw("normal_", _shape_arg(size, "randn"), dtype, device, generator,
                             requires_grad, 0.0, 1.0)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg(size, "randn"), dtype, device, requires_grad,
                   lambda s: rng.standard_normal(s))


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high); `randint(high, size)` starts at 0."""
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"randint: expected low < high, got low={low}, high={high}")
    if (drawn := _draws.draw("random_", _shape_arg((size,), "randint"), dtype or dtypes.int64,
                             device, generator, requires_grad, low, high)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg((size,), "randint"), dtype or dtypes.int64, device,
                   requires_grad, lambda s: rng.integers(low, high, s))


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    if (drawn := _draws.randperm(n, generator, dtype, device, requires_grad)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random((n,), dtype or dtypes.int64, device, requires_grad,
                   lambda s: rng.permutation(n))


def rand_like(t, dtype=None, device=None, requires_grad=False):
    shape, dtype, device = _like(t, dtype, device)
    return rand(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False):
    shape, dtype, device = _like(t, dtype, device)
    return randn(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(t, low, high=None, dtype=None, device=None):
    shape, dtype, device = _like(t, dtype, device)
    return randint(low, high, shape, dtype=dtype, device=device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples; `mean` and `std` may be tensors (broadcast together) or floats."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if (drawn := _draws.normal_tensors(mean, std, generator)) is not None:
            return drawn
        rng = rng_for(generator)
        ref = mean if isinstance(mean, Tensor) else std
        m = mean.detach()._host() if isinstance(mean, Tensor) else mean
        s = std.detach()._host() if isinstance(std, Tensor) else std
        if np.any(np.asarray(s) < 0):
            raise RuntimeError("normal: std must be >= 0.0")
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        values = rng.standard_normal(shape) * np.asarray(s, np.float64) + np.asarray(m, np.float64)
        return _from_host(values.astype(ref.dtype.numpy_dtype), ref.device, ref.dtype)
    if std < 0:
        raise RuntimeError(f"normal: expected std >= 0.0, got {std}")
    if size is None:
        raise TypeError("normal: size is required when mean and std are floats")
    if (drawn := _draws.draw("normal_", _shape_arg((size,), "normal"), dtype, device, generator,
                             requires_grad, mean, std)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg((size,), "normal"), dtype, device, requires_grad,
                   lambda s: rng.standard_normal(s) * std + mean)


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples with probability `input` (or the float `p`) of a 1, in `input`'s dtype."""
    if (drawn := _draws.draw("bernoulli_", tuple(input.shape), input.dtype, input.device,
                             generator, False, input if p is None else p)) is not None:
        return drawn
    rng = rng_for(generator)
    probs = np.full(input.shape, p, np.float64) if p is not None \
        else input.detach()._host().astype(np.float64)
    if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
        raise RuntimeError("bernoulli: all elements of input must be in [0, 1]")
    values = np.asarray(rng.random(probs.shape) < probs)
    return _from_host(values.astype(input.dtype.numpy_dtype), input.device, input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the rows of `input` (non-negative weights, need not sum to 1)."""
    rng = rng_for(generator)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape "
                           f"{list(input.shape)}")
    weights = input.detach()._host().astype(np.float64).reshape(-1, input.shape[-1])
    if np.any(weights < 0) or np.any(~np.isfinite(weights)):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if not replacement and num_samples > weights.shape[1]:
        raise RuntimeError(f"multinomial: cannot sample n_sample={num_samples} > "
                           f"prob_dist.size(-1)={weights.shape[1]} samples without replacement")
    rows = []
    for w in weights:
        if w.sum() <= 0:
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement and np.count_nonzero(w) < num_samples:
            raise RuntimeError("multinomial: invalid multinomial distribution (with "
                               "replacement=False, "
                               "not enough non-negative category to sample)")
        rows.append(rng.choice(len(w), size=num_samples, replace=replacement, p=w / w.sum()))
    out = np.array(rows, dtype=np.int64).reshape(*input.shape[:-1], num_samples)
    return _from_host(out, input.device, dtypes.int64)


class ToCopy(Function):
    """A copy to another device and/or dtype; the gradient goes back the same way."""

    @staticmethod
    def forward(ctx, x, device, dtype, non_blocking):
        ctx.src = (x.device, x.dtype)
        if device == x.device:
            return wrap(call("cast", x, dtype), device, dtype)
        src = x._data if x.dtype is dtype else call("cast", x, dtype)
        host = kernel("to_numpy", x.device.type)(src, non_blocking)
        data = kernel("from_numpy", device.type)(host, device.index, non_blocking)
        return Tensor._make(data, device, dtype)

    @staticmethod
    def backward(ctx, grad):
        device, dtype = ctx.src
        return grad.to(device=device, dtype=dtype), None, None, None


def to_device_and_dtype(t, device=None, dtype=None, non_blocking=False, copy=False):
    """`Tensor.to`: the tensor itself if nothing changes (unless `copy`), else a differentiable
    copy."""
    device = resolve(device) if device is not None else t.device
    dtype = dtype or t.dtype
    if device == t.device and dtype is t.dtype and not copy:
        return t
    if t.requires_grad and not dtype.is_floating_point and is_grad_enabled():
        return ToCopy.apply(t.detach(), device, dtype, non_blocking)
    return ToCopy.apply(t, device, dtype, non_blocking)


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return wrap(call("contiguous", x), x.device, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(t, memory_format=None):
    """A copy with its own memory (contiguous), in the graph."""
    return Clone.apply(t)


def contiguous(t, memory_format=None):
    """`t` if already contiguous, else a contiguous copy."""
    return t if t.is_contiguous() else Clone.apply(t)


def copy_(self, src, non_blocking=False):
    """Write `src` into `self` in place: broadcast to self's shape, cast, moved across devices."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    value = src.to(device=self.device, dtype=self.dtype, non_blocking=non_blocking)
    if tuple(value.shape) != tuple(self.shape):
        if broadcast_shapes(tuple(value.shape), tuple(self.shape), op="copy_") != tuple(self.shape):
            raise RuntimeError(f"copy_: source of shape {list(src.shape)} cannot be broadcast to "
                               f"the destination shape {list(self.shape)}")
        value = value.expand(tuple(self.shape))
    return write_result(self, value, "copy_")


def fill_(self, value):
    """Set every element to `value` (a number, or a 0-d tensor whose gradient then flows), in
    place."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return copy_(self, value)
    if write_fill(self, value, "fill_"):
        return self
    return write_result(self, full_like(self, value), "fill_")


def zero_(self):
    """Set every element to zero, in place."""
    return fill_(self, 0)


TENSOR_METHODS = {
    "copy_": copy_,
    "fill_": fill_,
    "zero_": zero_,
    "clone": clone,
    "contiguous": contiguous,
    "new_tensor": lambda self, data, dtype=None, device=None, requires_grad=False: tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad),
    "new_zeros": lambda self, *size, dtype=None, device=None, requires_grad=False: zeros(
        _shape_arg(size, "new_zeros"), dtype=dtype or self.dtype, device=device or self.device,
        requires_grad=requires_grad),
    "new_ones": lambda self, *size, dtype=None, device=None, requires_grad=False: ones(
        _shape_arg(size, "new_ones"), dtype=dtype or self.dtype, device=device or self.device,
        requires_grad=requires_grad),
    "new_empty": lambda self, *size, dtype=None, device=None, requires_grad=False: empty(
        _shape_arg(size, "new_empty"), dtype=dtype or self.dtype, device=device or self.device,
        requires_grad=requires_grad),
    "new_full": lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: full(
        size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
        requires_grad=requires_grad),
}

__all__ = ["tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "empty_like",
           "zeros_like", "ones_like", "full_like", "eye", "arange", "linspace", "logspace", "rand",
           "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
           "bernoulli", "multinomial", "clone"]
