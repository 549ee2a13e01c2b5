"""Creating tensors, copying them, and moving them between devices and dtypes.

Values are built on the host with numpy where that is simplest (lists, arange, random draws) and
handed to the target device's backend; fills (`zeros`, `full`, `empty`) run on the device itself.
"""

import collections.abc
import math
import numbers
import operator

import ml_dtypes
import numpy as np

from .. import dtypes
from .. import memory_formats as formats
from .._warnings import warn, warn_once
from ..autograd.function import Function, records
from ..autograd.grad_mode import is_grad_enabled
from ..device import as_device, factory_device, factory_resolve, resolve
from ..device import device as Device
from ..dtypes import dtype as Dtype
from ..dispatch import has_kernel, kernel
from ..tensor import Tensor, filled, fresh
from .common import broadcast_shapes, call, contiguous_strides, wrap
from .inplace import write_fill, write_result


def _shape_arg(size, op):
    """Accept `f(2, 3)`, `f((2, 3))` and `f([2, 3])`; sizes must be non-negative integers
    (numpy's and one-element integer tensors too), with PyTorch's TypeErrors for others."""
    if len(size) == 1:
        first = size[0]
        if type(first) is int and first >= 0:  # f(n): the usual case, checked first
            return size
        if isinstance(first, (tuple, list)):  # Size is a tuple
            size = first
        elif count_arg(first) is None:
            raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{_arg_type(first)}")
    elif size and count_arg(size[0]) is None:  # f(a, b, ...) whose a is no integer
        raise TypeError(f"{op}() takes 1 positional argument but {len(size)} were given")
    for s in size:
        if type(s) is not int or s < 0:
            break
    else:  # plain non-negative ints, the usual case
        return tuple(size)
    shape = tuple(_size_item(s, i, op) for i, s in enumerate(size))
    if shape and min(shape) < 0:
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension in "
                           f"{list(shape)}")
    return shape


def _size_item(value, i, op):
    """Element `i` of a size as an int: an integer, or a bool past the first (as PyTorch's
    parser reads them)."""
    n = count_arg(value)
    if n is not None:
        return n
    if i == 0:
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, but found "
                        f"element of type {_arg_type(value)} at pos 0")
    if isinstance(value, bool):
        return int(value)
    raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {i + 1} with "
                    f'error "type must be tuple of ints,but got {_arg_type(value)}"')


def _sizes(args, size, op, name="size"):
    """The size given positionally (`f(2, 3)`, `f((2, 3))`) or by keyword (`f(size=(2, 3))`,
    which must be a sequence; `name` is the keyword's), as the argument tuple `_shape_arg`
    reads."""
    if size is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                        f"{type(size).__name__}")
    return (size,)


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
    return _finish(fresh(data, device, dtype), requires_grad)


_PYTHON_SCALAR_TYPES = (bool, int, float)


def _as_list(data):
    """A sequence other than a list or a tuple (a deque, a range) as a list, since PyTorch reads
    any sequence; anything else as it is."""
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (list, tuple, str,
                                                                            bytes)):
        return list(data)
    return data


def _infer_dtype(data):
    """PyTorch's inference: the promotion of every element's type, where a Python float counts
    as the default dtype, an int as int64, and tensors and numpy values keep their own dtype.
    None for an empty sequence (which becomes the default dtype)."""
    data = _as_list(data)
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
    data = _as_list(data)
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)):
        items = [_to_numpy(d, op) if isinstance(d, (Tensor, list, tuple)) or _as_list(d) is not d
                 else d for d in data]
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


