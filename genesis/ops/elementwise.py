"""Elementwise math with broadcasting, Python scalars and PyTorch's type promotion.

Each op is a Function whose forward broadcasts and casts its operands once (here, for every
device) and calls one kernel, and whose backward is written with genesis ops. Unary ops are
declared in a table next to their derivative, so the math is visible in one place.
"""

import math

from .. import dtypes
from ..autograd.function import Function
from ..dispatch import kernel
from ..tensor import Tensor
from .common import (SCALAR_TYPES, broadcast_data, broadcast_shapes, cast, scalar_for, sum_to,
                     wrap)
from .inplace import snapshot_for_graph, write_result


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
    for x in operands:
        if not isinstance(x, (Tensor,) + SCALAR_TYPES):
            raise TypeError(f"{op}(): expected Tensor or Number operands, got {type(x).__name__}")


def elementwise(op, *operands, dtype=None, kernel_op=None, **kwargs):
    """Run kernel `op` on `operands` broadcast together, computed in `dtype` (default: promoted)."""
    _check_operands(op, operands)
    device = _device(op, operands)
    dtype = dtype or dtypes.result_type(*operands)
    shape = broadcast_shapes(*(_shape(x) for x in operands), op=op)
    args = [_operand(x, dtype, shape, device) for x in operands]
    data = kernel(kernel_op or op, device.type)(*args, **kwargs)
    return wrap(data, device)


def _float_dtype(*operands):
    """Promoted dtype, made floating (integers and bools compute in the default float)."""
    dtype = dtypes.result_type(*operands)
    return dtype if dtype.is_floating_point else dtypes.get_default_dtype()


def _grad(ctx, i, g, shape):
    """Input i's gradient `g` reduced to its shape, or None when input i needs none."""
    if not ctx.needs_input_grad[i] or shape is None:
        return None
    return sum_to(g, shape)


def _shapes(*operands):
    return tuple(tuple(x.shape) if isinstance(x, Tensor) else None for x in operands)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.shapes, ctx.alpha = _shapes(a, b), alpha
        if alpha != 1:
            b = elementwise("mul", b, alpha, dtype=dtypes.result_type(a, b))
        return elementwise("add", a, b, dtype=dtypes.result_type(a, b))

    @staticmethod
    def backward(ctx, g):
        gb = g if ctx.alpha == 1 else g * ctx.alpha
        return _grad(ctx, 0, g, ctx.shapes[0]), _grad(ctx, 1, gb, ctx.shapes[1]), None


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        ctx.shapes, ctx.alpha = _shapes(a, b), alpha
        if alpha != 1:
            b = elementwise("mul", b, alpha, dtype=dtypes.result_type(a, b))
        return elementwise("sub", a, b, dtype=dtypes.result_type(a, b))

    @staticmethod
    def backward(ctx, g):
        return _grad(ctx, 0, g, ctx.shapes[0]), _grad(ctx, 1, -g * ctx.alpha, ctx.shapes[1]), None


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = _shapes(a, b)
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)))
        ctx.scalars = (a, b)
        return elementwise("mul", a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        return _grad(ctx, 0, g * b, ctx.shapes[0]), _grad(ctx, 1, g * a, ctx.shapes[1])


class Div(Function):
    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        ctx.shapes = _shapes(a, b)
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)))
        ctx.scalars = (a, b)
        if rounding_mode is None:
            return elementwise("div", a, b, dtype=_float_dtype(a, b))
        if rounding_mode == "floor":
            return elementwise("floor_divide", a, b)
        if rounding_mode == "trunc":
            return elementwise("trunc_divide", a, b)
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                         f"found '{rounding_mode}'")

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        ga = _grad(ctx, 0, g / b, ctx.shapes[0])
        gb = _grad(ctx, 1, -g * a / (b * b), ctx.shapes[1])
        return ga, gb, None


