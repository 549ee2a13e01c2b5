"""Elementwise kernels on numpy.

Operands arrive already broadcast to one shape and cast to one dtype (the ops layer does that);
an operand may also be a Python scalar. Half types (float16, bfloat16) are computed in float32 and
rounded once at the end, as PyTorch does on the CPU.
"""

import functools

import ml_dtypes
import numpy as np

from ...dispatch import kernel, register
from ...memory_formats import dense_strides, elementwise_order
from .array import copy_
from .numerics import erf, erfc, gelu_tanh, gelu_tanh_backward

_HALF = (np.dtype(np.float16), np.dtype("bfloat16"))


def float32_for_half(fn):
    """Compute half-precision inputs in float32 and round the (floating) result back once.

    Floating-point warnings are silenced: like PyTorch, overflow gives inf and 0/0 gives nan.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        half = next((a.dtype for a in args if isinstance(a, np.ndarray) and a.dtype in _HALF), None)
        with np.errstate(all="ignore"):
            if half is None:
                return fn(*args, **kwargs)
            args = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == half else a
                    for a in args]
            out = fn(*args, **kwargs)
            return out.astype(half) if out.dtype == np.float32 else out
    return wrapper


def _scalar_like(value, like):
    """A Python scalar as a 0-d array of `like`'s dtype (wrapping out-of-range ints as PyTorch)."""
    if isinstance(value, np.ndarray):
        return value
    if like.dtype.kind in "iu" and isinstance(value, int):
        return np.asarray(value).astype(like.dtype)
    return np.asarray(value, dtype=like.dtype)


def _binary(fn, stepwise=False):
    """A binary kernel taking arrays or a Python scalar; half types compute in float32 and round
    once, or with `stepwise` in their own dtype, rounding after every step as PyTorch does."""
    @functools.wraps(fn)
    def kernel(a, b):
        if not isinstance(a, np.ndarray):
            a = _scalar_like(a, b)
        elif not isinstance(b, np.ndarray):
            b = _scalar_like(b, a)
        if stepwise:
            with np.errstate(all="ignore"):
                return in_elementwise_order(np.asarray(fn(a, b)).astype(a.dtype, copy=False),
                                            (a, b))
        return in_elementwise_order(np.asarray(fn(a, b)), (a, b))
    return kernel if stepwise else float32_for_half(kernel)


