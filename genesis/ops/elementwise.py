"""Elementwise math with broadcasting, Python scalars and PyTorch's type promotion.

Each op is a Function whose forward broadcasts and casts its operands once (here, for every
device) and calls one kernel, and whose backward is written with genesis ops. Unary ops are
declared in a table next to their derivative, so the math is visible in one place. Dtypes that
PyTorch does not implement an op for are rejected here, before any kernel runs, with the
exception PyTorch raises (NotImplementedError, a RuntimeError).
"""

import math

import numpy as np

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..dispatch import kernel
from ..tensor import Tensor
from .autocast import autocast_policy
from .common import (SCALAR_TYPES, broadcast_data, broadcast_shapes, cast, scalar_for, sum_to,
                     wrap)
from .creation import full
from .inplace import snapshot_for_graph, write_elementwise, write_result


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else ()


def _device(op, operands):
    """The device of the operands; 0-d CPU tensors ride along with GPU ones, as in PyTorch."""
    devices = {x.device for x in operands if isinstance(x, Tensor)
               and not (x.ndim == 0 and x.device.type == "cpu")}
    if not devices:
        return next(x.device for x in operands if isinstance(x, Tensor))
    if len(devices) > 1:
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at "
                           f"least two devices, {' and '.join(sorted(map(str, devices)))}!")
    return devices.pop()


def _operand(x, dtype, shape, device):
    """A kernel argument: a Python scalar, or a backend array cast to `dtype` viewed as `shape`."""
    if not isinstance(x, Tensor):
        return scalar_for(dtype, x)
    if x.device != device:
        return scalar_for(dtype, x.item())
    return broadcast_data(cast(x, dtype), shape)


def _check_operands(op, operands):
    if not any(isinstance(x, Tensor) for x in operands):
        raise TypeError(f"{op}(): expected at least one Tensor operand")
    for x in operands:
        if not isinstance(x, (Tensor,) + SCALAR_TYPES):
            raise TypeError(f"{op}(): expected Tensor or Number operands, got {type(x).__name__}")


def _uniform(operands):
    """(first tensor, kernel arguments) when the operands are tensors of one shape, dtype and
    device, and Python scalars that keep that dtype (a float with a floating tensor, an int with
    a non-bool one, a bool); else (None, None).

    Such operands need no promotion, cast or broadcast: the fast path of the hot small ops. The
    arguments are the tensors' arrays and the scalars as a kernel of that dtype reads them.
    """
    first, args = None, []
    floats = ints = bools = False
    for x in operands:
        if isinstance(x, Tensor):
            if first is None:
                first = x
            elif not (x.dtype is first.dtype
                      and (x.device is first.device or x.device == first.device)
                      and x._data.shape == first._data.shape):
                return None, None
            args.append(x._data)
            continue
        kind = x.__class__
        if kind is float:
            floats = True
        elif kind is int:
            ints = True
        elif kind is bool:
            bools = True
        else:
            return None, None
        args.append(x)
    if first is None:
        return None, None
    dtype = first.dtype
    if floats and not dtype.is_floating_point or ints and dtype is dtypes.bool_:
        return None, None
    if bools or ints and dtype.is_floating_point:
        args = [scalar_for(dtype, x) if type(x) in SCALAR_TYPES else a
                for x, a in zip(operands, args)]
    return first, args


def elementwise(op, *operands, dtype=None, kernel_op=None, **kwargs):
    """Run kernel `op` on `operands` broadcast together, computed in `dtype` (default: promoted)."""
    first, args = _uniform(operands)
    if first is not None and (dtype is None or dtype is first.dtype):
        device = first.device
        return wrap(kernel(kernel_op or op, device.type)(*args, **kwargs), device)
    _check_operands(op, operands)
    device = _device(op, operands)
    dtype = dtype or dtypes.result_type(*operands)
    shape = broadcast_shapes(*(_shape(x) for x in operands), op=op)
    args = [_operand(x, dtype, shape, device) for x in operands]
    data = kernel(kernel_op or op, device.type)(*args, **kwargs)
    return wrap(data, device)


def category(dtype):
    """"b" for bool, "i" for integers, "f" for floating point."""
    return "b" if dtype is dtypes.bool_ else ("f" if dtype.is_floating_point else "i")


def reject(op, dtype, categories):
    """NotImplementedError, as PyTorch raises, when `dtype`'s category is in `categories`."""
    if category(dtype) in categories:
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype.name}'")


def _float_dtype(*operands):
    """Promoted dtype, made floating (integers and bools compute in the default float)."""
    dtype = dtypes.result_type(*operands)
    return dtype if dtype.is_floating_point else dtypes.get_default_dtype()


def _grad(ctx, i, g):
    """Input i's gradient `g` summed to the input's shape, or None when input i needs none."""
    shape = ctx.input_shape(i)
    return None if shape is None else sum_to(g, shape)


def _save_operands(ctx, *operands):
    """Save tensor operands for backward and remember the Python scalars beside them."""
    ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in operands))
    ctx.scalars = operands


