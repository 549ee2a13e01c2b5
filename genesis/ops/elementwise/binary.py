"""The two-operand elementwise ops: arithmetic with PyTorch's promotion and rounding modes,
powers, extrema, the float binary functions (atan2, hypot, logaddexp, xlogy, copysign),
comparisons, and the logical and bitwise ops."""

import math

from ... import dtypes
from ...autograd.function import Function, name_node, records
from ...tensor import Tensor, filled
from ..autocast import autocast_policy
from ..common import cast, rounded_scalar
from .core import (_check_tensors, _float_dtype, _grad, _is_bool, _restore, _save_operands,
                   elementwise, reject, scalar_first)
from .selection import where
from .unary import exp, floor, isnan, log, trunc


def _scaled_add(op, a, b, alpha):
    """`a + alpha * b` (op "add") or `a - alpha * b` ("sub") for alpha != 1. PyTorch's kernels
    read alpha in the op's dtype (rounded to a half type) and, for floating tensors, round the
    sum once: one addcmul kernel. A float alpha is an error for integral results."""
    dtype = dtypes.result_type(a, b)
    if isinstance(alpha, float) and not dtype.is_floating_point:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    if dtype.is_floating_point:
        alpha = rounded_scalar(dtype, alpha)
        if isinstance(a, Tensor):
            return elementwise("addcmul", a, b, 1.0, dtype=dtype,
                               value=alpha if op == "add" else -alpha)
    return elementwise(op, a, elementwise("mul", b, alpha, dtype=dtype), dtype=dtype)


