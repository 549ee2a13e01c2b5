"""Elementwise ops of three operands: where, clamp (with tensor or scalar bounds), lerp, and
addcmul/addcdiv rounded once."""

import numpy as np

from ... import dtypes
from ...autograd.function import Function, name_node
from ...dispatch import kernel
from ...tensor import Tensor
from ..autocast import autocast_policy
from ..common import broadcast_data, broadcast_shapes, wrap
from ..creation import full
from .core import (_check_tensors, _device, _grad, _operand, _restore, _save_operands, _shape,
                   category, elementwise, invalid_arguments, reject, scalar_first)


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        if not isinstance(cond, Tensor) or cond.dtype is not dtypes.bool_:
            raise RuntimeError(f"where: expected condition to be a bool tensor, got "
                               f"{getattr(cond, 'dtype', type(cond).__name__)}")
        ctx.save_for_backward(cond)
        dtype = dtypes.result_type(a, b)
        device = _device("where", (cond, a, b))
        shape = broadcast_shapes(tuple(cond.shape), _shape(a), _shape(b), op="where")
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = full((), a, dtype=dtype, device=device)
        args = [broadcast_data(cond, shape)] + [_operand("where", i, x, dtype, shape, device)
                                                for i, x in enumerate((a, b), 1)]
        return wrap(kernel("where", device.type)(*args), device, dtype)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        ga = _grad(ctx, 1, where(cond, g, 0.0)) if ctx.needs_input_grad[1] else None
        gb = _grad(ctx, 2, where(cond, 0.0, g)) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def where(condition, input=None, other=None):
    """`input` where `condition` holds, else `other`; `where(cond)` is `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        from ..index import nonzero
        return nonzero(condition, as_tuple=True)
    return Where.apply(condition, input, other)


class Clamp(Function):
    """min(max(x, low), high); NaN stays NaN. The gradient goes to whichever operand is output."""

    @staticmethod
    def forward(ctx, x, low, high):
        if low is None and high is None:
            raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
        bounds = [v for v in (x, low, high) if v is not None]
        dtype = dtypes.result_type(*bounds)
        if len(bounds) == 3 or not all(isinstance(v, Tensor) for v in bounds):
            reject("clamp", dtype, "b")
        for v in (low, high):
            _check_fits("clamp", dtype, v)
        shape = broadcast_shapes(*(_shape(v) for v in bounds), op="clamp")
        device = _device("clamp", bounds)
        args = [None if v is None else _operand("clamp", i, v, dtype, shape, device)
                for i, v in enumerate((x, low, high))]
        out = wrap(kernel("clamp", device.type)(*args), device, dtype)
        _save_operands(ctx, x, low, high)
        return out

    @staticmethod
    def backward(ctx, g):
        x, low, high = _restore(ctx)
        keep = [c for c in ((x >= low) if low is not None else None,
                            (x <= high) if high is not None else None) if c is not None]
        keep = keep[0] if len(keep) == 1 else keep[0] & keep[1]
        g_low = g_high = None
        if ctx.needs_input_grad[1]:
            takes = x < low if high is None else (x < low) & (low < high)
            g_low = _grad(ctx, 1, where(takes, g, 0.0))
        if ctx.needs_input_grad[2]:
            takes = x > high if low is None else (x > high) | (high < low)
            g_high = _grad(ctx, 2, where(takes, g, 0.0))
        return _grad(ctx, 0, where(keep, g, 0.0)), g_low, g_high


def _check_fits(op, dtype, value):
    """RuntimeError (as PyTorch) for a Python scalar argument outside an integer dtype's range;
    unsigned types also take negatives down to -max (two's complement wraparound)."""
    if category(dtype) != "i" or isinstance(value, (Tensor, type(None))):
        return
    info = np.iinfo(dtype.numpy_dtype)
    lowest = info.min if dtype.is_signed else -int(info.max)
    if not lowest <= value <= info.max:
        raise RuntimeError(f"{op}: value {value} cannot be converted to type {dtype.name} "
                           "without overflow")


def clamp(input, min=None, max=None):
    """input limited to [min, max]; either bound may be None, a number or a tensor."""
    tensor_bound = isinstance(min, Tensor) or isinstance(max, Tensor)
    return name_node(Clamp.apply(input, min, max), f"ClampBackward{0 if tensor_bound else 1}")


clip = clamp


def clamp_min(input, min):
    """input limited from below by `min`."""
    return name_node(Clamp.apply(input, min, None),
                     f"ClampMinBackward{1 if isinstance(min, Tensor) else 0}")


def clamp_max(input, max):
    """input limited from above by `max`."""
    return name_node(Clamp.apply(input, None, max),
                     f"ClampMaxBackward{1 if isinstance(max, Tensor) else 0}")


class Lerp(Function):
    @staticmethod
    def forward(ctx, start, end, weight):
        _save_operands(ctx, start, end, weight)
        dtype = dtypes.result_type(start, end)
        if not dtype.is_floating_point:
            reject("lerp_kernel_scalar", dtype, "bi")
        return elementwise("lerp", start, end, weight, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        start, end, weight = _restore(ctx)
        return (_grad(ctx, 0, g * (1 - weight)), _grad(ctx, 1, g * weight),
                _grad(ctx, 2, g * (end - start)))


def lerp(input, end, weight):
    """input + weight * (end - input); `end`, and a `weight` tensor of one or more dims, of
    input's dtype (torch's check: a 0-d weight may have another)."""
    for name, t in (("end", end), ("weight", weight)):
        if (isinstance(t, Tensor) and isinstance(input, Tensor) and t.dtype is not input.dtype
                and (name == "end" or t.ndim)):
            raise RuntimeError(f"lerp: expected dtype {dtypes.type_meta_name(input.dtype)} for "
                               f"`{name}` but got dtype {dtypes.type_meta_name(t.dtype)}")
    return Lerp.apply(input, end, weight)


class AddcOp(Function):
    """input + value * t1 * t2 (addcmul) or input + value * t1 / t2 (addcdiv), rounded once."""

    @staticmethod
    def forward(ctx, x, t1, t2, value, op):
        _check_tensors(op, x, t1, t2)
        dtype = dtypes.result_type(x, t1, t2)
        if op == "addcdiv" and not dtype.is_floating_point:
            raise RuntimeError("addcdiv: Integer division with addcdiv is no longer supported, and "
                               "in a future release addcdiv will perform a true division of "
                               "tensor1 and tensor2.")
        if isinstance(value, float) and not dtype.is_floating_point:
            raise RuntimeError(f"{op}: For integral input tensors, argument value must not be a "
                               "floating point number.")
        _save_operands(ctx, x, t1, t2)
        ctx.value, ctx.op = value, op
        return elementwise(op, x, t1, t2, dtype=dtype, value=value)

    @staticmethod
    def backward(ctx, g):
        x, t1, t2 = _restore(ctx)
        gv = g * ctx.value
        if ctx.op == "addcmul":
            g1, g2 = gv * t2, gv * t1
        else:
            g1, g2 = gv / t2, -gv * t1 / (t2 * t2)
        return _grad(ctx, 0, g), _grad(ctx, 1, g1), _grad(ctx, 2, g2), None, None


def _addc(op, input, tensor1, tensor2, deprecated, value):
    """addcmul/addcdiv from today's arguments or PyTorch's deprecated `(input, value, tensor1,
    tensor2)`."""
    if deprecated or not isinstance(tensor1, Tensor):
        (tensor1, tensor2), value = scalar_first(op, "value", tensor1, (tensor2,) + deprecated,
                                                 ("tensor1", "tensor2"))
    elif tensor2 is None:
        raise invalid_arguments(op, (tensor1,), "value", ("tensor1", "tensor2"))
    return name_node(AddcOp.apply(input, tensor1, tensor2, value, op), f"{op.title()}Backward0")


@autocast_policy("addcmul")
def addcmul(input, tensor1, tensor2=None, *deprecated, value=1):
    """input + value * tensor1 * tensor2."""
    return _addc("addcmul", input, tensor1, tensor2, deprecated, value)


@autocast_policy("addcdiv")
def addcdiv(input, tensor1, tensor2=None, *deprecated, value=1):
    """input + value * tensor1 / tensor2."""
    return _addc("addcdiv", input, tensor1, tensor2, deprecated, value)


__all__ = [
    "lerp", "addcmul", "addcdiv", "clamp", "clip", "clamp_min", "clamp_max", "where"]
