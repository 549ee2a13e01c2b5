"""The formulas of the elementwise ops (kernels/elementwise.py): one @triton.jit function per
arity, `OP` (a constexpr string) selecting the formula. Operands arrive in the compute type
(float32 for half types); the caller rounds once to the stored type.

Integer division by zero: the CPU backend raises (as PyTorch on the CPU); a GPU cannot raise
from a kernel, and PyTorch's CUDA kernels return unspecified values. Here the result is defined
instead: quotients (floor_divide, trunc_divide) are -1 (all bits set) and remainders (remainder,
fmod) are the dividend.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ._math import div_rn, sqrt_rn

_ONE_SIXTH = tl.constexpr(1.0 / 6.0)


@triton.jit
def unary(OP: tl.constexpr, x, p0, p1, p2, BOOL: tl.constexpr):
    """The unary formulas; `x` is already in the compute type, p0..p2 are op parameters."""
    if OP == "neg":
        r = -x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "exp":
        r = libdevice.exp(x)
    elif OP == "exp2":
        r = libdevice.exp2(x)
    elif OP == "log":
        r = libdevice.log(x)
    elif OP == "log2":
        r = libdevice.log2(x)
    elif OP == "log10":
        r = libdevice.log10(x)
    elif OP == "log1p":
        r = libdevice.log1p(x)
    elif OP == "expm1":
        r = libdevice.expm1(x)
    elif OP == "sqrt":
        r = sqrt_rn(x)
    elif OP == "rsqrt":
        r = div_rn(1.0, sqrt_rn(x))
    elif OP == "sin":
        r = libdevice.sin(x)
    elif OP == "cos":
        r = libdevice.cos(x)
    elif OP == "tan":
        r = libdevice.tan(x)
    elif OP == "asin":
        r = libdevice.asin(x)
    elif OP == "acos":
        r = libdevice.acos(x)
    elif OP == "atan":
        r = libdevice.atan(x)
    elif OP == "sinh":
        r = libdevice.sinh(x)
    elif OP == "cosh":
        r = libdevice.cosh(x)
    elif OP == "tanh":
        r = libdevice.tanh(x)
    elif OP == "asinh":
        r = libdevice.asinh(x)
    elif OP == "acosh":
        r = libdevice.acosh(x)
    elif OP == "atanh":
        r = libdevice.atanh(x)
    elif OP == "sigmoid":
        r = div_rn(1.0, 1.0 + libdevice.exp(-x))
    elif OP == "relu":
        r = tl.where(x < 0, 0, x)
    elif OP == "erf":
        r = libdevice.erf(x)
    elif OP == "erfc":
        r = libdevice.erfc(x)
    elif OP == "gelu":
        r = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    elif OP == "gelu_tanh":
        r = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == "silu":
        r = div_rn(x, 1.0 + libdevice.exp(-x))
    elif OP == "mish":
        r = x * libdevice.tanh(libdevice.log1p(libdevice.exp(x)))
    elif OP == "log_sigmoid":
        r = tl.where(x < 0, x, 0.0) - libdevice.log1p(libdevice.exp(-tl.abs(x)))
    elif OP == "hardsigmoid":
        r = _clip(x + 3.0, 0.0, 6.0) * _ONE_SIXTH
    elif OP == "hardswish":
        r = x * _clip(x + 3.0, 0.0, 6.0) * _ONE_SIXTH
    elif OP == "elu":
        r = tl.where(x > 0, x, libdevice.expm1(x * p2) * p0) * p1
    elif OP == "leaky_relu":
        r = tl.where(x > 0, x, x * p0)
    elif OP == "softplus":
        bx = x * p0
        r = tl.where(bx > p1, x, div_rn(libdevice.log1p(libdevice.exp(bx)), p0))
    elif OP == "hardshrink":
        r = tl.where((x > p0) | (x < -p0), x, 0.0)
    elif OP == "softshrink":
        r = tl.where(x > p0, x - p0, tl.where(x < -p0, x + p0, 0.0))
    elif OP == "floor" or OP == "ceil" or OP == "trunc":
        r = _integral(OP, x)
    elif OP == "round":
        r = _round(x, p0, p1)
    elif OP == "frac":
        r = x - libdevice.trunc(x)
    elif OP == "sign" or OP == "sgn":
        r = _sign(x, BOOL)
    elif OP == "reciprocal":
        r = div_rn(1.0, x)
    elif OP == "square":
        r = x * x
    elif OP == "isnan":
        r = x != x
    elif OP == "isinf":
        r = (x == float("inf")) | (x == float("-inf"))
    elif OP == "isfinite":
        r = (x == x) & (x != float("inf")) & (x != float("-inf"))
    elif OP == "signbit":
        r = _signbit(x)
    elif OP == "logical_not":
        r = x == 0
    elif OP == "bitwise_not":
        if BOOL:
            r = x == 0
        else:
            r = ~x
    else:
        tl.static_assert(OP == "nan_to_num", "unknown unary op")
        r = _nan_to_num(x, p0, p1, p2)
    return r


@triton.jit
def _nan_to_num(x, nan, posinf, neginf):
    if x.dtype.is_floating():
        r = tl.where(x != x, nan, tl.where(x == float("inf"), posinf,
                                           tl.where(x == float("-inf"), neginf, x)))
    else:
        r = x
    return r


@triton.jit
def _clip(x, low, high):
    """min(max(x, low), high) letting NaN through."""
    return tl.where(x < low, low, tl.where(x > high, high, x))


@triton.jit
def _integral(OP: tl.constexpr, x):
    """floor, ceil or trunc (integers are already integral)."""
    if not x.dtype.is_floating():
        r = x
    elif OP == "floor":
        r = libdevice.floor(x)
    elif OP == "ceil":
        r = libdevice.ceil(x)
    else:
        r = libdevice.trunc(x)
    return r


@triton.jit
def _round(x, scale, negative):
    """Round half to even at 10^-decimals: scale = 10^|decimals|, negative = decimals < 0."""
    if x.dtype.is_floating():
        r = tl.where(negative != 0, libdevice.rint(div_rn(x, scale)) * scale,
                     div_rn(libdevice.rint(x * scale), scale))
    else:
        r = x
    return r


@triton.jit
def _sign(x, BOOL: tl.constexpr):
    """-1, 0 or 1 as PyTorch's (x > 0) - (x < 0): NaN gives 0."""
    if BOOL:
        r = x
    else:
        r = (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
    return r


@triton.jit
def _signbit(x):
    if x.dtype == tl.float64:
        r = x.to(tl.int64, bitcast=True) < 0
    elif x.dtype == tl.float32:
        r = x.to(tl.int32, bitcast=True) < 0
    else:
        r = x < 0
    return r


@triton.jit
def binary(OP: tl.constexpr, a, b, BOOL: tl.constexpr, OUT: tl.constexpr):
    """The binary formulas; `a` and `b` are in the compute type, OUT is the stored type."""
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "div":
        r = div_rn(a, b)
    elif OP == "floor_divide":
        r = _floor_divide(a, b)
    elif OP == "trunc_divide":
        if a.dtype.is_floating():
            # half types truncate the quotient rounded to their own precision, as PyTorch's
            r = libdevice.trunc(div_rn(a, b).to(OUT).to(a.dtype))
        else:
            r = tl.where(b == 0, _all_ones(a), a // tl.where(b == 0, 1, b))
    elif OP == "remainder":
        r = _remainder(a, b)
    elif OP == "fmod":
        if a.dtype.is_floating():
            r = libdevice.fmod(a, b)
        else:
            r = tl.where(b == 0, a, a % tl.where(b == 0, 1, b))
    elif OP == "pow":
        r = _pow(a, b, BOOL)
    elif OP == "maximum":
        r = tl.where((a > b) | (a != a), a, b)
    elif OP == "minimum":
        r = tl.where((a < b) | (a != a), a, b)
    elif OP == "fmax":
        r = tl.where((a > b) | (b != b), a, b)
    elif OP == "fmin":
        r = tl.where((a < b) | (b != b), a, b)
    elif OP == "atan2":
        r = libdevice.atan2(a, b)
    elif OP == "eq":
        r = a == b
    elif OP == "ne":
        r = a != b
    elif OP == "lt":
        r = a < b
    elif OP == "le":
        r = a <= b
    elif OP == "gt":
        r = a > b
    elif OP == "ge":
        r = a >= b
    elif OP == "logical_and":
        r = (a != 0) & (b != 0)
    elif OP == "logical_or":
        r = (a != 0) | (b != 0)
    elif OP == "logical_xor":
        r = (a != 0) ^ (b != 0)
    elif OP == "bitwise_and":
        r = a & b
    elif OP == "bitwise_or":
        r = a | b
    elif OP == "bitwise_xor":
        r = a ^ b
    elif OP == "bitwise_left_shift":
        valid = (b >= 0) & (b < a.dtype.primitive_bitwidth)
        r = tl.where(valid, a << tl.where(valid, b, 0), 0)
    elif OP == "bitwise_right_shift":
        valid = (b >= 0) & (b < a.dtype.primitive_bitwidth)
        r = tl.where(valid, a >> tl.where(valid, b, 0), tl.where(a < 0, -1, 0))
    elif OP == "hypot":
        r = libdevice.hypot(a, b)
    elif OP == "logaddexp":
        d = a - b
        r = tl.where(a == b, a + 0.6931471805599453,
                     tl.where(d > 0, a + libdevice.log1p(libdevice.exp(-d)),
                              tl.where(d <= 0, b + libdevice.log1p(libdevice.exp(d)), d)))
    elif OP == "xlogy":
        r = tl.where(b != b, b, tl.where(a == 0, 0.0, a * libdevice.log(b)))
    elif OP == "copysign":
        r = libdevice.copysign(a, b)
    elif OP == "relu_backward" or OP == "tanh_backward" or OP == "sigmoid_backward" \
            or OP == "silu_backward" or OP == "gelu_backward" or OP == "gelu_tanh_backward":
        r = _derivative(OP, a, b)
    else:
        tl.static_assert(OP == "heaviside", "unknown binary op")
        r = tl.where(a == 0, b, tl.where(a > 0, 1, 0).to(a.dtype))
    return r


@triton.jit
def _derivative(OP: tl.constexpr, g, v):
    """An activation's gradient from the incoming gradient `g` and `v` (the output y for relu,
    tanh and sigmoid, the input x otherwise), in PyTorch's backward-kernel formulas."""
    if OP == "relu_backward":  # threshold_backward: zero where y <= 0, g elsewhere (NaN too)
        r = tl.where(v <= 0.0, 0.0, g)
    elif OP == "tanh_backward":
        r = g * (1.0 - v * v)
    elif OP == "sigmoid_backward":
        r = g * (1.0 - v) * v
    elif OP == "silu_backward":
        s = div_rn(1.0, 1.0 + libdevice.exp(-v))
        r = g * s * (1.0 + v * (1.0 - s))
    elif OP == "gelu_backward":
        cdf = 0.5 * (1.0 + libdevice.erf(v * 0.7071067811865476))
        pdf = 0.3989422804014327 * libdevice.exp(v * v * -0.5)
        r = g * (cdf + v * pdf)
    else:
        tl.static_assert(OP == "gelu_tanh_backward", "unknown derivative")
        inner = 0.7978845608028654 * (v + 0.044715 * (v * v * v))
        t = libdevice.tanh(inner)
        d_inner = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * (v * v))
        r = g * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * d_inner)
    return r