def _add_sub(op, a, b, alpha):
    """`a + alpha * b` (op "add") or `a - alpha * b` ("sub"), with PyTorch's errors."""
    if op == "sub" and (_is_bool(a) or _is_bool(b)):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("sub: Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    if alpha == 1:
        return elementwise(op, a, b)
    return _scaled_add(op, a, b, alpha)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return _add_sub("add", a, b, alpha)

    @staticmethod
    def backward(ctx, g):
        gb = g if ctx.alpha == 1 else g * ctx.alpha
        return _grad(ctx, 0, g), _grad(ctx, 1, gb), None


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return _add_sub("sub", a, b, alpha)

    @staticmethod
    def backward(ctx, g):
        return _grad(ctx, 0, g), _grad(ctx, 1, -g * ctx.alpha), None


class Mul(Function):
    """a * b. Each operand is saved only where the other one's gradient needs it, and in
    PyTorch's order (saved-tensor hooks see b, then a), so `x * 0.5` keeps no reference to `x`
    and `x` may change in place afterwards."""

    saved_names = ("other", "self")

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad[:2]
        _save_operands(ctx, b if need_a else None, a if need_b else None)
        return elementwise("mul", a, b)

    @staticmethod
    def backward(ctx, g):
        b, a = _restore(ctx)
        need_a, need_b = ctx.needs_input_grad[:2]
        return (_grad(ctx, 0, g * b) if need_a else None,
                _grad(ctx, 1, g * a) if need_b else None)


def _div(a, b, rounding_mode):
    """True division (floating result), or rounded "floor" / "trunc" division."""
    if rounding_mode is None:
        return elementwise("div", a, b, dtype=_float_dtype(a, b))
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    dtype = dtypes.result_type(a, b)
    reject(f"div_{rounding_mode}", dtype, "b")
    if dtype in dtypes.half_dtypes and not isinstance(b, Tensor):
        # PyTorch's CPU kernel divides a half type by a Python scalar in float32, rounding once
        return cast(elementwise(f"{rounding_mode}_divide", a, b, dtype=dtypes.float32), dtype)
    return elementwise(f"{rounding_mode}_divide", a, b, dtype=dtype)


class Div(Function):
    """a / b. The dividend is saved only where the divisor's gradient needs it, in PyTorch's
    order (b, then a). Rounded ("trunc", "floor") it is a step function: zero gradients."""

    saved_names = ("other", "self")

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        _save_operands(ctx, b, a if ctx.needs_input_grad[1] else None)
        ctx.rounded = rounding_mode is not None
        if ctx.rounded:
            ctx.node_name = "DivBackward2"
        return _div(a, b, rounding_mode)

    @staticmethod
    def backward(ctx, g):
        if ctx.rounded:
            zero = filled(tuple(g.shape), 0, g.dtype, g.device)
            return _grad(ctx, 0, zero), _grad(ctx, 1, zero), None
        b, a = _restore(ctx)
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = _grad(ctx, 0, g / b) if need_a else None
        gb = _grad(ctx, 1, -g * ((a / b) / b)) if need_b else None
        return ga, gb, None


class _NotDifferentiable(Function):
    """An op PyTorch records without a derivative (`name`): its node is NotImplemented, its
    output requires grad, and its backward raises."""
    name = None

    @staticmethod
    def values(a, b):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.node_name = "NotImplemented"
        return cls.values(a, b)

    @classmethod
    def backward(cls, ctx, g):
        raise RuntimeError(f"derivative for aten::{cls.name} is not implemented")


class FloorDivide(_NotDifferentiable):
    """floor(a / b)."""
    name = "floor_divide"

    @staticmethod
    def values(a, b):
        return _div(a, b, "floor")


class Heaviside(_NotDifferentiable):
    """0 where a < 0, b where a == 0, 1 where a > 0."""
    name = "heaviside"

    @staticmethod
    def values(a, b):
        return elementwise("heaviside", a, b)


def _pow(a, b, dtype=None):
    """a ** b computed in `dtype` (default: promoted), with PyTorch's errors."""
    dtype = dtype or dtypes.result_type(a, b)
    if isinstance(b, Tensor):
        reject("pow", dtype, "b")
    elif not dtype.is_floating_point and b < 0:
        raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
    return elementwise("pow", a, b, dtype=dtype)


# PyTorch's pow node for (base is a tensor, exponent is a tensor): Tensor_Scalar, Tensor_Tensor,
# Scalar (a number to a tensor's power)
_POW_OVERLOADS = {(True, False): 0, (True, True): 1, (False, True): 2}


class Pow(Function):
    """a ** b. d/da = b a^(b-1) (0 where b == 0); d/db = a^b log a (0 where a == 0 and b >= 0).

    The gradients multiply in PyTorch's order (pow_backward: g * (b * a^(b-1))), so half types
    round at the same points. `float_power` is the same function computed in float64.
    """

    saved_names = ("self", "exponent", "result")  # grad_fn._saved_self ...

    @staticmethod
    def forward(ctx, a, b, dtype=None):
        out = _pow(a, b, dtype)
        _save_operands(ctx, a, b, out)
        ctx.node_name = f"PowBackward{_POW_OVERLOADS[isinstance(a, Tensor), isinstance(b, Tensor)]}"
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = _restore(ctx)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = where(b == 0, 0.0, g * (b * a ** (b - 1))) if isinstance(b, Tensor) \
                else (g * 0 if b == 0 else g * (b * a ** (b - 1)))
            ga = _grad(ctx, 0, ga)
        if ctx.needs_input_grad[1]:
            if isinstance(a, Tensor):
                gb = g * where((a == 0) & (b >= 0), 0.0, out * log(a))
            else:
                gb = g * 0 if a == 0 else g * (out * math.log(a))
            gb = _grad(ctx, 1, gb)
        return ga, gb, None


class MaxMin(Function):
    """`maximum`/`minimum` (NaN wins; ties split the gradient) and `fmax`/`fmin` (NaN loses;
    ties send it all to the first input), with PyTorch's gradients."""

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.op = op
        ctx.save_for_backward(a, b)
        return elementwise(op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        larger = ctx.op in ("maximum", "fmax")
        a_wins = (a > b) if larger else (a < b)
        tie = a == b
        if ctx.op in ("fmax", "fmin"):
            a_wins = a_wins | tie | isnan(b)
            ga, gb = where(a_wins, g, 0.0), where(a_wins, 0.0, g)
        else:
            half = g * 0.5
            ga = where(a_wins, g, where(tie, half, 0.0))
            gb = where(a_wins | tie, where(tie, half, 0.0), g)
        return _grad(ctx, 0, ga), _grad(ctx, 1, gb), None


def _remainder(a, b, op):
    """remainder or fmod of `a` by `b` (bool rejected, as in PyTorch)."""
    reject(op, dtypes.result_type(a, b), "b")
    return elementwise(op, a, b)


class Remainder(Function):
    """a - b * floor(a / b) (remainder) or a - b * trunc(a / b) (fmod); d/da = 1."""

    @staticmethod
    def forward(ctx, a, b, op):
        _save_operands(ctx, a, b)
        ctx.op = op
        return _remainder(a, b, op)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        gb = None
        if ctx.needs_input_grad[1]:
            quotient = floor(a / b) if ctx.op == "remainder" else trunc(a / b)
            gb = _grad(ctx, 1, -g * quotient)
        return _grad(ctx, 0, g), gb, None


def _float_binary(a, b, op):
    """Float binary op `op` of `a` and `b`, integers computed in the default float dtype."""
    dtype = _float_dtype(a, b)
    if op in ("hypot", "logaddexp"):
        reject(op, dtypes.result_type(a, b), "bi")
    return elementwise(op, a, b, dtype=dtype)


class FloatBinary(Function):
    """Binary ops whose integer inputs compute in the default float: atan2, hypot, logaddexp,
    xlogy, copysign. `BINARY_GRADS[op]` gives (d/da, d/db) times g from (g, a, b, out)."""

    @staticmethod
    def forward(ctx, a, b, op):
        out = _float_binary(a, b, op)
        ctx.op, ctx.node_name = op, f"{op.title()}Backward0"
        _save_operands(ctx, a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = _restore(ctx)
        grad_a, grad_b = BINARY_GRADS[ctx.op]
        ga = _grad(ctx, 0, grad_a(g, a, b, out)) if ctx.needs_input_grad[0] else None
        gb = _grad(ctx, 1, grad_b(g, a, b, out)) if ctx.needs_input_grad[1] else None
        return ga, gb, None


def _log(v):
    return log(v) if isinstance(v, Tensor) else math.log(v)


def _copysign_grad(g, a, b, out):
    ratio = out / a
    return g * where(a == 0, 0.0, ratio) if isinstance(a, Tensor) else g * 0


BINARY_GRADS = {
    "atan2": (lambda g, a, b, out: g * b / (a * a + b * b),
              lambda g, a, b, out: -g * a / (a * a + b * b)),
    "hypot": (lambda g, a, b, out: g * a / out, lambda g, a, b, out: g * b / out),
    "logaddexp": (lambda g, a, b, out: g * exp(a - out), lambda g, a, b, out: g * exp(b - out)),
    "xlogy": (lambda g, a, b, out: where((a == 0) & (b <= 0), 0.0, g * _log(b)),
              lambda g, a, b, out: g * a / b),
    "copysign": (_copysign_grad, lambda g, a, b, out: g * 0),
}


# The ops compute their values alone, outside the graph, when the call is not recorded (their
# results are never views, so nothing else would mark them).

def _run(function, values, a, b, *options):
    """`function.apply(a, b, *options)` when the call is recorded, else `values` alone."""
    if records(a, b):
        return function.apply(a, b, *options)
    return values(a, b, *options)


def add(input, other, *deprecated, alpha=1):
    """input + alpha * other, with broadcasting and type promotion (PyTorch's deprecated
    `add(input, alpha, other)` too)."""
    if deprecated:
        (other,), alpha = scalar_first("add", "alpha", other, deprecated, ("other",))
    if records(input, other):
        return Add.apply(input, other, alpha)
    return _add_sub("add", input, other, alpha)


def sub(input, other, *deprecated, alpha=1):
    """input - alpha * other, with broadcasting and type promotion (PyTorch's deprecated
    `sub(input, alpha, other)` too)."""
    if deprecated:
        (other,), alpha = scalar_first("sub", "alpha", other, deprecated, ("other",))
    if records(input, other):
        return Sub.apply(input, other, alpha)
    return _add_sub("sub", input, other, alpha)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (Python's `1 - x`), its node named as PyTorch's rsub's."""
    overload = 0 if isinstance(other, Tensor) else 1
    return name_node(sub(other, input, alpha=alpha), f"RsubBackward{overload}")


def mul(input, other):
    """input * other, with broadcasting and type promotion."""
    if records(input, other):
        return Mul.apply(input, other)
    return elementwise("mul", input, other)


def div(input, other, *, rounding_mode=None):
    """input / other: true division, or rounded "trunc" or "floor" (integers stay integers)."""
    if records(input, other):
        return Div.apply(input, other, rounding_mode)
    return _div(input, other, rounding_mode)


def true_divide(input, other):
    """input / other, always true division."""
    return div(input, other)


def floor_divide(input, other):
    """floor(input / other), as Python's `//`."""
    return _run(FloorDivide, lambda a, b: _div(a, b, "floor"), input, other)


@autocast_policy("pow")
def pow(input, exponent):
    """input ** exponent; either may be a Python number."""
    return _run(Pow, _pow, input, exponent)


def float_power(input, exponent):
    """`input ** exponent` computed in float64, as PyTorch's."""
    return _run(Pow, _pow, input, exponent, dtypes.float64)


def remainder(input, other):
    """input - other * floor(input / other): the sign of `other`, as Python's `%`."""
    return _run(Remainder, _remainder, input, other, "remainder")


def fmod(input, other):
    """input - other * trunc(input / other): the sign of `input`, as C's fmod."""
    return _run(Remainder, _remainder, input, other, "fmod")


def _max_min(op, input, other):
    _check_tensors(op, input, other)
    if records(input, other):
        return name_node(MaxMin.apply(input, other, op), f"{op.title()}Backward0")
    return elementwise(op, input, other)


def maximum(input, other):
    """The larger of two tensors, elementwise; NaN wins."""
    return _max_min("maximum", input, other)


def minimum(input, other):
    """The smaller of two tensors, elementwise; NaN wins."""
    return _max_min("minimum", input, other)


def fmax(input, other):
    """The larger of two tensors, elementwise; NaN loses."""
    return _max_min("fmax", input, other)


def fmin(input, other):
    """The smaller of two tensors, elementwise; NaN loses."""
    return _max_min("fmin", input, other)


@autocast_policy("atan2")
def atan2(input, other):
    """The angle of (other, input); integers compute in the default float dtype."""
    _check_tensors("atan2", input, other)
    return _run(FloatBinary, _float_binary, input, other, "atan2")


def hypot(input, other):
    """sqrt(input**2 + other**2); integers compute in the default float dtype."""
    _check_tensors("hypot", input, other)
    return _run(FloatBinary, _float_binary, input, other, "hypot")


def logaddexp(input, other):
    """log(exp(input) + exp(other)); integers compute in the default float dtype."""
    _check_tensors("logaddexp", input, other)
    return _run(FloatBinary, _float_binary, input, other, "logaddexp")


def xlogy(input, other):
    """input * log(other), 0 where input is 0; integers compute in the default float dtype."""
    return _run(FloatBinary, _float_binary, input, other, "xlogy")


def copysign(input, other):
    """|input| with the sign of other; integers compute in the default float dtype."""
    return _run(FloatBinary, _float_binary, input, other, "copysign")


arctan2 = atan2


def heaviside(input, values):
    """0 where input < 0, `values` where input == 0, 1 where input > 0 (recorded without a
    derivative, as PyTorch: a backward through it raises)."""
    _check_tensors("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _run(Heaviside, Heaviside.values, input, values)


subtract, multiply, divide = sub, mul, div



def eq(input, other):
    """input == other, elementwise with broadcasting; a bool tensor."""
    return elementwise("eq", input, other)


def ne(input, other):
    """input != other, elementwise with broadcasting; a bool tensor."""
    return elementwise("ne", input, other)


def lt(input, other):
    """input < other, elementwise with broadcasting; a bool tensor."""
    return elementwise("lt", input, other)


def le(input, other):
    """input <= other, elementwise with broadcasting; a bool tensor."""
    return elementwise("le", input, other)


def gt(input, other):
    """input > other, elementwise with broadcasting; a bool tensor."""
    return elementwise("gt", input, other)


def ge(input, other):
    """input >= other, elementwise with broadcasting; a bool tensor."""
    return elementwise("ge", input, other)


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(op, input, other):
    _check_tensors(op, input, other)
    return elementwise(op, input, other, dtype=dtypes.result_type(input, other), kernel_op=op)


def logical_and(input, other):
    """The truth values of input and other, elementwise; a bool tensor."""
    return _logical("logical_and", input, other)


def logical_or(input, other):
    """The truth values of input or other, elementwise; a bool tensor."""
    return _logical("logical_or", input, other)


def logical_xor(input, other):
    """The truth values of input xor other, elementwise; a bool tensor."""
    return _logical("logical_xor", input, other)


def logical_not(input):
    """The truth values of input negated, elementwise; a bool tensor."""
    return elementwise("logical_not", input)


def _bitwise(op, input, other, rejects):
    dtype = dtypes.result_type(input, other)
    reject(op, dtype, rejects)
    return elementwise(op, input, other, dtype=dtype)


def bitwise_and(input, other):
    """input & other, elementwise, for integer or bool tensors."""
    return _bitwise("bitwise_and", input, other, "f")


def bitwise_or(input, other):
    """input | other, elementwise, for integer or bool tensors."""
    return _bitwise("bitwise_or", input, other, "f")


def bitwise_xor(input, other):
    """input ^ other, elementwise, for integer or bool tensors."""
    return _bitwise("bitwise_xor", input, other, "f")


def bitwise_left_shift(input, other):
    """input << other, elementwise, for integer tensors."""
    return _bitwise("bitwise_left_shift", input, other, "fb")


def bitwise_right_shift(input, other):
    """input >> other, elementwise, for integer tensors."""
    return _bitwise("bitwise_right_shift", input, other, "fb")


def bitwise_not(input):
    """~input, elementwise, for integer or bool tensors."""
    reject("bitwise_not", input.dtype, "f")
    return elementwise("bitwise_not", input)


__all__ = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "float_power", "remainder",
    "fmod", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot", "logaddexp",
    "xlogy", "copysign", "heaviside", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "subtract", "multiply", "divide", "rsub"]