def in_elementwise_order(result, operands):
    """`result` laid out as PyTorch lays out an elementwise result of `operands`
    (memory_formats.elementwise_order: the first operand whose strides tell two dims apart
    orders them), where numpy chose otherwise: numpy keeps row-major order when its operands'
    layouts disagree (a channels-last x plus a row-major y). A copy only then."""
    first = next((x for x in operands if isinstance(x, np.ndarray) and x.ndim), None)
    if result.ndim < 2 or first is None or first.flags.c_contiguous and result.flags.c_contiguous:
        return result
    strides = tuple(tuple(s // x.itemsize for s in np.broadcast_to(x, result.shape).strides)
                    for x in operands if isinstance(x, np.ndarray) and x.ndim)
    order = elementwise_order(result.shape, strides)
    want = dense_strides(result.shape, order)
    if all(n == 1 or s == w * result.itemsize
           for n, s, w in zip(result.shape, result.strides, want)):
        return result
    out = np.empty([result.shape[d] for d in order], result.dtype).transpose(np.argsort(order))
    out[...] = result
    return out


def _unary(fn):
    return float32_for_half(lambda x: np.asarray(fn(x)))


def _check_int_divisor(b, op):
    """PyTorch's CPU check: integer division by zero is a RuntimeError("ZeroDivisionError")."""
    if b.dtype.kind in "iub" and np.any(b == 0):
        raise RuntimeError(f"ZeroDivisionError: {op}: integer division by zero")


def _floor_divide(a, b):
    """PyTorch's div_floor: for floats, floor of (a - fmod(a, b)) / b, nudged to the nearest."""
    if a.dtype.kind in "iub":
        _check_int_divisor(b, "floor_divide")
        return np.floor_divide(a, b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floordiv = np.floor(div)
    floordiv = np.where(div - floordiv > 0.5, floordiv + 1, floordiv)
    quotient = a / b
    out = np.where(div != 0, floordiv, np.copysign(np.zeros_like(quotient), quotient))
    return np.where(b == 0, quotient, out)


def _remainder(a, b):
    """a - b * floor(a / b), as PyTorch computes it: fmod, moved by b when the signs differ."""
    if a.dtype.kind in "iub":
        _check_int_divisor(b, "remainder")
        return np.remainder(a, b)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def _fmod(a, b):
    _check_int_divisor(b, "fmod")
    return np.fmod(a, b)


def _trunc_divide(a, b):
    if a.dtype.kind in "iub":
        _check_int_divisor(b, "div")
        q = np.floor_divide(a, b)
        return np.where((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q).astype(a.dtype)
    return np.trunc(a / b)


def _pow(a, b):
    """numpy's power, with PyTorch's integer rules: a negative exponent gives 1 for a base of 1,
    +-1 for -1 and 0 otherwise (the ops layer rejects negative Python exponents)."""
    if a.dtype == np.bool_:
        return np.power(a.view(np.uint8), b.view(np.uint8)).astype(np.bool_)
    if a.dtype.kind not in "iu" or not np.any(b < 0):
        return np.power(a, b)
    odd = (b % 2) != 0
    small = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
    return np.where(b < 0, small, np.power(a, np.maximum(b, 0)))


def _sign(x):
    """-1, 0 or 1; NaN gives 0, as PyTorch's (x > 0) - (x < 0)."""
    if x.dtype == np.bool_:
        return x.copy()
    return ((x > 0).astype(np.int8) - (x < 0).astype(np.int8)).astype(x.dtype)


def _heaviside(a, b):
    return np.where(a == 0, b, (a > 0).astype(a.dtype))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _softplus(x, beta, threshold):
    bx = x * beta
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(bx)) / beta
    return np.where(bx > threshold, x, soft)


def _round(x, decimals=0):
    if x.dtype.kind in "iub":
        return x.copy()
    return np.round(x, decimals)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "floor_divide": _floor_divide,
    "trunc_divide": _trunc_divide,
    "remainder": _remainder,
    "fmod": _fmod,
    "pow": _pow,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "atan2": np.arctan2,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "xlogy": lambda a, b: np.where(np.isnan(b), b, np.where(a == 0, 0, a * np.log(b))),
    "copysign": np.copysign,
    "heaviside": _heaviside,
}

UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "erf": erf,
    "erfc": erfc,
    "gelu_tanh": gelu_tanh,
    "floor": lambda x: np.floor(x) if x.dtype.kind == "f" else x.copy(),
    "ceil": lambda x: np.ceil(x) if x.dtype.kind == "f" else x.copy(),
    "trunc": lambda x: np.trunc(x) if x.dtype.kind == "f" else x.copy(),
    "frac": lambda x: x - np.trunc(x),
    "sign": _sign,
    "sgn": _sign,
    "reciprocal": np.reciprocal,
    "square": np.square,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
    "logical_not": np.logical_not,
    "bitwise_not": np.invert,
}

# computed in the half type itself, each step rounded, as PyTorch's CPU kernels compute them
# (xlogy: log(y) is rounded before the product)
_STEPWISE = ("floor_divide", "trunc_divide", "remainder", "xlogy")
for _name, _fn in BINARY.items():
    register(_name, "cpu")(_binary(_fn, stepwise=_name in _STEPWISE))
for _name, _fn in UNARY.items():
    register(_name, "cpu")(_unary(_fn))


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x * np.sqrt(0.5).astype(x.dtype)))


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def _log_sigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def _hardsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


def _hardswish(x):
    return x * np.clip(x + 3, 0, 6) / 6


def _silu_backward(g, v):
    s = 1.0 / (1.0 + np.exp(-v))
    return g * s * (1.0 + v * (1.0 - s))


def _gelu_backward(g, v):
    cdf = 0.5 * (1.0 + erf(v * np.sqrt(0.5).astype(v.dtype)))
    return g * (cdf + v * (np.asarray(0.3989422804014327, v.dtype) * np.exp(v * v * -0.5)))


# Activation gradients in one kernel each (PyTorch's backward kernels), from the incoming
# gradient g and v: the output y for relu, tanh and sigmoid, the input x for the others.
DERIVATIVES = {
    "relu_backward": lambda g, v: np.where(v <= 0, np.zeros_like(g), g),
    "tanh_backward": lambda g, v: g * (1.0 - v * v),
    "sigmoid_backward": lambda g, v: g * (1.0 - v) * v,
    "silu_backward": _silu_backward,
    "gelu_backward": _gelu_backward,
    "gelu_tanh_backward": gelu_tanh_backward,
}
for _name, _fn in DERIVATIVES.items():
    register(_name, "cpu")(_binary(_fn))