class Pow(Function):
    """a ** b. d/da = b a^(b-1) (0 where b == 0); d/db = a^b log a (0 where a == 0 and b >= 0)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = _shapes(a, b)
        out = elementwise("pow", a, b)
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)), out)
        ctx.scalars = (a, b, None)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = _restore(ctx)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = where(b == 0, 0.0, g * b * a ** (b - 1)) if isinstance(b, Tensor) \
                else (g * 0 if b == 0 else g * b * a ** (b - 1))
            ga = sum_to(ga, ctx.shapes[0])
        if ctx.needs_input_grad[1]:
            if isinstance(a, Tensor):
                gb = where((a == 0) & (b >= 0), 0.0, g * out * log(a))
            else:
                gb = g * 0 if a == 0 else g * out * math.log(a)
            gb = sum_to(gb, ctx.shapes[1])
        return ga, gb


class MaxMin(Function):
    """`maximum`/`minimum`: the gradient goes to the larger (smaller) input, split on ties."""

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.shapes, ctx.is_max = _shapes(a, b), op == "maximum"
        ctx.save_for_backward(a, b)
        return elementwise(op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_wins = (a > b) if ctx.is_max else (a < b)
        tie = a == b
        half = g * 0.5
        ga = where(a_wins, g, where(tie, half, 0.0))
        gb = where(a_wins | tie, where(tie, half, 0.0), g)
        return _grad(ctx, 0, ga, ctx.shapes[0]), _grad(ctx, 1, gb, ctx.shapes[1]), None


def _restore(ctx):
    """The saved operands, with Python scalars put back in place of missing tensors."""
    saved = ctx.saved_tensors
    return tuple(s if s is not None else scalar for s, scalar in zip(saved, ctx.scalars))


def _is_bool(x):
    return (isinstance(x, Tensor) and x.dtype is dtypes.bool_) or isinstance(x, bool)


def add(input, other, *, alpha=1):
    return Add.apply(input, other, alpha)


def sub(input, other, *, alpha=1):
    return Sub.apply(input, other, alpha)


def mul(input, other):
    return Mul.apply(input, other)


def div(input, other, *, rounding_mode=None):
    return Div.apply(input, other, rounding_mode)


def true_divide(input, other):
    return Div.apply(input, other)


def floor_divide(input, other):
    return Div.apply(input, other, "floor")


def pow(input, exponent):
    return Pow.apply(input, exponent)


def maximum(input, other):
    _check_tensors("maximum", input, other)
    return MaxMin.apply(input, other, "maximum")


def minimum(input, other):
    _check_tensors("minimum", input, other)
    return MaxMin.apply(input, other, "minimum")


subtract, multiply, divide = sub, mul, div


def _check_tensors(op, *xs):
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument must be Tensor, not {type(x).__name__}")


def _rsub(self, other):
    return Sub.apply(other, self, 1)


def _rdiv(self, other):
    return Div.apply(other, self)


def _rpow(self, other):
    return Pow.apply(other, self)


def _rfloordiv(self, other):
    return Div.apply(other, self, "floor")


def _comparison(op):
    def compare(input, other):
        return elementwise(op, input, other)
    compare.__name__ = op
    compare.__doc__ = f"Elementwise `{op}` with broadcasting; returns a bool tensor."
    return compare


eq, ne, lt, le, gt, ge = (_comparison(op) for op in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(op):
    def logical(input, other):
        return elementwise(op, input, other, dtype=dtypes.bool_)
    logical.__name__ = op
    return logical


logical_and, logical_or, logical_xor = (_logical(op) for op in
                                        ("logical_and", "logical_or", "logical_xor"))


def logical_not(input):
    return elementwise("logical_not", input, dtype=dtypes.bool_)


def _bitwise(op):
    def bitwise(input, other):
        dtype = dtypes.result_type(input, other)
        if dtype.is_floating_point:
            raise RuntimeError(f"{op}: \"{op}_cpu\" not implemented for '{dtype.name}'")
        return elementwise(op, input, other, dtype=dtype)
    bitwise.__name__ = op
    return bitwise


bitwise_and, bitwise_or, bitwise_xor, bitwise_left_shift, bitwise_right_shift = (
    _bitwise(op) for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                            "bitwise_right_shift"))


def bitwise_not(input):
    if input.dtype.is_floating_point:
        raise RuntimeError(f"bitwise_not: not implemented for '{input.dtype.name}'")
    return elementwise("bitwise_not", input)


def remainder(input, other):
    return Remainder.apply(input, other, "remainder")


def fmod(input, other):
    return Remainder.apply(input, other, "fmod")


class Remainder(Function):
    """a - b * floor(a / b) (remainder) or a - b * trunc(a / b) (fmod); d/da = 1."""

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.shapes, ctx.op = _shapes(a, b), op
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)))
        ctx.scalars = (a, b)
        return elementwise(op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = _restore(ctx)
        gb = None
        if ctx.needs_input_grad[1]:
            quotient = floor(a / b) if ctx.op == "remainder" else trunc(a / b)
            gb = sum_to(-g * quotient, ctx.shapes[1])
        return _grad(ctx, 0, g, ctx.shapes[0]), gb, None


class Unary(Function):
    """A unary op from UNARY_OPS: forward runs its kernel, backward applies its derivative."""

    @staticmethod
    def forward(ctx, x, name, kwargs):
        spec = UNARY_OPS[name]
        dtype = x.dtype
        if spec.float_only and not dtype.is_floating_point:
            dtype = dtypes.get_default_dtype()
        out = elementwise(spec.kernel or name, x, dtype=dtype, **kwargs)
        ctx.spec, ctx.kwargs = spec, kwargs
        ctx.node_name = "".join(w.capitalize() for w in name.split("_")) + "Backward0"
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return ctx.spec.derivative(g, x, y, **ctx.kwargs), None, None


class _UnarySpec:
    __slots__ = ("derivative", "float_only", "kernel")

    def __init__(self, derivative, float_only=True, kernel=None):
        self.derivative, self.float_only, self.kernel = derivative, float_only, kernel


def _zero_grad(g, x, y, **_):
    return g * 0


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_tanh_grad(g, x, y):
    inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    t = tanh(inner)
    d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


def _softplus_grad(g, x, y, beta=1.0, threshold=20.0):
    return where(x * beta > threshold, g, g * sigmoid(x * beta))


# derivative(g, x, y) gives dL/dx from dL/dy = g, the input x and the output y.
UNARY_OPS = {
    "neg": _UnarySpec(lambda g, x, y: -g, float_only=False),
    "abs": _UnarySpec(lambda g, x, y: g * sign(x), float_only=False),
    "exp": _UnarySpec(lambda g, x, y: g * y),
    "exp2": _UnarySpec(lambda g, x, y: g * y * math.log(2.0)),
    "expm1": _UnarySpec(lambda g, x, y: g * (y + 1)),
    "log": _UnarySpec(lambda g, x, y: g / x),
    "log2": _UnarySpec(lambda g, x, y: g / (x * math.log(2.0))),
    "log10": _UnarySpec(lambda g, x, y: g / (x * math.log(10.0))),
    "log1p": _UnarySpec(lambda g, x, y: g / (x + 1)),
    "sqrt": _UnarySpec(lambda g, x, y: g / (2 * y)),
    "rsqrt": _UnarySpec(lambda g, x, y: -0.5 * g * y * y * y),
    "sin": _UnarySpec(lambda g, x, y: g * cos(x)),
    "cos": _UnarySpec(lambda g, x, y: -g * sin(x)),
    "tan": _UnarySpec(lambda g, x, y: g * (1 + y * y)),
    "asin": _UnarySpec(lambda g, x, y: g * rsqrt(1 - x * x)),
    "acos": _UnarySpec(lambda g, x, y: -g * rsqrt(1 - x * x)),
    "atan": _UnarySpec(lambda g, x, y: g / (1 + x * x)),
    "sinh": _UnarySpec(lambda g, x, y: g * cosh(x)),
    "cosh": _UnarySpec(lambda g, x, y: g * sinh(x)),
    "tanh": _UnarySpec(lambda g, x, y: g * (1 - y * y)),
    "asinh": _UnarySpec(lambda g, x, y: g * rsqrt(x * x + 1)),
    "acosh": _UnarySpec(lambda g, x, y: g * rsqrt(x * x - 1)),
    "atanh": _UnarySpec(lambda g, x, y: g / (1 - x * x)),
    "sigmoid": _UnarySpec(lambda g, x, y: g * y * (1 - y)),
    "relu": _UnarySpec(lambda g, x, y: where(y > 0, g, 0.0), float_only=False),
    "erf": _UnarySpec(lambda g, x, y: g * (2.0 / math.sqrt(math.pi)) * exp(-x * x)),
    "erfc": _UnarySpec(lambda g, x, y: -g * (2.0 / math.sqrt(math.pi)) * exp(-x * x)),
    "gelu_tanh": _UnarySpec(_gelu_tanh_grad),
    "softplus": _UnarySpec(_softplus_grad),
    "reciprocal": _UnarySpec(lambda g, x, y: -g * y * y),
    "square": _UnarySpec(lambda g, x, y: 2 * g * x, float_only=False),
    "floor": _UnarySpec(_zero_grad, float_only=False),
    "ceil": _UnarySpec(_zero_grad, float_only=False),
    "trunc": _UnarySpec(_zero_grad, float_only=False),
    "round": _UnarySpec(_zero_grad, float_only=False),
    "frac": _UnarySpec(lambda g, x, y: g),
    "sign": _UnarySpec(_zero_grad, float_only=False),
    "sgn": _UnarySpec(_zero_grad, float_only=False),
    "nan_to_num": _UnarySpec(lambda g, x, y, **_: where(isfinite(x), g, 0.0), float_only=False),
}


def _unary(name):
    def op(input, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return Unary.apply(input, name, kwargs)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{name}`; integer inputs compute in the default float dtype." \
        if UNARY_OPS[name].float_only else f"Elementwise `{name}`."
    return op


(neg, abs, exp, exp2, expm1, log, log2, log10, log1p, sqrt, rsqrt, sin, cos, tan, asin, acos, atan,
 sinh, cosh, tanh, asinh, acosh, atanh, sigmoid, relu, erf, erfc, reciprocal, square, floor, ceil,
 trunc, frac, sign, sgn) = (
    _unary(n) for n in (
        "neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
        "atanh", "sigmoid", "relu", "erf", "erfc", "reciprocal", "square", "floor", "ceil",
        "trunc", "frac", "sign", "sgn"))
negative, absolute, arcsin, arccos, arctan = neg, abs, asin, acos, atan
_round_unary = _unary("round")
_nan_to_num_unary = _unary("nan_to_num")


def round(input, *, decimals=0):
    return _round_unary(input, decimals=decimals)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return _nan_to_num_unary(input, nan=nan, posinf=posinf, neginf=neginf)


def gelu(input, approximate="none"):
    """x * Phi(x); `approximate="tanh"` uses the tanh form."""
    if approximate == "tanh":
        return Unary.apply(input, "gelu_tanh", {})
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return input * 0.5 * (1 + erf(input * (1 / math.sqrt(2.0))))


def silu(input):
    """x * sigmoid(x)."""
    return input * sigmoid(input)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above `threshold`."""
    return Unary.apply(input, "softplus", {"beta": beta, "threshold": threshold})