_COPY_CONSTRUCT = ("To copy construct from a tensor, it is recommended to use "
                   "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                   ".requires_grad_(True), rather than {}(sourceTensor).")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, scalars, numpy arrays, tensors)."""
    if isinstance(data, Tensor):
        warn(_COPY_CONSTRUCT.format("torch.tensor"))
    return _copied(data, dtype, device, requires_grad)


def _copied(data, dtype, device, requires_grad):
    """`tensor`'s copy of `data`, without its warning."""
    array = _to_numpy(data, "tensor")
    if array.dtype == object:
        raise TypeError(f"tensor: Could not infer dtype of the elements of {type(data).__name__}")
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if isinstance(data, (list, tuple, numbers.Number)):
            _check_python_numbers(array, dtype)
    else:
        dtype = _infer_dtype(data) or dtypes.get_default_dtype()
    with np.errstate(over="ignore"):
        array = np.array(dtypes.half_source(array, dtype.numpy_dtype), dtype=dtype.numpy_dtype,
                         copy=True, order="C")
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _from_host(array, factory_device(device), dtype, requires_grad)


def _check_python_numbers(array, dtype):
    """PyTorch's overflow errors for Python numbers (converted into `array`) that the integer
    `dtype` cannot hold: beyond its range, or not finite (a negative number wraps into uint8 as
    c10 allows). numpy arrays and tensors convert as they are, wrapping, as in PyTorch."""
    if dtype.is_floating_point or dtype is dtypes.bool_ or array.size == 0:
        return
    if array.dtype.kind not in "iuf":
        return
    for value in (array.min().item(), array.max().item()):
        try:
            dtypes.storable_scalar(value, dtype)
        except RuntimeError:
            if dtype is dtypes.int64 and array.dtype.kind == "u":
                raise ValueError("Overflow when unpacking long long") from None
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without "
                               "overflow") from None


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


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor over the bytes of `buffer` (any object with the buffer protocol: a
    bytearray, an array.array, a memoryview) from byte `offset`, `count` elements of `dtype`
    (-1: all that follow), sharing its memory. A read-only buffer is copied, with a warning:
    numpy, unlike PyTorch, will not write through it."""
    dtype = dtypes.as_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    array = np.frombuffer(view, dtype=dtype.numpy_dtype, count=count, offset=offset)
    if not array.flags.writeable:
        warn_once("frombuffer", "The given buffer is not writable: genesis copies it, so "
                  "writes to the tensor do not reach the buffer. This warning is given once.")
        array = array.copy()
    t = Tensor._make(array, as_device("cpu"), dtype)
    return t.requires_grad_() if requires_grad else t


def _fill(shape, value, dtype, device, requires_grad):
    """A new tensor of `shape` filled with `value`, in `dtype` (None: the dtype of the Python
    scalar `value`)."""
    device = factory_resolve(device)
    dtype = dtypes.scalar_dtype(value) if dtype is None else dtypes.as_dtype(dtype)
    return _finish(filled(shape, value, dtype, device), requires_grad)


def empty(*args, size=None, dtype=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    """An uninitialized tensor of the given size, laid out in `memory_format` when that is a
    channels-last format (else contiguous)."""
    if size is None and len(args) == 1 and args[0].__class__ is int and args[0] >= 0:
        shape = args  # empty(n): nothing to parse
    else:
        shape = _shape_arg(_sizes(args, size, "empty"), "empty")
    device = factory_resolve(device)
    if dtype is None:
        dtype = dtypes.get_default_dtype()
    elif dtype.__class__ is not Dtype:
        dtype = dtypes.as_dtype(dtype)
    t = fresh(kernel("empty", device.type)(shape, dtype, device.index), device, dtype)
    if formats.dim_order(memory_format) is not None:
        formats.check_rank(len(shape), memory_format)
        _restride(t, formats.dense_strides(shape, memory_format.order))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _restride(t, strides):
    """Lay the new dense tensor `t` out at the dense element `strides` (None: as it is) over the
    same memory, in place: for a tensor whose values are unset, one value throughout, or
    independent draws, whose order in memory does not matter."""
    if strides is not None:
        t._data = kernel("as_strided", t.device.type)(t._storage, t._data.shape, strides,
                                                      t._offset)
    return t


_PRESERVE = formats.preserve_format


def copy_strides(t, memory_format=None):
    """The element strides PyTorch gives a copy of `t` in `memory_format` (preserve_format by
    default: memory_formats.preserved), or None when that copy is row-major and `t` itself is
    too, with the same strides (any copy kernel's result is then right as it comes)."""
    shape = t._data.shape
    if memory_format is None or memory_format is _PRESERVE:
        if 1 not in shape and 0 not in shape and t.is_contiguous():  # the usual case
            return None
        if t.is_contiguous() and t.stride() == contiguous_strides(shape):
            return None
        return formats.preserved(shape, t.stride())
    if memory_format is formats.contiguous_format:
        return None if t.is_contiguous() else formats.dense_strides(shape, range(len(shape)))
    formats.check_rank(len(shape), memory_format)
    return formats.dense_strides(shape, memory_format.order)


def copy_laid_out(x, strides, copy, device=None, dtype=None):
    """`copy` (a kernel from an array to a new one, on `device` in `dtype`: x's by default) of
    `x`'s array, laid out at the dense element `strides`: the copy reads x's dims in the order
    those strides lay them out in memory, writing them row-major, and its result is viewed back
    at `strides`. One pass over the data, whatever the layout."""
    device, dtype = device or x.device, dtype or x.dtype
    shape, own = x._data.shape, x.stride()
    order = formats.outermost_first(shape, strides)
    view = kernel("as_strided", x.device.type)(x._storage, tuple([shape[d] for d in order]),
                                               tuple([own[d] for d in order]), x._offset)
    out = wrap(copy(view), device, dtype)
    if not out.is_contiguous():  # a numpy cast keeps a broadcast view's order
        out = wrap(kernel("contiguous", device.type)(out._data), device, dtype)
    return kernel("as_strided", device.type)(out._storage, shape, strides, out._offset)


def zeros(*args, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 0."""
    shape = _shape_arg(_sizes(args, size, "zeros"), "zeros")
    return _fill(shape, 0, dtype or dtypes.get_default_dtype(), device, requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 1."""
    shape = _shape_arg(_sizes(args, size, "ones"), "ones")
    return _fill(shape, 1, dtype or dtypes.get_default_dtype(), device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` filled with `fill_value` (its dtype by default)."""
    return _full(size, fill_value, dtype, device, requires_grad, "full")


def _full(size, fill_value, dtype, device, requires_grad, op):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is not None:
        fill_value = dtypes.storable_scalar(fill_value, dtypes.as_dtype(dtype))
    return _fill(_shape_arg((size,), op), fill_value, dtype, device, requires_grad)


def _like(t, dtype, device):
    return t.shape, (dtypes.as_dtype(dtype) if dtype is not None else t.dtype), \
        (device if device is not None else t.device)


def laid_out_like(out, t, memory_format, requires_grad):
    """The new tensor `out`, made for `t` by a *_like factory, laid out as a copy of `t` in
    `memory_format` is (copy_strides), then requiring grad if asked."""
    strides = copy_strides(t, memory_format)
    if strides is not None:
        _restride(out, strides)
    return out.requires_grad_(True) if requires_grad else out


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    """An uninitialized tensor with `t`'s size, dtype and device unless given, laid out in
    `memory_format` (preserve_format: as `t`, where it is dense, as PyTorch's empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(empty(shape, dtype=dtype, device=device), t, memory_format,
                         requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    """Zeros with `t`'s size, dtype and device unless given (layout: see empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(zeros(shape, dtype=dtype, device=device), t, memory_format,
                         requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    """Ones with `t`'s size, dtype and device unless given (layout: see empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(ones(shape, dtype=dtype, device=device), t, memory_format,
                         requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    """`fill_value` everywhere, with `t`'s size, dtype and device unless given (layout: see
    empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(full(shape, fill_value, dtype=dtype, device=device), t, memory_format,
                         requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The n x m identity matrix (m = n by default)."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = np.eye(n, m, dtype=dtype.numpy_dtype)
    return _from_host(values, factory_device(device), dtype, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from `start` to `end` (exclusive) by `step`; int64 if all arguments are integers
    (Python's or numpy's).

    As PyTorch: the count comes from the arguments as given (in float64, or in integers for
    int64), values are start + i * step in the dtype's accumulation type, which for integer dtypes
    means start and step truncated to integers first.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if dtype is None:
        is_int = all(isinstance(x, (int, np.integer)) for x in (start, end, step))
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
    device = factory_resolve(device)
    if has_kernel("arange", device.type):
        data = kernel("arange", device.type)(count, start, step, dtype.numpy_dtype, device.index)
        return _finish(fresh(data, device, dtype), requires_grad)
    acc = np.float64 if dtype.is_floating_point and dtype.itemsize > 2 else \
        np.float32 if dtype.is_floating_point else np.int64
    values = acc(start) + np.arange(count, dtype=acc) * acc(step)
    return _from_host(values.astype(dtype.numpy_dtype), device, dtype, requires_grad)


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


def count_arg(value):
    """`value` as a Python int where PyTorch's parser takes it for an int argument (a Python or
    numpy integer, an integer tensor of one element; not a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Tensor):
        integral = not value.dtype.is_floating_point and value.dtype is not dtypes.bool_
        return int(value.item()) if integral and value.numel() == 1 else None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _arg_type(value):
    """How PyTorch's argument errors name a value's type."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, Dtype):
        return "torch.dtype"
    if isinstance(value, Device):
        return "torch.device"
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


_SPACE_KEYWORDS = ("*, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                   "torch.device device = None, bool pin_memory = False, bool requires_grad = "
                   "False")


def _space_steps(op, start, end, steps, keywords, extra=""):
    """linspace's and logspace's `steps` as an int, else PyTorch's TypeError for the call
    (`keywords`: the keyword arguments given, `extra`: the signature's parameters between
    steps and the keywords)."""
    count = count_arg(steps)
    if count is not None:
        return count
    given = [_arg_type(v) for v in (start, end, steps)]
    given += [f"{k}={_arg_type(v)}" for k, v in sorted(keywords.items()) if v is not None]
    signatures = "".join(f"\n * ({a} start, {b} end, int steps{extra}, {_SPACE_KEYWORDS})"
                         for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"),
                                      ("Tensor", "Number"), ("Number", "Number")))
    raise TypeError(f"{op}() received an invalid combination of arguments - got "
                    f"({', '.join(given)}), but expected one of:{signatures}\n")


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
    """`steps` values evenly spaced from `start` to `end`, both included."""
    steps = _space_steps("linspace", start, end, steps, {"dtype": dtype, "device": device})
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = _linear_steps(start, end, steps, dtype, "linspace")
    return _from_host(values.astype(dtype.numpy_dtype), factory_device(device), dtype,
                      requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 and rounded once (integer
    dtypes truncate start and end first, as PyTorch)."""
    steps = _space_steps("logspace", start, end, steps, {"dtype": dtype, "device": device},
                         ", float base = 10.0")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if dtype.is_floating_point:
        _check_representable("logspace", dtype, start, end)
    exponent_dtype = dtypes.float64 if dtype.is_floating_point else dtype
    exponents = _linear_steps(start, end, steps, exponent_dtype, "logspace")
    values = np.power(np.float64(base), exponents)
    return _from_host(values.astype(dtype.numpy_dtype), factory_device(device), dtype,
                      requires_grad)


def _cast_copy(x, dtype, strides=None):
    """A copy of `x` as `dtype` on its own device, outside the graph, at `strides` (see
    copy_strides)."""
    device = x.device
    if strides is None:
        return wrap(kernel("cast", device.type)(x._data, dtype), device, dtype)

    def cast(arr):  # into a row-major array, which a numpy cast of a permuted view is not
        out = kernel("empty", device.type)(arr.shape, dtype, device.index)
        return kernel("copy_", device.type)(out, arr)
    return wrap(copy_laid_out(x, strides, cast, dtype=dtype), device, dtype)


class ToCopy(Function):
    """A copy to another device and/or dtype, at `strides` (see copy_strides); the gradient goes
    back the same way."""

    linear = True

    @staticmethod
    def forward(ctx, x, device, dtype, non_blocking, strides=None):
        ctx.src = (x.device, x.dtype)
        if device is x.device or device == x.device:
            return _cast_copy(x, dtype, strides)

        def move(arr):
            src = arr if x.dtype is dtype else kernel("cast", x.device.type)(arr, dtype)
            host = kernel("to_numpy", x.device.type)(src, non_blocking)
            return kernel("from_numpy", device.type)(host, device.index, non_blocking)
        data = move(x._data) if strides is None else copy_laid_out(x, strides, move, device, dtype)
        return Tensor._make(data, device, dtype)

    @staticmethod
    def backward(ctx, grad):
        device, dtype = ctx.src
        return to_device_and_dtype(grad, device, dtype), None, None, None, None


def to_device_and_dtype(t, device=None, dtype=None, non_blocking=False, copy=False,
                        memory_format=None):
    """`Tensor.to`: the tensor itself if nothing changes (unless `copy`; see _to_format for
    `memory_format`), else a differentiable copy laid out in `memory_format` (copy_strides)."""
    device = t.device if device is None or device is t.device else resolve(device)
    dtype = dtype or t.dtype
    if device == t.device:
        if dtype is t.dtype and not copy:
            return _to_format(t, memory_format)
        if not records(t):  # nothing for the graph to record: the copy alone, no Function call
            return _cast_copy(t, dtype, copy_strides(t, memory_format))
    strides = copy_strides(t, memory_format)
    if t.requires_grad and not dtype.is_floating_point and is_grad_enabled():
        return ToCopy.apply(t.detach(), device, dtype, non_blocking, strides)
    return ToCopy.apply(t, device, dtype, non_blocking, strides)


class Clone(Function):
    """A copy of `x` at `strides` (see copy_strides); the gradient passes through."""

    linear = True

    @staticmethod
    def forward(ctx, x, strides=None):
        if strides is None:
            return wrap(call("contiguous", x), x.device, x.dtype)
        return wrap(copy_laid_out(x, strides, kernel("contiguous", x.device.type)), x.device,
                    x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def clone(t, memory_format=None):
    """A copy with its own memory, in the graph, laid out in `memory_format`: preserve_format,
    the default, keeps `t`'s strides where it is dense (copy_strides)."""
    strides = copy_strides(t, memory_format)
    return Clone.apply(t) if strides is None else Clone.apply(t, strides)


def contiguous(t, memory_format=None):
    """`t` if already dense in `memory_format`'s order (row-major by default), else a copy that
    is."""
    if formats.dim_order(memory_format) is None:
        return t if t.is_contiguous() else Clone.apply(t)
    return t if t.is_contiguous(memory_format) else clone(t, memory_format)  # clone checks rank


def _to_format(t, memory_format):
    """`Tensor.to` of `t` to its own device and dtype, as PyTorch's: `t` under preserve_format,
    and when `t` is laid out as `memory_format` already suggests (memory_formats.suggest); else
    a copy laid out in `memory_format`."""
    if memory_format is None or memory_format is formats.preserve_format:
        return t
    if formats.suggest(t._data.shape, t.stride()) is memory_format:
        return t
    return clone(t, memory_format)


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
    value = dtypes.storable_scalar(value, self.dtype)
    if write_fill(self, value, "fill_"):
        return self
    return write_result(self, full_like(self, value), "fill_")


def zero_(self):
    """Set every element to zero, in place."""
    return fill_(self, 0)


def parse_to(*args, device=None, dtype=None, non_blocking=False, copy=False,
             memory_format=None):
    """`Tensor.to`'s arguments as (device, dtype, non_blocking, copy, memory_format)."""
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, dtypes.dtype):
            dtype = arg
        elif isinstance(arg, bool):
            non_blocking = arg
        elif arg is not None:
            device = arg
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return device, dtype, non_blocking, copy, memory_format


def resize_(t, *sizes, size=None, memory_format=None):
    """Give `t` the shape `sizes`, laid out dense (row-major, or in a channels-last
    `memory_format`) from its storage offset, in place. A storage too small for it is
    replaced by a larger one that starts with the old one's values, as PyTorch grows a
    storage; views taken before that keep the old storage."""
    shape = _shape_arg(_sizes(sizes, size, "resize_"), "resize_")
    if t.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    order = formats.dim_order(memory_format)
    if order is None:
        strides = contiguous_strides(shape)
    else:
        formats.check_rank(len(shape), memory_format)
        strides = formats.dense_strides(shape, order)
    device_type = t.device.type
    storage, offset = t._storage, t._offset
    needed = offset + math.prod(shape)
    if needed > storage.size:
        grown = kernel("empty", device_type)((needed,), t.dtype, t.device.index)
        head = kernel("as_strided", device_type)(grown, (storage.size,), (1,), 0)
        kernel("copy_", device_type)(head, storage)
        t._storage = storage = grown
    t._data = kernel("as_strided", device_type)(storage, shape, strides, offset)
    t._bump_version()
    return t


def resize_as_(t, other, memory_format=None):
    """`resize_` to `other`'s shape."""
    return resize_(t, tuple(other.shape), memory_format=memory_format)


def _new_size(sizes, size, op):
    """The shape given to new_zeros/new_ones/new_empty: sizes as arguments, one sequence, or
    the `size` keyword, with torch's TypeErrors."""
    if size is None and not sizes:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    if size is not None and sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    return _shape_arg(sizes if size is None else (size,), op)


class CreationMethods:
    """Tensor methods of this family: copies, fills, new tensors like this one, resizing, and
    moves between devices and dtypes."""

    copy_ = copy_
    fill_ = fill_
    zero_ = zero_
    clone = clone
    contiguous = contiguous
    resize_ = resize_
    resize_as_ = resize_as_

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A tensor of `data`, with this tensor's dtype and device unless given."""
        if isinstance(data, Tensor):
            warn(_COPY_CONSTRUCT.format("tensor.new_tensor"))
        return _copied(data, dtype or self.dtype, device or self.device, requires_grad)

    def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """Zeros of `size`, with this tensor's dtype and device unless given."""
        return zeros(_new_size(sizes, size, "new_zeros"), dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """Ones of `size`, with this tensor's dtype and device unless given."""
        return ones(_new_size(sizes, size, "new_ones"), dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)

    def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """An uninitialized tensor of `size`, with this tensor's dtype and device unless given."""
        return empty(_new_size(sizes, size, "new_empty"), dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """`fill_value` everywhere in `size`, with this tensor's dtype and device unless given."""
        return _full(size, fill_value, dtype or self.dtype, device or self.device,
                     requires_grad, "new_full")

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(other)`; self if nothing changes."""
        if not kwargs and len(args) == 1 and args[0].__class__ is Dtype:  # to(dtype): the usual
            return to_device_and_dtype(self, None, args[0])
        device, dtype, non_blocking, copy, memory_format = parse_to(*args, **kwargs)
        return to_device_and_dtype(self, device, dtype, non_blocking, copy, memory_format)

    def cpu(self, memory_format=None):
        """This tensor on the CPU (itself if already there)."""
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """This tensor on a CUDA device (the current one unless given)."""
        if device is not None:
            device = Device("cuda", device if isinstance(device, int) else Device(device).index)
        return self.to("cuda" if device is None else device, non_blocking=non_blocking,
                       memory_format=memory_format)

    def float(self):
        """`self.to(genesis.float32)`."""
        return self.to(dtypes.float32)

    def double(self):
        """`self.to(genesis.float64)`."""
        return self.to(dtypes.float64)

    def half(self):
        """`self.to(genesis.float16)`."""
        return self.to(dtypes.float16)

    def bfloat16(self):
        """`self.to(genesis.bfloat16)`."""
        return self.to(dtypes.bfloat16)

    def long(self):
        """`self.to(genesis.int64)`."""
        return self.to(dtypes.int64)

    def int(self):
        """`self.to(genesis.int32)`."""
        return self.to(dtypes.int32)

    def short(self):
        """`self.to(genesis.int16)`."""
        return self.to(dtypes.int16)

    def char(self):
        """`self.to(genesis.int8)`."""
        return self.to(dtypes.int8)

    def byte(self):
        """`self.to(genesis.uint8)`."""
        return self.to(dtypes.uint8)

    def bool(self):
        """`self.to(genesis.bool)`."""
        return self.to(dtypes.bool_)


__all__ = ["tensor", "as_tensor", "from_numpy", "frombuffer", "empty", "zeros", "ones", "full",
           "empty_like", "zeros_like", "ones_like", "full_like", "eye", "arange", "linspace",
           "logspace", "clone", "resize_as_"]
