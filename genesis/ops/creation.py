"""Creating tensors: from data (tensor, as_tensor, from_numpy, frombuffer), empty or filled
(empty, zeros, ones, full, eye; fill_ and zero_ in place), and like another (*_like, new_*).

Values are built on the host with numpy where that is simplest (lists, arange, random draws) and
handed to the target device's backend; fills (`zeros`, `full`, `empty`) run on the device itself.
"""

import collections.abc
import numbers

import numpy as np

from .. import dtypes
from .. import memory_formats as formats
from .._warnings import warn, warn_once
from ..device import as_device, factory_device, factory_resolve, resolve
from ..dtypes import dtype as Dtype
from ..dispatch import kernel
from ..tensor import Tensor, filled, fresh
from .copies import copy_, copy_strides
from .inplace import write_fill, write_result
from .size_args import _new_size, _shape_arg, _sizes


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
    """A numpy array of `data` (nested sequences, scalars, arrays, tensors); nested sequences of
    unequal lengths are refused in torch's words (_ragged)."""
    try:
        return _nested_array(data, op)
    except ValueError as e:
        raise ValueError(_ragged(_as_list(data)) or f"{op}: could not build a tensor from "
                         f"ragged nested sequences: {e}") from None


def _nested_array(data, op):
    data = _as_list(data)
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)):
        return np.array([_nested_array(d, op) if isinstance(d, (Tensor, list, tuple))
                         or _as_list(d) is not d else d for d in data])
    if isinstance(data, (np.ndarray, np.generic, numbers.Number)):
        return np.asarray(data)
    if hasattr(data, "__array__") or hasattr(data, "__dlpack__"):
        return np.asarray(data)
    raise TypeError(f"{op}: Could not infer dtype of {type(data).__name__}")


def _ragged(data):
    """torch's words for nested sequences of unequal lengths, the first found depth-first:
    every sequence at a depth must be as long as the first one there ('expected sequence of
    length 2 at dim 1 (got 1)'); None where the lengths agree."""
    lengths, first = [], data
    while isinstance(first, (list, tuple)):
        lengths.append(len(first))
        first = first[0] if first else None

    def walk(seq, dim):
        if len(seq) != lengths[dim]:
            return f"expected sequence of length {lengths[dim]} at dim {dim} (got {len(seq)})"
        inner = (walk(item, dim + 1) for item in seq
                 if dim + 1 < len(lengths) and isinstance(item, (list, tuple)))
        return next((text for text in inner if text), None)

    return walk(data, 0) if lengths else None


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
    for name, size in (("n", n), ("m", m)):
        if size < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {size}")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = np.eye(n, m, dtype=dtype.numpy_dtype)
    return _from_host(values, factory_device(device), dtype, requires_grad)


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


class CreationMethods:
    """Tensor methods of this family: fills in place and new tensors like this one."""

    fill_ = fill_
    zero_ = zero_

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


__all__ = ["tensor", "as_tensor", "from_numpy", "frombuffer", "empty", "zeros", "ones", "full",
           "empty_like", "zeros_like", "ones_like", "full_like", "eye"]