def isnan(input):
    return elementwise("isnan", input)


def isinf(input):
    return elementwise("isinf", input)


def isfinite(input):
    return elementwise("isfinite", input)


def signbit(input):
    return elementwise("signbit", input)


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        if not isinstance(cond, Tensor) or cond.dtype is not dtypes.bool_:
            raise RuntimeError(f"where: expected condition to be a bool tensor, got "
                               f"{getattr(cond, 'dtype', type(cond).__name__)}")
        ctx.shapes = _shapes(a, b)
        ctx.save_for_backward(cond)
        dtype = dtypes.result_type(a, b)
        device = _device("where", (cond, a, b))
        shape = broadcast_shapes(tuple(cond.shape), _shape(a), _shape(b), op="where")
        args = [broadcast_data(cond, shape)] + [_operand(x, dtype, shape, device) for x in (a, b)]
        return wrap(kernel("where", device.type)(*args), device, dtype)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        ga = _grad(ctx, 1, where(cond, g, 0.0), ctx.shapes[0])
        gb = _grad(ctx, 2, where(cond, 0.0, g), ctx.shapes[1])
        return None, ga, gb


def where(condition, input=None, other=None):
    """`input` where `condition` holds, else `other`; `where(cond)` is `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        from .index import nonzero
        return nonzero(condition, as_tuple=True)
    return Where.apply(condition, input, other)


class Clamp(Function):
    @staticmethod
    def forward(ctx, x, low, high):
        if low is None and high is None:
            raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
        dtype = dtypes.result_type(*(v for v in (x, low, high) if v is not None))
        shape = broadcast_shapes(*(_shape(v) for v in (x, low, high) if v is not None), op="clamp")
        device = x.device
        args = [None if v is None else _operand(v, dtype, shape, device) for v in (x, low, high)]
        out = wrap(kernel("clamp", device.type)(*args), device, dtype)
        ctx.save_for_backward(x)
        ctx.bounds = (low, high)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        low, high = ctx.bounds
        keep = None
        if low is not None:
            keep = x >= low
        if high is not None:
            keep = (x <= high) if keep is None else keep & (x <= high)
        return where(keep, g, 0.0), None, None


def clamp(input, min=None, max=None):
    return Clamp.apply(input, min, max)


clip = clamp


def clamp_min(input, min):
    return Clamp.apply(input, min, None)


def clamp_max(input, max):
    return Clamp.apply(input, None, max)


class Lerp(Function):
    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.shapes = _shapes(start, end, weight)
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (start, end, weight)))
        ctx.scalars = (start, end, weight)
        return elementwise("lerp", start, end, weight)

    @staticmethod
    def backward(ctx, g):
        start, end, weight = _restore(ctx)
        return (_grad(ctx, 0, g * (1 - weight), ctx.shapes[0]),
                _grad(ctx, 1, g * weight, ctx.shapes[1]),
                _grad(ctx, 2, g * (end - start), ctx.shapes[2]))


def lerp(input, end, weight):
    return Lerp.apply(input, end, weight)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return input + value * (tensor1 * tensor2)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2."""
    return input + value * (tensor1 / tensor2)