ACTIVATIONS = {"gelu": _gelu, "silu": _silu, "mish": _mish, "log_sigmoid": _log_sigmoid,
               "hardsigmoid": _hardsigmoid, "hardswish": _hardswish}
for _name, _fn in ACTIVATIONS.items():
    register(_name, "cpu")(_unary(_fn))


@register("elementwise_into", "cpu")
def elementwise_into(op, out, operands, params=()):
    """`op` of `operands` written into `out` (the in-place ops): computed, then copied in."""
    return copy_(out, kernel(op, "cpu")(*operands, *params))


@register("elu", "cpu")
@float32_for_half
def elu(x, alpha, scale, input_scale):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)): elu, selu and celu."""
    negative = np.expm1(x * x.dtype.type(input_scale)) * x.dtype.type(alpha)
    return np.asarray(np.where(x > 0, x, negative) * x.dtype.type(scale))


@register("leaky_relu", "cpu")
@float32_for_half
def leaky_relu(x, negative_slope):
    return np.asarray(np.where(x > 0, x, x * x.dtype.type(negative_slope)))


@register("hardshrink", "cpu")
@float32_for_half
def hardshrink(x, lambd):
    """x where |x| > lambd, else 0."""
    return np.asarray(np.where((x > lambd) | (x < -lambd), x, x.dtype.type(0)))


@register("softshrink", "cpu")
@float32_for_half
def softshrink(x, lambd):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    lambd = x.dtype.type(lambd)
    return np.asarray(np.where(x > lambd, x - lambd,
                               np.where(x < -lambd, x + lambd, x.dtype.type(0))))


@register("round", "cpu")
@float32_for_half
def round_(x, decimals=0):
    return np.asarray(_round(x, decimals))


@register("softplus", "cpu")
@float32_for_half
def softplus(x, beta=1.0, threshold=20.0):
    return _softplus(x, beta, threshold)


@register("clamp", "cpu")
@float32_for_half
def clamp(x, low, high):
    """Clamp to [low, high]; either bound may be None or an array broadcast to x; NaN propagates."""
    out = x
    if low is not None:
        out = np.where(np.isnan(out) if out.dtype.kind == "f" else False, out,
                       np.maximum(out, _scalar_like(low, x)))
    if high is not None:
        out = np.where(np.isnan(out) if out.dtype.kind == "f" else False, out,
                       np.minimum(out, _scalar_like(high, x)))
    return np.array(out, dtype=x.dtype, copy=True)


@register("where", "cpu")
def where(cond, a, b):
    if not isinstance(a, np.ndarray):
        a = _scalar_like(a, b) if isinstance(b, np.ndarray) else np.asarray(a)
    if not isinstance(b, np.ndarray):
        b = _scalar_like(b, a)
    return in_elementwise_order(np.where(cond, a, b), (cond, a, b))


@register("nan_to_num", "cpu")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities; the defaults are the extremes of x's own dtype."""
    if x.dtype.kind not in "fV" and x.dtype not in _HALF:
        return x.copy()
    info = ml_dtypes.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = np.where(np.isnan(x), nan, np.where(x == np.inf, big, np.where(x == -np.inf, small, x)))
    return out.astype(x.dtype)


@register("lerp", "cpu")
@float32_for_half
def lerp(start, end, weight):
    """PyTorch's two-sided form: exact at both ends (weight 0 gives start, 1 gives end)."""
    if not isinstance(weight, np.ndarray):
        weight = _scalar_like(weight, start)
    diff = end - start
    return in_elementwise_order(np.asarray(np.where(np.abs(weight) < 0.5, start + weight * diff,
                                                    end - diff * (1 - weight))),
                                (start, end, weight))


@register("addcmul", "cpu")
@float32_for_half
def addcmul(x, a, b, value):
    return in_elementwise_order(np.asarray(x + _scalar_like(value, x) * (a * b)), (x, a, b))


@register("addcdiv", "cpu")
@float32_for_half
def addcdiv(x, a, b, value):
    return in_elementwise_order(np.asarray(x + _scalar_like(value, x) * (a / b)), (x, a, b))