@triton.jit
def _floor_divide(a, b):
    """Python's a // b (PyTorch's algorithm for floats: exact, and inf/nan for b == 0)."""
    if a.dtype.is_floating():
        mod = libdevice.fmod(a, b)
        div = div_rn(a - mod, b)
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        floor = libdevice.floor(div)
        floor = tl.where(div - floor > 0.5, floor + 1.0, floor)
        quotient = div_rn(a, b)
        r = tl.where(b == 0, quotient, tl.where(div == 0, libdevice.copysign(div * 0.0, quotient),
                                                floor))
    else:
        safe = tl.where(b == 0, 1, b)
        q = a // safe
        rem = a % safe
        q = tl.where((rem != 0) & ((rem < 0) != (safe < 0)), q - 1, q)
        r = tl.where(b == 0, _all_ones(q), q)
    return r


@triton.jit
def _all_ones(like):
    """-1 in `like`'s integer type (its maximum when unsigned)."""
    return tl.zeros_like(like) - 1


@triton.jit
def _remainder(a, b):
    """Python's a % b: the sign of the divisor."""
    if a.dtype.is_floating():
        mod = libdevice.fmod(a, b)
        r = tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
    else:
        safe = tl.where(b == 0, 1, b)
        mod = a % safe
        mod = tl.where((mod != 0) & ((mod < 0) != (safe < 0)), mod + safe, mod)
        r = tl.where(b == 0, a, mod)
    return r