def atan2(input, other):
    return Atan2.apply(input, other)


arctan2 = atan2


class Atan2(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = _shapes(a, b)
        ctx.save_for_backward(a, b)
        return elementwise("atan2", a, b, dtype=_float_dtype(a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        return _grad(ctx, 0, g * b / denom, ctx.shapes[0]), _grad(ctx, 1, -g * a / denom,
                                                                   ctx.shapes[1])


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        return write_result(self, fn(snapshot_for_graph(self, *args), *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = f"In-place `{fn.__name__}`: validated first, so a failure leaves the tensor as it was."
    return method


def _binary_method(fn, reflected=False):
    def method(self, other):
        if not isinstance(other, (Tensor,) + SCALAR_TYPES):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    return method


_OUT_OF_PLACE = {
    "add": add, "sub": sub, "mul": mul, "div": div, "true_divide": true_divide,
    "floor_divide": floor_divide, "pow": pow, "remainder": remainder, "fmod": fmod,
    "maximum": maximum, "minimum": minimum, "atan2": atan2, "lerp": lerp, "addcmul": addcmul,
    "addcdiv": addcdiv, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "neg": neg, "abs": abs, "exp": exp, "exp2": exp2, "expm1": expm1,
    "log": log, "log2": log2, "log10": log10, "log1p": log1p, "sqrt": sqrt, "rsqrt": rsqrt,
    "sin": sin, "cos": cos, "tan": tan, "asin": asin, "acos": acos, "atan": atan, "sinh": sinh,
    "cosh": cosh, "tanh": tanh, "asinh": asinh, "acosh": acosh, "atanh": atanh,
    "sigmoid": sigmoid, "relu": relu, "erf": erf, "erfc": erfc, "reciprocal": reciprocal,
    "square": square, "floor": floor, "ceil": ceil, "trunc": trunc, "frac": frac, "sign": sign,
    "sgn": sgn, "round": round, "nan_to_num": nan_to_num, "eq": eq, "ne": ne, "lt": lt, "le": le,
    "gt": gt, "ge": ge, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "logical_not": logical_not, "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "negative": neg, "absolute": abs, "subtract": sub, "multiply": mul, "divide": div,
}

TENSOR_METHODS = dict(_OUT_OF_PLACE)
TENSOR_METHODS.update({name + "_": _inplace(fn, name + "_") for name, fn in _OUT_OF_PLACE.items()})
TENSOR_METHODS.update({
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite, "signbit": signbit,
    "greater": gt, "greater_equal": ge, "less": lt, "less_equal": le, "not_equal": ne,
    "__add__": _binary_method(add), "__radd__": _binary_method(add, True),
    "__sub__": _binary_method(sub), "__rsub__": _binary_method(sub, True),
    "__mul__": _binary_method(mul), "__rmul__": _binary_method(mul, True),
    "__truediv__": _binary_method(div), "__rtruediv__": _binary_method(div, True),
    "__floordiv__": _binary_method(floor_divide), "__rfloordiv__": _binary_method(floor_divide, True),
    "__mod__": _binary_method(remainder), "__rmod__": _binary_method(remainder, True),
    "__pow__": _binary_method(pow), "__rpow__": _binary_method(pow, True),
    "__eq__": _binary_method(eq), "__ne__": _binary_method(ne), "__lt__": _binary_method(lt),
    "__le__": _binary_method(le), "__gt__": _binary_method(gt), "__ge__": _binary_method(ge),
    "__and__": _binary_method(bitwise_and), "__rand__": _binary_method(bitwise_and, True),
    "__or__": _binary_method(bitwise_or), "__ror__": _binary_method(bitwise_or, True),
    "__xor__": _binary_method(bitwise_xor), "__rxor__": _binary_method(bitwise_xor, True),
    "__lshift__": _binary_method(bitwise_left_shift),
    "__rshift__": _binary_method(bitwise_right_shift),
    "__neg__": neg, "__abs__": abs, "__invert__": lambda self: (
        logical_not(self) if self.dtype is dtypes.bool_ else bitwise_not(self)),
    "__pos__": lambda self: self,
    "__iadd__": _inplace(add, "add_"), "__isub__": _inplace(sub, "sub_"),
    "__imul__": _inplace(mul, "mul_"), "__itruediv__": _inplace(div, "div_"),
    "__ifloordiv__": _inplace(floor_divide, "floor_divide_"),
    "__imod__": _inplace(remainder, "remainder_"), "__ipow__": _inplace(pow, "pow_"),
    "__iand__": _inplace(bitwise_and, "bitwise_and_"), "__ior__": _inplace(bitwise_or, "bitwise_or_"),
    "__ixor__": _inplace(bitwise_xor, "bitwise_xor_"),
})

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "remainder", "fmod",
    "maximum", "minimum", "atan2", "arctan2", "lerp", "addcmul", "addcdiv", "clamp", "clip",
    "clamp_min", "clamp_max", "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log",
    "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "relu", "gelu", "silu", "softplus", "erf", "erfc", "reciprocal", "square", "floor", "ceil",
    "trunc", "frac", "sign", "sgn", "round", "nan_to_num", "isnan", "isinf", "isfinite",
    "signbit", "where", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "subtract", "multiply", "divide"]