def _restore(ctx):
    """The saved operands, with Python scalars put back in place of missing tensors."""
    saved = ctx.saved_tensors
    return tuple([s if s is not None else scalar for s, scalar in zip(saved, ctx.scalars)])


def _is_bool(x):
    return (isinstance(x, Tensor) and x.dtype is dtypes.bool_) or isinstance(x, bool)


def _scaled(op, b, alpha, dtype):
    """`alpha * b` for add/sub (alpha != 1); a float alpha is an error for integral results, as
    in PyTorch."""
    if isinstance(alpha, float) and not dtype.is_floating_point:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    return elementwise("mul", b, alpha, dtype=dtype)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        if alpha == 1:
            return elementwise("add", a, b)
        dtype = dtypes.result_type(a, b)
        return elementwise("add", a, _scaled("add", b, alpha, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        gb = g if ctx.alpha == 1 else g * ctx.alpha
        return _grad(ctx, 0, g), _grad(ctx, 1, gb), None


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        if _is_bool(a) or _is_bool(b):
            raise RuntimeError("sub: Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        ctx.alpha = alpha
        if alpha == 1:
            return elementwise("sub", a, b)
        dtype = dtypes.result_type(a, b)
        return elementwise("sub", a, _scaled("sub", b, alpha, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        return _grad(ctx, 0, g), _grad(ctx, 1, -g * ctx.alpha), None


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        _save_operands(ctx, a, b)
        return elementwise("mul", a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        return _grad(ctx, 0, g * b), _grad(ctx, 1, g * a)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        _save_operands(ctx, a, b)
        if rounding_mode is None:
            return elementwise("div", a, b, dtype=_float_dtype(a, b))
        if rounding_mode not in ("floor", "trunc"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                             f"but found '{rounding_mode}'")
        dtype = dtypes.result_type(a, b)
        reject(f"div_{rounding_mode}", dtype, "b")
        return elementwise(f"{rounding_mode}_divide", a, b, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        ga = _grad(ctx, 0, g / b)
        gb = _grad(ctx, 1, -g * ((a / b) / b))
        return ga, gb, None


class Pow(Function):
    """a ** b. d/da = b a^(b-1) (0 where b == 0); d/db = a^b log a (0 where a == 0 and b >= 0).

    The gradients multiply in PyTorch's order (pow_backward: g * (b * a^(b-1))), so half types
    round at the same points. `float_power` is the same function computed in float64.
    """

    @staticmethod
    def forward(ctx, a, b, dtype=None):
        dtype = dtype or dtypes.result_type(a, b)
        if isinstance(b, Tensor):
            reject("pow", dtype, "b")
        elif not dtype.is_floating_point and b < 0:
            raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
        out = elementwise("pow", a, b, dtype=dtype)
        _save_operands(ctx, a, b, out)
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


class Remainder(Function):
    """a - b * floor(a / b) (remainder) or a - b * trunc(a / b) (fmod); d/da = 1."""

    @staticmethod
    def forward(ctx, a, b, op):
        reject(op, dtypes.result_type(a, b), "b")
        _save_operands(ctx, a, b)
        ctx.op = op
        return elementwise(op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        gb = None
        if ctx.needs_input_grad[1]:
            quotient = floor(a / b) if ctx.op == "remainder" else trunc(a / b)
            gb = _grad(ctx, 1, -g * quotient)
        return _grad(ctx, 0, g), gb, None


class FloatBinary(Function):
    """Binary ops whose integer inputs compute in the default float: atan2, hypot, logaddexp,
    xlogy, copysign. `BINARY_GRADS[op]` gives (d/da, d/db) times g from (g, a, b, out)."""

    @staticmethod
    def forward(ctx, a, b, op):
        dtype = _float_dtype(a, b)
        if op in ("hypot", "logaddexp"):
            reject(op, dtypes.result_type(a, b), "bi")
        out = elementwise(op, a, b, dtype=dtype)
        ctx.op = op
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


def add(input, other, *, alpha=1):
    """input + alpha * other, with broadcasting and type promotion."""
    return Add.apply(input, other, alpha)


def sub(input, other, *, alpha=1):
    """input - alpha * other, with broadcasting and type promotion."""
    return Sub.apply(input, other, alpha)


def mul(input, other):
    """input * other, with broadcasting and type promotion."""
    return Mul.apply(input, other)


def div(input, other, *, rounding_mode=None):
    """input / other: true division, or rounded "trunc" or "floor" (integers stay integers)."""
    return Div.apply(input, other, rounding_mode)


def true_divide(input, other):
    """input / other, always true division."""
    return Div.apply(input, other)


def floor_divide(input, other):
    """floor(input / other), as Python's `//`."""
    return Div.apply(input, other, "floor")


@autocast_policy("pow")
def pow(input, exponent):
    """input ** exponent; either may be a Python number."""
    return Pow.apply(input, exponent)


def float_power(input, exponent):
    """`input ** exponent` computed in float64, as PyTorch's."""
    return Pow.apply(input, exponent, dtypes.float64)


def remainder(input, other):
    """input - other * floor(input / other): the sign of `other`, as Python's `%`."""
    return Remainder.apply(input, other, "remainder")


def fmod(input, other):
    """input - other * trunc(input / other): the sign of `input`, as C's fmod."""
    return Remainder.apply(input, other, "fmod")


def maximum(input, other):
    """The larger of two tensors, elementwise; NaN wins."""
    _check_tensors("maximum", input, other)
    return MaxMin.apply(input, other, "maximum")


def minimum(input, other):
    """The smaller of two tensors, elementwise; NaN wins."""
    _check_tensors("minimum", input, other)
    return MaxMin.apply(input, other, "minimum")


def fmax(input, other):
    """The larger of two tensors, elementwise; NaN loses."""
    _check_tensors("fmax", input, other)
    return MaxMin.apply(input, other, "fmax")


def fmin(input, other):
    """The smaller of two tensors, elementwise; NaN loses."""
    _check_tensors("fmin", input, other)
    return MaxMin.apply(input, other, "fmin")


@autocast_policy("atan2")
def atan2(input, other):
    """The angle of (other, input); integers compute in the default float dtype."""
    _check_tensors("atan2", input, other)
    return FloatBinary.apply(input, other, "atan2")


def hypot(input, other):
    """sqrt(input**2 + other**2); integers compute in the default float dtype."""
    _check_tensors("hypot", input, other)
    return FloatBinary.apply(input, other, "hypot")


def logaddexp(input, other):
    """log(exp(input) + exp(other)); integers compute in the default float dtype."""
    _check_tensors("logaddexp", input, other)
    return FloatBinary.apply(input, other, "logaddexp")


def xlogy(input, other):
    """input * log(other), 0 where input is 0; integers compute in the default float dtype."""
    return FloatBinary.apply(input, other, "xlogy")


def copysign(input, other):
    """|input| with the sign of other; integers compute in the default float dtype."""
    return FloatBinary.apply(input, other, "copysign")


arctan2 = atan2


def heaviside(input, values):
    """0 where input < 0, `values` where input == 0, 1 where input > 0 (not differentiable)."""
    _check_tensors("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return elementwise("heaviside", input, values)


subtract, multiply, divide = sub, mul, div


def _check_tensors(op, *xs):
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument must be Tensor, not {type(x).__name__}")


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


_HALF_DTYPES = (dtypes.float16, dtypes.bfloat16)


class Unary(Function):
    """A unary op given by a `UnarySpec`: forward runs its kernel, backward its derivative
    (for half types a fused one computed in float32 and rounded once, as PyTorch's backward
    kernels do). When no graph of the backward is recorded, a spec with a `backward_kernel`
    computes its gradient in that one kernel instead."""

    @staticmethod
    def forward(ctx, x, spec, kwargs):
        dtype = spec.result_dtype(x.dtype)
        out = elementwise(spec.kernel, x, dtype=dtype, kernel_op=spec.kernel, **kwargs)
        ctx.spec, ctx.kwargs = spec, kwargs
        ctx.node_name = spec.node_name
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        spec = ctx.spec
        if spec.backward_kernel and not is_grad_enabled():
            return elementwise(spec.backward_kernel, g, y if spec.from_output else x), None, None
        if x.dtype not in _HALF_DTYPES or not spec.fused:
            return spec.derivative(g, x, y, **ctx.kwargs), None, None
        wide = dtypes.float32
        grad = spec.derivative(g.to(wide), x.to(wide), y.to(wide), **ctx.kwargs)
        return grad.to(x.dtype), None, None


class UnarySpec:
    """How a unary op runs: its kernel, derivative, and which input dtypes it takes.

    `promote`: integer and bool inputs compute in the default float dtype. `rejects`: dtype
    categories ("b", "i", "f") that raise NotImplementedError, as in PyTorch. `fused`: PyTorch
    computes the derivative in one kernel, so half types compute it in float32, rounded once.
    `backward_kernel`: the binary kernel (gradient, x, or y with `from_output`) giving the same
    derivative in one launch, as PyTorch's tanh_backward, gelu_backward... do.
    """

    __slots__ = ("name", "kernel", "derivative", "promote", "rejects", "fused",
                 "backward_kernel", "from_output", "node_name")

    def __init__(self, name, derivative, promote=True, rejects="", kernel=None, fused=False,
                 backward_kernel=None, from_output=False):
        self.name, self.kernel = name, kernel or name
        self.derivative, self.promote, self.rejects = derivative, promote, rejects
        self.fused = fused
        self.backward_kernel, self.from_output = backward_kernel, from_output
        self.node_name = "".join(w.capitalize() for w in name.split("_")) + "Backward0"

    def result_dtype(self, dtype):
        reject(self.name, dtype, self.rejects)
        if self.promote and not dtype.is_floating_point:
            return dtypes.get_default_dtype()
        return dtype

    def __call__(self, input, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{self.name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        return Unary.apply(input, self, kwargs)


def zero_grad(g, x, y, **_):
    return g * 0


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# derivative(g, x, y) gives dL/dx from dL/dy = g, the input x and the output y, in the order of
# operations of PyTorch's formula (derivatives.yaml), so half types round as PyTorch's do; `fused`
# marks those PyTorch computes in one backward kernel (in float32 for half types).
_UNARY = [
    UnarySpec("neg", lambda g, x, y: -g, promote=False),
    UnarySpec("abs", lambda g, x, y: g * sgn(x), promote=False, rejects="b"),
    UnarySpec("exp", lambda g, x, y: g * y),
    UnarySpec("exp2", lambda g, x, y: g * y * math.log(2.0)),
    UnarySpec("expm1", lambda g, x, y: g * (y + 1)),
    UnarySpec("log", lambda g, x, y: g / x),
    UnarySpec("log2", lambda g, x, y: g / (x * math.log(2.0))),
    UnarySpec("log10", lambda g, x, y: g / (x * math.log(10.0))),
    UnarySpec("log1p", lambda g, x, y: g / (x + 1)),
    UnarySpec("sqrt", lambda g, x, y: g / (2 * y)),
    UnarySpec("rsqrt", lambda g, x, y: -0.5 * g * y ** 3),
    UnarySpec("sin", lambda g, x, y: g * cos(x)),
    UnarySpec("cos", lambda g, x, y: g * -sin(x)),
    UnarySpec("tan", lambda g, x, y: g * (1 + y ** 2)),
    UnarySpec("asin", lambda g, x, y: g * rsqrt(-x * x + 1)),
    UnarySpec("acos", lambda g, x, y: g * -rsqrt(-x * x + 1)),
    UnarySpec("atan", lambda g, x, y: g / (x * x + 1)),
    UnarySpec("sinh", lambda g, x, y: g * cosh(x)),
    UnarySpec("cosh", lambda g, x, y: g * sinh(x)),
    UnarySpec("tanh", lambda g, x, y: g * (1 - y * y), fused=True,
              backward_kernel="tanh_backward", from_output=True),
    UnarySpec("asinh", lambda g, x, y: g * rsqrt(x ** 2 + 1)),
    UnarySpec("acosh", lambda g, x, y: g * rsqrt(x ** 2 - 1)),
    UnarySpec("atanh", lambda g, x, y: g * (1 / (1 - x ** 2))),
    UnarySpec("sigmoid", lambda g, x, y: g * (1 - y) * y, fused=True,
              backward_kernel="sigmoid_backward", from_output=True),
    UnarySpec("relu", lambda g, x, y: where(y > 0, g, 0.0), promote=False, fused=True),
    UnarySpec("erf", lambda g, x, y: _TWO_OVER_SQRT_PI * exp(-(x ** 2)) * g),
    UnarySpec("erfc", lambda g, x, y: -_TWO_OVER_SQRT_PI * exp(-(x ** 2)) * g),
    UnarySpec("reciprocal", lambda g, x, y: -g * (y * y)),
    UnarySpec("floor", zero_grad, promote=False, rejects="b"),
    UnarySpec("ceil", zero_grad, promote=False, rejects="b"),
    UnarySpec("trunc", zero_grad, promote=False, rejects="b"),
    UnarySpec("round", zero_grad, promote=False, rejects="b"),
    UnarySpec("frac", lambda g, x, y: g, promote=False, rejects="bi"),
    UnarySpec("sign", zero_grad, promote=False),
    UnarySpec("sgn", zero_grad, promote=False),
    UnarySpec("nan_to_num", lambda g, x, y, **_: where(isfinite(x), g, 0.0), promote=False),
]
UNARY_OPS = {spec.name: spec for spec in _UNARY}


def abs(input):
    """|input|, elementwise."""
    return UNARY_OPS["abs"](input)


@autocast_policy("exp")
def exp(input):
    """e ** input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["exp"](input)


def exp2(input):
    """2 ** input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["exp2"](input)


@autocast_policy("expm1")
def expm1(input):
    """exp(input) - 1, accurate near 0, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["expm1"](input)


@autocast_policy("log")
def log(input):
    """The natural logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log"](input)


@autocast_policy("log2")
def log2(input):
    """The base-2 logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log2"](input)


@autocast_policy("log10")
def log10(input):
    """The base-10 logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log10"](input)


@autocast_policy("log1p")
def log1p(input):
    """log(1 + input), accurate near 0, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log1p"](input)


def sqrt(input):
    """The square root, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sqrt"](input)


@autocast_policy("rsqrt")
def rsqrt(input):
    """1 / sqrt(input), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["rsqrt"](input)


def sin(input):
    """The sine (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sin"](input)


def cos(input):
    """The cosine (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["cos"](input)


@autocast_policy("tan")
def tan(input):
    """The tangent (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["tan"](input)


@autocast_policy("asin")
def asin(input):
    """The arcsine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["asin"](input)


@autocast_policy("acos")
def acos(input):
    """The arccosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["acos"](input)


def atan(input):
    """The arctangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["atan"](input)


@autocast_policy("sinh")
def sinh(input):
    """The hyperbolic sine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sinh"](input)


@autocast_policy("cosh")
def cosh(input):
    """The hyperbolic cosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["cosh"](input)


def tanh(input):
    """The hyperbolic tangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["tanh"](input)


def asinh(input):
    """The inverse hyperbolic sine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["asinh"](input)


def acosh(input):
    """The inverse hyperbolic cosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["acosh"](input)


def atanh(input):
    """The inverse hyperbolic tangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["atanh"](input)


def sigmoid(input):
    """1 / (1 + exp(-input)), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sigmoid"](input)


def erf(input):
    """The error function, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["erf"](input)


def erfc(input):
    """1 - erf(input), accurate where erf is near 1; integers compute in the default float dtype."""
    return UNARY_OPS["erfc"](input)


@autocast_policy("reciprocal")
def reciprocal(input):
    """1 / input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["reciprocal"](input)


def floor(input):
    """Rounded down, elementwise."""
    return UNARY_OPS["floor"](input)


def ceil(input):
    """Rounded up, elementwise."""
    return UNARY_OPS["ceil"](input)


def trunc(input):
    """Rounded toward zero, elementwise."""
    return UNARY_OPS["trunc"](input)


def frac(input):
    """input - trunc(input), elementwise."""
    return UNARY_OPS["frac"](input)


def sign(input):
    """-1, 0 or 1 by the sign, elementwise."""
    return UNARY_OPS["sign"](input)


def sgn(input):
    """-1, 0 or 1 by the sign (as `sign` for real tensors), elementwise."""
    return UNARY_OPS["sgn"](input)


def neg(input):
    """-input, elementwise (not for bool tensors: use `~` or logical_not)."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool_:
        raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return UNARY_OPS["neg"](input)


def relu(input):
    """max(input, 0), elementwise."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu")
    return UNARY_OPS["relu"](input)


negative, absolute, arcsin, arccos, arctan = neg, abs, asin, acos, atan


def square(input):
    """input * input, as PyTorch's `pow(input, 2)` (bool becomes int64)."""
    return pow(input, 2) if input.dtype is dtypes.bool_ else input * input


def round(input, *, decimals=0):
    """Rounded to `decimals` places, halves to even."""
    return UNARY_OPS["round"](input, decimals=decimals)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf`, `neginf` (default: the dtype's extremes)."""
    return UNARY_OPS["nan_to_num"](input, nan=nan, posinf=posinf, neginf=neginf)


def isnan(input):
    """True where input is NaN."""
    return elementwise("isnan", input)


def isinf(input):
    """True where input is +inf or -inf."""
    return elementwise("isinf", input)


def isfinite(input):
    """True where input is neither infinite nor NaN."""
    return elementwise("isfinite", input)


def signbit(input):
    """True where the sign bit of input is set (-0.0 included)."""
    return elementwise("signbit", input)


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
        args = [broadcast_data(cond, shape)] + [_operand(x, dtype, shape, device) for x in (a, b)]
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
        from .index import nonzero
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
        args = [None if v is None else _operand(v, dtype, shape, device) for v in (x, low, high)]
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
    return Clamp.apply(input, min, max)


clip = clamp


def clamp_min(input, min):
    """input limited from below by `min`."""
    return Clamp.apply(input, min, None)


def clamp_max(input, max):
    """input limited from above by `max`."""
    return Clamp.apply(input, None, max)


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
    """input + weight * (end - input)."""
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


@autocast_policy("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return AddcOp.apply(input, tensor1, tensor2, value, "addcmul")


@autocast_policy("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2."""
    return AddcOp.apply(input, tensor1, tensor2, value, "addcdiv")


def _plan_add(self, other, alpha, sign):
    """self + sign * alpha * other as one kernel: add/sub, else addcmul(self, other, 1, alpha)."""
    if alpha == 1:
        return ("add" if sign == 1 else "sub"), (self, other), ()
    if type(alpha) not in (int, float):
        return None
    return "addcmul", (self, other, 1.0), (sign * alpha,)


def _plan_clamp(self, low, high):
    """clamp_ as one kernel; a missing bound is an infinite one (NaN still propagates)."""
    if low is None and high is None:
        return None
    return "clamp", (self, -math.inf if low is None else low,
                     math.inf if high is None else high), ()


# In-place ops that are one elementwise kernel: each plan takes the tensor and the method's
# arguments and gives (kernel op, operands, kernel params), or None for options that make the
# op something else (a rounding mode). See inplace.write_elementwise.

def _add_plan(self, other, *, alpha=1):
    return _plan_add(self, other, alpha, 1)


def _sub_plan(self, other, *, alpha=1):
    return _plan_add(self, other, alpha, -1)


def _mul_plan(self, other):
    return "mul", (self, other), ()


def _div_plan(self, other, *, rounding_mode=None):
    return ("div", (self, other), ()) if rounding_mode is None else None


def _lerp_plan(self, end, weight):
    return "lerp", (self, end, weight), ()


def _addcmul_plan(self, tensor1, tensor2, *, value=1):
    return "addcmul", (self, tensor1, tensor2), (value,)


def _addcdiv_plan(self, tensor1, tensor2, *, value=1):
    return "addcdiv", (self, tensor1, tensor2), (value,)


def _clamp_plan(self, min=None, max=None):
    return _plan_clamp(self, min, max)


def _clamp_min_plan(self, min):
    return _plan_clamp(self, min, None)


def _clamp_max_plan(self, max):
    return _plan_clamp(self, None, max)


def _unary_plan(name):
    """The plan of unary op `name`: its kernel over the tensor (None for ops that reject floats,
    whose in-place form can never write a floating tensor directly)."""
    spec = UNARY_OPS[name]
    return None if "f" in spec.rejects else lambda self: (spec.kernel, (self,), ())


def _inplace(fn, name, plan=None):
    """The in-place method `name` of the out-of-place `fn`; `plan` says when it is one
    elementwise kernel that may write the tensor directly."""

    def method(self, *args, **kwargs):
        if plan is not None:
            try:
                planned = plan(self, *args, **kwargs)
            except TypeError:  # arguments the op rejects: the general path raises its error
                planned = None
            if planned is not None and write_elementwise(self, *planned, name):
                return self
        return write_result(self, fn(snapshot_for_graph(self, *args), *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = (f"In-place `{fn.__name__}`: validated first, so a failure leaves the tensor "
                      "as it was.")
    return method


def _float_power_(self, exponent):
    """In-place float_power: only a float64 tensor can hold its result, as in PyTorch."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype "
                           f"{self.dtype.name} but the operation's result requires dtype float64")
    return _float_power_inplace(self, exponent)


_float_power_inplace = _inplace(float_power, "float_power_")
_OPERANDS = (Tensor,) + SCALAR_TYPES


class ElementwiseMethods:
    """Tensor methods of this family: the functions above (the same objects), their in-place
    forms, and Python's arithmetic, comparison and bitwise operators."""

    # out of place
    add = add
    sub = sub
    mul = mul
    div = div
    true_divide = true_divide
    floor_divide = floor_divide
    pow = pow
    float_power = float_power
    remainder = remainder
    fmod = fmod
    maximum = maximum
    minimum = minimum
    fmax = fmax
    fmin = fmin
    atan2 = atan2
    arctan2 = atan2
    hypot = hypot
    logaddexp = logaddexp
    xlogy = xlogy
    copysign = copysign
    heaviside = heaviside
    lerp = lerp
    addcmul = addcmul
    addcdiv = addcdiv
    clamp = clamp
    clip = clamp
    clamp_min = clamp_min
    clamp_max = clamp_max
    neg = neg
    abs = abs
    exp = exp
    exp2 = exp2
    expm1 = expm1
    log = log
    log2 = log2
    log10 = log10
    log1p = log1p
    sqrt = sqrt
    rsqrt = rsqrt
    sin = sin
    cos = cos
    tan = tan
    asin = asin
    acos = acos
    atan = atan
    sinh = sinh
    cosh = cosh
    tanh = tanh
    asinh = asinh
    acosh = acosh
    atanh = atanh
    arcsin = asin
    arccos = acos
    arctan = atan
    sigmoid = sigmoid
    relu = relu
    erf = erf
    erfc = erfc
    reciprocal = reciprocal
    square = square
    floor = floor
    ceil = ceil
    trunc = trunc
    frac = frac
    sign = sign
    sgn = sgn
    round = round
    nan_to_num = nan_to_num
    eq = eq
    ne = ne
    lt = lt
    le = le
    gt = gt
    ge = ge
    greater = gt
    greater_equal = ge
    less = lt
    less_equal = le
    not_equal = ne
    logical_and = logical_and
    logical_or = logical_or
    logical_xor = logical_xor
    logical_not = logical_not
    bitwise_and = bitwise_and
    bitwise_or = bitwise_or
    bitwise_xor = bitwise_xor
    bitwise_not = bitwise_not
    bitwise_left_shift = bitwise_left_shift
    bitwise_right_shift = bitwise_right_shift
    negative = neg
    absolute = abs
    subtract = sub
    multiply = mul
    divide = div
    isnan = isnan
    isinf = isinf
    isfinite = isfinite
    signbit = signbit

    # in place
    add_ = _inplace(add, "add_", _add_plan)
    sub_ = _inplace(sub, "sub_", _sub_plan)
    mul_ = _inplace(mul, "mul_", _mul_plan)
    div_ = _inplace(div, "div_", _div_plan)
    true_divide_ = _inplace(true_divide, "true_divide_", _div_plan)
    floor_divide_ = _inplace(floor_divide, "floor_divide_")
    pow_ = _inplace(pow, "pow_")
    remainder_ = _inplace(remainder, "remainder_")
    fmod_ = _inplace(fmod, "fmod_")
    maximum_ = _inplace(maximum, "maximum_")
    minimum_ = _inplace(minimum, "minimum_")
    fmax_ = _inplace(fmax, "fmax_")
    fmin_ = _inplace(fmin, "fmin_")
    atan2_ = _inplace(atan2, "atan2_")
    arctan2_ = _inplace(atan2, "arctan2_")
    hypot_ = _inplace(hypot, "hypot_")
    logaddexp_ = _inplace(logaddexp, "logaddexp_")
    xlogy_ = _inplace(xlogy, "xlogy_")
    copysign_ = _inplace(copysign, "copysign_")
    heaviside_ = _inplace(heaviside, "heaviside_")
    lerp_ = _inplace(lerp, "lerp_", _lerp_plan)
    addcmul_ = _inplace(addcmul, "addcmul_", _addcmul_plan)
    addcdiv_ = _inplace(addcdiv, "addcdiv_", _addcdiv_plan)
    clamp_ = _inplace(clamp, "clamp_", _clamp_plan)
    clip_ = _inplace(clamp, "clip_", _clamp_plan)
    clamp_min_ = _inplace(clamp_min, "clamp_min_", _clamp_min_plan)
    clamp_max_ = _inplace(clamp_max, "clamp_max_", _clamp_max_plan)
    neg_ = _inplace(neg, "neg_", _unary_plan("neg"))
    abs_ = _inplace(abs, "abs_", _unary_plan("abs"))
    exp_ = _inplace(exp, "exp_", _unary_plan("exp"))
    exp2_ = _inplace(exp2, "exp2_", _unary_plan("exp2"))
    expm1_ = _inplace(expm1, "expm1_", _unary_plan("expm1"))
    log_ = _inplace(log, "log_", _unary_plan("log"))
    log2_ = _inplace(log2, "log2_", _unary_plan("log2"))
    log10_ = _inplace(log10, "log10_", _unary_plan("log10"))
    log1p_ = _inplace(log1p, "log1p_", _unary_plan("log1p"))
    sqrt_ = _inplace(sqrt, "sqrt_", _unary_plan("sqrt"))
    rsqrt_ = _inplace(rsqrt, "rsqrt_", _unary_plan("rsqrt"))
    sin_ = _inplace(sin, "sin_", _unary_plan("sin"))
    cos_ = _inplace(cos, "cos_", _unary_plan("cos"))
    tan_ = _inplace(tan, "tan_", _unary_plan("tan"))
    asin_ = _inplace(asin, "asin_", _unary_plan("asin"))
    acos_ = _inplace(acos, "acos_", _unary_plan("acos"))
    atan_ = _inplace(atan, "atan_", _unary_plan("atan"))
    sinh_ = _inplace(sinh, "sinh_", _unary_plan("sinh"))
    cosh_ = _inplace(cosh, "cosh_", _unary_plan("cosh"))
    tanh_ = _inplace(tanh, "tanh_", _unary_plan("tanh"))
    asinh_ = _inplace(asinh, "asinh_", _unary_plan("asinh"))
    acosh_ = _inplace(acosh, "acosh_", _unary_plan("acosh"))
    atanh_ = _inplace(atanh, "atanh_", _unary_plan("atanh"))
    arcsin_ = _inplace(asin, "arcsin_", _unary_plan("asin"))
    arccos_ = _inplace(acos, "arccos_", _unary_plan("acos"))
    arctan_ = _inplace(atan, "arctan_", _unary_plan("atan"))
    sigmoid_ = _inplace(sigmoid, "sigmoid_", _unary_plan("sigmoid"))
    relu_ = _inplace(relu, "relu_", _unary_plan("relu"))
    erf_ = _inplace(erf, "erf_", _unary_plan("erf"))
    erfc_ = _inplace(erfc, "erfc_", _unary_plan("erfc"))
    reciprocal_ = _inplace(reciprocal, "reciprocal_", _unary_plan("reciprocal"))
    square_ = _inplace(square, "square_")
    floor_ = _inplace(floor, "floor_", _unary_plan("floor"))
    ceil_ = _inplace(ceil, "ceil_", _unary_plan("ceil"))
    trunc_ = _inplace(trunc, "trunc_", _unary_plan("trunc"))
    frac_ = _inplace(frac, "frac_", _unary_plan("frac"))
    sign_ = _inplace(sign, "sign_", _unary_plan("sign"))
    sgn_ = _inplace(sgn, "sgn_", _unary_plan("sgn"))
    round_ = _inplace(round, "round_")
    nan_to_num_ = _inplace(nan_to_num, "nan_to_num_")
    eq_ = _inplace(eq, "eq_")
    ne_ = _inplace(ne, "ne_")
    lt_ = _inplace(lt, "lt_")
    le_ = _inplace(le, "le_")
    gt_ = _inplace(gt, "gt_")
    ge_ = _inplace(ge, "ge_")
    greater_ = _inplace(gt, "greater_")
    greater_equal_ = _inplace(ge, "greater_equal_")
    less_ = _inplace(lt, "less_")
    less_equal_ = _inplace(le, "less_equal_")
    not_equal_ = _inplace(ne, "not_equal_")
    logical_and_ = _inplace(logical_and, "logical_and_")
    logical_or_ = _inplace(logical_or, "logical_or_")
    logical_xor_ = _inplace(logical_xor, "logical_xor_")
    logical_not_ = _inplace(logical_not, "logical_not_")
    bitwise_and_ = _inplace(bitwise_and, "bitwise_and_")
    bitwise_or_ = _inplace(bitwise_or, "bitwise_or_")
    bitwise_xor_ = _inplace(bitwise_xor, "bitwise_xor_")
    bitwise_not_ = _inplace(bitwise_not, "bitwise_not_")
    bitwise_left_shift_ = _inplace(bitwise_left_shift, "bitwise_left_shift_")
    bitwise_right_shift_ = _inplace(bitwise_right_shift, "bitwise_right_shift_")
    negative_ = _inplace(neg, "negative_", _unary_plan("neg"))
    absolute_ = _inplace(abs, "absolute_", _unary_plan("abs"))
    subtract_ = _inplace(sub, "subtract_", _sub_plan)
    multiply_ = _inplace(mul, "multiply_", _mul_plan)
    divide_ = _inplace(div, "divide_", _div_plan)
    float_power_ = _float_power_

    # operators: a Tensor or a Python number on the other side, else NotImplemented
    def __add__(self, other):
        """self + other."""
        return add(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __radd__(self, other):
        """other + self."""
        return add(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __sub__(self, other):
        """self - other."""
        return sub(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rsub__(self, other):
        """other - self."""
        return sub(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __mul__(self, other):
        """self * other."""
        return mul(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rmul__(self, other):
        """other * self."""
        return mul(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __truediv__(self, other):
        """self / other."""
        return div(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rtruediv__(self, other):
        """other / self."""
        return div(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __floordiv__(self, other):
        """self // other."""
        return floor_divide(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rfloordiv__(self, other):
        """other // self."""
        return floor_divide(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __mod__(self, other):
        """self % other."""
        return remainder(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rmod__(self, other):
        """other % self."""
        return remainder(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __pow__(self, other):
        """self ** other."""
        return pow(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rpow__(self, other):
        """other ** self."""
        return pow(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __and__(self, other):
        """self & other."""
        return bitwise_and(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rand__(self, other):
        """other & self."""
        return bitwise_and(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __or__(self, other):
        """self | other."""
        return bitwise_or(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __ror__(self, other):
        """other | self."""
        return bitwise_or(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __xor__(self, other):
        """self ^ other."""
        return bitwise_xor(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rxor__(self, other):
        """other ^ self."""
        return bitwise_xor(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __lshift__(self, other):
        """self << other."""
        return bitwise_left_shift(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rlshift__(self, other):
        """other << self."""
        return bitwise_left_shift(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    def __rshift__(self, other):
        """self >> other."""
        return bitwise_right_shift(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __rrshift__(self, other):
        """other >> self."""
        return bitwise_right_shift(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ifloordiv__ = floor_divide_
    __imod__ = remainder_
    __ipow__ = pow_
    __iand__ = bitwise_and_
    __ior__ = bitwise_or_
    __ixor__ = bitwise_xor_
    __ilshift__ = bitwise_left_shift_
    __irshift__ = bitwise_right_shift_

    def __eq__(self, other):
        """self == other, elementwise."""
        return eq(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __ne__(self, other):
        """self != other, elementwise."""
        return ne(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __lt__(self, other):
        """self < other, elementwise."""
        return lt(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __le__(self, other):
        """self <= other, elementwise."""
        return le(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __gt__(self, other):
        """self > other, elementwise."""
        return gt(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    def __ge__(self, other):
        """self >= other, elementwise."""
        return ge(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    __neg__ = neg
    __abs__ = abs

    def __invert__(self):
        """~self: logical not of a bool tensor, bitwise not of an integer one."""
        return logical_not(self) if self.dtype is dtypes.bool_ else bitwise_not(self)

    def __pos__(self):
        """+self: the tensor itself."""
        return self



__all__ = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "float_power", "remainder",
    "fmod", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot", "logaddexp",
    "xlogy", "copysign", "heaviside", "lerp", "addcmul", "addcdiv", "clamp", "clip",
    "clamp_min", "clamp_max", "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log",
    "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "relu", "erf", "erfc", "reciprocal", "square", "floor", "ceil", "trunc", "frac", "sign",
    "sgn", "round", "nan_to_num", "isnan", "isinf", "isfinite", "signbit", "where", "eq", "ne",
    "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "subtract",
    "multiply", "divide"]