@triton.jit
def _pow(a, b, BOOL: tl.constexpr):
    """Floats through libdevice; integers by squaring (wrapping as numpy and PyTorch); a negative
    integer exponent gives 1 for a base of 1, +-1 for -1 and 0 otherwise."""
    if BOOL:
        r = a | (b == 0).to(a.dtype)
    elif a.dtype.is_floating():
        r = libdevice.pow(a, b)
    else:
        a, b = tl.broadcast(a, b)  # a scalar base or exponent: the loop carries blocks
        result = tl.full(a.shape, 1, a.dtype)
        base = a
        e = tl.where(b < 0, 0, b)
        for _ in range(a.dtype.primitive_bitwidth):
            result = tl.where((e & 1) != 0, result * base, result)
            base = base * base
            e = e >> 1
        odd = (b & 1) != 0
        small = tl.where(a == 1, 1, tl.where(a == -1, tl.where(odd, -1, 1), 0)).to(a.dtype)
        r = tl.where(b < 0, small, result)
    return r


@triton.jit
def ternary(OP: tl.constexpr, a, b, c, p0):
    if OP == "where":
        r = tl.where(a != 0, b, c)
    elif OP == "clamp":
        r = a
        if b is not None:
            r = tl.where(r < b, b, r)
            r = tl.where(b != b, b, r)
        if c is not None:
            r = tl.where(r > c, c, r)
            r = tl.where(c != c, c, r)
        r = tl.where(a != a, a, r)
    elif OP == "lerp":
        diff = b - a
        r = tl.where(tl.abs(c) < 0.5, a + c * diff, b - diff * (1.0 - c))
    elif OP == "addcmul":
        r = a + p0 * (b * c)
    else:
        tl.static_assert(OP == "addcdiv", "unknown ternary op")
        r = a + p0 * div_rn(b, c)
    return r
