"""Copies of a tensor, as it is or converted: to another device, dtype or memory format
(Tensor.to and its spellings: cpu, cuda, float...), clone, contiguous, and copy_ into another."""

from .. import dtypes
from .. import memory_formats as formats
from ..autograd.function import Function, records
from ..autograd.grad_mode import is_grad_enabled
from ..device import resolve
from ..device import device as Device
from ..dtypes import dtype as Dtype
from ..dispatch import kernel
from ..tensor import Tensor
from .common import broadcast_shapes, call, contiguous_strides, wrap
from .inplace import write_result


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


class CopyMethods:
    """Tensor methods of this family: copies (clone, contiguous, copy_) and moves between devices
    and dtypes (to and its spellings)."""

    copy_ = copy_
    clone = clone
    contiguous = contiguous

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


__all__ = ["clone"]
