"""Elementwise kernels: every unary, binary and ternary op of backends/cpu/elementwise.py.

Same contract as the CPU kernels: operands arrive broadcast to one shape (broadcast dims have
stride 0) and cast to one dtype, or as Python scalars (passed as kernel scalars, not device
tensors); the result is a new contiguous array. Half types compute in float32 and round once;
comparisons and predicates give bool. One Triton kernel body serves every op: `OP` (a constexpr
string) selects the formula, so each (op, dtypes, layout) is its own small specialization.

Layouts: when every operand is contiguous the 1-D kernel runs; full blocks load and store without
masks (16-byte vectors where pointers are 16-byte aligned), only the last block is masked. Any
other layout is coalesced (kernels/_strided.py) into at most MAX_DIMS dims and each operand is
read where it lies: when the innermost dim is contiguous or broadcast in every operand (a bias
add, a row mask) a rows x columns tile kernel computes offsets once per row and keeps 16-byte
vectors along the columns; otherwise each element's offsets are recomputed from the output's
linear index (int32 arithmetic when the view allows, int64 otherwise). Launches other than the
contiguous one are kept per geometry as recipes (see _strided.Recipe).

Block sizes: the 1-D kernel moves 32 bytes per operand per thread (two 16-byte vectors) with 4
warps: BLOCK = 128 threads x 32 bytes / itemsize (1024 float32, 2048 half, 4096 int8/bool), enough
bytes in flight per SM to reach copy bandwidth while keeping the grid large for small tensors.
The rows kernel takes [BR, BC] tiles of 2048 elements, BC up to 256 columns (so rows of 768 or
1000 waste few lanes); the flat strided kernel BLOCK=1024; both 4 warps.

Integer division by zero: the CPU backend raises (as PyTorch on the CPU); a GPU cannot raise
from a kernel, and PyTorch's CUDA kernels return unspecified values. Here the result is defined
instead: quotients (floor_divide, trunc_divide) are -1 (all bits set) and remainders (remainder,
fmod) are the dividend.
"""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..array_ops import copy_
from ..launch import get_kernel
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn, is_float, sqrt_rn
from ._recipe import (MAX_DIMS, Recipe, RecipeCache, cdiv, coalesce, const, index_type,
                       next_pow2, offsets, placeholder, pointer, program_range, scalar, select,
                       size_entries, specialization, stride_entries)

_NUM_WARPS = 4
_STRIDED_BLOCK = 1024
_ONE_SIXTH = tl.constexpr(1.0 / 6.0)


@triton.jit
def _unary(OP: tl.constexpr, x, p0, p1, p2, BOOL: tl.constexpr):
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
def _binary(OP: tl.constexpr, a, b, BOOL: tl.constexpr, OUT: tl.constexpr):
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
    elif OP == "tanh_backward" or OP == "sigmoid_backward" or OP == "silu_backward" \
            or OP == "gelu_backward" or OP == "gelu_tanh_backward":
        r = _derivative(OP, a, b)
    else:
        tl.static_assert(OP == "heaviside", "unknown binary op")
        r = tl.where(a == 0, b, tl.where(a > 0, 1, 0).to(a.dtype))
    return r


@triton.jit
def _derivative(OP: tl.constexpr, g, v):
    """An activation's gradient from the incoming gradient `g` and `v` (the output y for tanh
    and sigmoid, the input x otherwise), in PyTorch's backward-kernel formulas."""
    if OP == "tanh_backward":
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
def _ternary(OP: tl.constexpr, a, b, c, p0):
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


@triton.jit
def _value(x, offs, mask, CT: tl.constexpr, EVEN: tl.constexpr):
    """Operand `x` in the compute type: loaded when a pointer, converted when a scalar."""
    if x is None:
        v = x
    elif x.dtype.is_ptr():
        if EVEN:
            v = tl.load(x + offs).to(CT)
        else:
            v = tl.load(x + offs, mask=mask).to(CT)
    else:
        v = x.to(CT)
    return v


@triton.jit
def _compute(OP: tl.constexpr, ARITY: tl.constexpr, x0, x1, x2, p0, p1, p2, out_ty,
             BOOL: tl.constexpr):
    if ARITY == 1:
        r = _unary(OP, x0, p0, p1, p2, BOOL)
    elif ARITY == 2:
        r = _binary(OP, x0, x1, BOOL, out_ty)
    else:
        r = _ternary(OP, x0, x1, x2, p0)
    if out_ty == tl.int1:
        r = r != 0
    return r.to(out_ty)


@triton.jit
def _block(out, x0, x1, x2, offs, out_offs, mask, p0, p1, p2, OP: tl.constexpr,
           ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr, EVEN: tl.constexpr):
    """Load, compute and store one block (x*_offs are each operand's offsets)."""
    v0 = _value(x0, offs[0], mask, CT, EVEN)
    v1 = _value(x1, offs[1], mask, CT, EVEN)
    v2 = _value(x2, offs[2], mask, CT, EVEN)
    r = _compute(OP, ARITY, v0, v1, v2, p0, p1, p2, out.dtype.element_ty, BOOL)
    if EVEN:
        tl.store(out + out_offs, r)
    else:
        tl.store(out + out_offs, r, mask=mask)


@triton.jit
def _contiguous_kernel(out, x0, n, x1, x2, p0, p1, p2, OP: tl.constexpr, ARITY: tl.constexpr,
                       CT: tl.constexpr, BOOL: tl.constexpr, BLOCK: tl.constexpr):
    """One BLOCK of a contiguous op. Parameters an op may lack (x1, x2, p0..p2: constexpr None
    there) come after those every op has, so that unary, binary and ternary ops without
    parameters have only trailing constexprs (the cheap launch in launch.BoundKernel)."""
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        _block(out, x0, x1, x2, (offs, offs, offs), offs, None, p0, p1, p2, OP, ARITY, CT, BOOL,
               True)
    else:
        _block(out, x0, x1, x2, (offs, offs, offs), offs, offs < n, p0, p1, p2, OP, ARITY, CT,
               BOOL, False)


@triton.jit
def _strided_kernel(out, x0, x1, x2, n, p0, p1, p2,
                    size1, size2, size3, size4, size5,
                    a_s0, a_s1, a_s2, a_s3, a_s4, a_s5,
                    b_s0, b_s1, b_s2, b_s3, b_s4, b_s5,
                    c_s0, c_s1, c_s2, c_s3, c_s4, c_s5,
                    OP: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr,
                    NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    linear = program_range(BLOCK, INDEX64)
    sizes = (1, size1, size2, size3, size4, size5)
    offs = (offsets(linear, sizes, (a_s0, a_s1, a_s2, a_s3, a_s4, a_s5), NDIM),
            offsets(linear, sizes, (b_s0, b_s1, b_s2, b_s3, b_s4, b_s5), NDIM),
            offsets(linear, sizes, (c_s0, c_s1, c_s2, c_s3, c_s4, c_s5), NDIM))
    _block(out, x0, x1, x2, offs, linear, linear < n, p0, p1, p2, OP, ARITY, CT, BOOL, False)


@triton.jit
def _rows_kernel(out, x0, x1, x2, rows, cols, p0, p1, p2,
                 size1, size2, size3, size4,
                 a_s0, a_s1, a_s2, a_s3, a_s4, b_s0, b_s1, b_s2, b_s3, b_s4,
                 c_s0, c_s1, c_s2, c_s3, c_s4, a_c, b_c, c_c,
                 OP: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr,
                 NDIM: tl.constexpr, INDEX64: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """A [BR, BC] tile of rows (the outer dims, offsets computed once per row) x columns (the
    innermost dim, of stride a_c/b_c/c_c: 1, or 0 when broadcast). The grid is 1-D (rows and
    columns can each exceed the 65535 programs of grid axis 1): column blocks vary fastest."""
    col_blocks = tl.cdiv(cols, BC)
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    r = (pid // col_blocks) * BR + tl.arange(0, BR)
    c = (pid % col_blocks) * BC + tl.arange(0, BC)
    sizes = (1, size1, size2, size3, size4)
    offs = ((offsets(r, sizes, (a_s0, a_s1, a_s2, a_s3, a_s4), NDIM))[:, None] + c[None, :] * a_c,
            (offsets(r, sizes, (b_s0, b_s1, b_s2, b_s3, b_s4), NDIM))[:, None] + c[None, :] * b_c,
            (offsets(r, sizes, (c_s0, c_s1, c_s2, c_s3, c_s4), NDIM))[:, None] + c[None, :] * c_c)
    mask = (r < rows)[:, None] & (c < cols)[None, :]
    _block(out, x0, x1, x2, offs, r[:, None] * cols + c[None, :], mask, p0, p1, p2, OP, ARITY,
           CT, BOOL, False)


UNARY_OPS = (
    "neg", "abs", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "sigmoid", "relu", "erf", "erfc", "gelu", "gelu_tanh", "silu", "mish", "log_sigmoid",
    "hardsigmoid", "hardswish", "floor", "ceil", "trunc", "frac", "sign", "sgn", "reciprocal",
    "square", "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not")
DERIVATIVE_OPS = ("tanh_backward", "sigmoid_backward", "silu_backward", "gelu_backward",
                  "gelu_tanh_backward")
BINARY_OPS = (
    "add", "sub", "mul", "div", "floor_divide", "trunc_divide", "remainder", "fmod", "pow",
    "maximum", "minimum", "fmax", "fmin", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "hypot", "logaddexp", "xlogy", "copysign",
    "heaviside") + DERIVATIVE_OPS
TERNARY_OPS = ("where", "clamp", "lerp", "addcmul", "addcdiv")
_DIVISIONS = ("floor_divide", "trunc_divide", "remainder", "fmod")
PARAMETRIC_OPS = ("elu", "leaky_relu", "softplus", "hardshrink", "softshrink", "round",
                  "nan_to_num")
PREDICATES = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                        "logical_xor", "isnan", "isinf", "isfinite", "signbit", "logical_not"))

_BOOL = np.dtype(np.bool_)
_COMPUTE = {np.dtype(np.float16): (tl.float32, "fp32"),
            np.dtype(ml_dtypes.bfloat16): (tl.float32, "fp32"),
            np.dtype(np.float32): (tl.float32, "fp32"), np.dtype(np.float64): (tl.float64, "fp64"),
            _BOOL: (tl.int8, "i64"), np.dtype(np.uint8): (tl.uint8, "i64"),
            np.dtype(np.int8): (tl.int8, "i64"), np.dtype(np.int16): (tl.int16, "i64"),
            np.dtype(np.int32): (tl.int32, "i64"), np.dtype(np.int64): (tl.int64, "i64")}


def _arity(op):
    return 3 if op in TERNARY_OPS else 2 if op in BINARY_OPS else 1


def compute_type(dtype):
    """(Triton compute dtype, kernel scalar type) for data of numpy `dtype`."""
    return _COMPUTE[dtype]


def _data_dtype(op, operands):
    """The dtype the op computes on (a where's condition does not count)."""
    values = operands[1:] if op == "where" else operands
    for x in values:
        if isinstance(x, CUDAArray):
            return x.dtype
    from .... import dtypes
    if all(isinstance(x, bool) for x in values):
        return _BOOL
    if all(isinstance(x, int) for x in values):
        return np.dtype(np.int64)
    return dtypes.get_default_dtype().numpy_dtype


def _block_size(dtype):
    """32 bytes of each operand per thread, 4 warps (see the module docstring)."""
    return 128 * 32 // dtype.itemsize


def run(op, operands, params=()):
    """A new contiguous array holding `op` applied to `operands` (arrays of one shape or
    scalars) with op parameters `params`."""
    ref = operands[0]
    if ref.__class__ is not CUDAArray:
        ref = next(x for x in operands if x.__class__ is CUDAArray)
    device = ref.storage.device
    activate(device)
    stream = current_stream_handle(device)
    dtype = ref.dtype if op != "where" else _data_dtype(op, operands)
    out = CUDAArray.empty(ref.shape, _BOOL if op in PREDICATES else dtype, device, stream)
    if out.storage.nbytes:
        write(op, out, operands, _typed(params, dtype) if params else (), dtype, stream)
    return out


def _padded(operands):
    """The operands as the kernels take them: x0, x1, x2, None where the op has fewer."""
    return tuple(operands) + (None,) * (3 - len(operands))


def _typed(params, dtype):
    """Op parameters as the kernel reads them (float for floating data, int otherwise)."""
    cast = float if is_float(dtype) else int
    return tuple(cast(p) for p in params)


_contiguous_cache = {}
_strided_recipes = RecipeCache()


def write(op, out, operands, params, dtype, stream):
    """Compute `op` into the contiguous array `out`, reading each operand where it lies.

    The hot path (every array operand contiguous) is one pass over the operands that builds
    the kernel's key and arguments together, one dict lookup for the bound kernel (with its
    block size) and the launch."""
    out_ptr, out_strides, out_dtype = out.ptr, out.strides, out.dtype
    n = out.size
    key, args, aligned = [op, dtype, len(params)], [out_ptr], out_ptr % 16 == 0
    for x in operands:
        if x.__class__ is CUDAArray:
            if not (x.strides == out_strides and x.dtype is out_dtype) and not x.is_contiguous():
                _write_strided(op, out, _padded(operands), params, dtype, stream)
                return
            ptr = x.ptr
            key.append(x.dtype)
            args.append(ptr)
            aligned = aligned and ptr % 16 == 0
        else:
            key.append(x.__class__)
            args.append(x)  # an absent operand (a clamp bound) is a constexpr None
    args.insert(2, n)  # the kernel takes n after out and x0
    if params:
        args += [None] * (5 - len(args))  # the parameters follow x1 and x2
    elif args[-1] is None:  # absent last operands are trailing constants: not passed
        while args[-1] is None:
            args.pop()
    key.append(aligned)
    key.append(out.storage.device)
    key = tuple(key)
    launch = _contiguous_cache.get(key)
    if launch is None:
        launch = _contiguous_cache[key] = _contiguous_kernel_for(
            op, out, _padded(operands), params, dtype, aligned)
    kernel, block = launch
    kernel(((n + block - 1) // block,), stream, *args, *params)


def _contiguous_kernel_for(op, out, operands, params, dtype, aligned):
    """(bound contiguous kernel, its BLOCK); pointer alignment hints only: n may be anything."""
    entries = _contiguous_entries(op, out, operands, params, dtype)
    signature, consts, _ = specialization(_contiguous_kernel, entries)
    hints = [name for name, ty in signature.items() if ty.startswith("*")] if aligned else ()
    return (get_kernel(_contiguous_kernel, signature, consts, hints, _NUM_WARPS, 1, out.device),
            consts["BLOCK"])


def _write_strided(op, out, operands, params, dtype, stream):
    key = (op, out.shape, out.dtype, out.ptr % 16 == 0, tuple(map(_geometry, operands)),
           len(params), out.device)
    recipe = _strided_recipes.get_or_build(
        key, lambda: _strided_recipe(op, out, operands, params, dtype))
    if recipe is None:
        _write_by_leading_dim(op, out, operands, params, dtype, stream)
        return
    values = {"out": out}
    values.update((f"x{i}", x) for i, x in enumerate(operands))
    values.update((f"p{i}", p) for i, p in enumerate(params))
    recipe.run(stream, values)


def _geometry(x):
    """What a specialization depends on: an array's layout, dtype and alignment, else the
    scalar's type (or None)."""
    if isinstance(x, CUDAArray):
        return x.strides, x.dtype, x.ptr % 16 == 0
    return None if x is None else type(x)


def _common_entries(op, out, operands, params, dtype):
    """Entries every elementwise kernel takes: out, x0..x2, p0..p2 and the op constants;
    arrays, scalars and parameters are Slots named "out", "x0".. and "p0".."""
    ct, scalar_ty = compute_type(dtype)
    entries = [pointer("out", "out", out)]
    for i, x in enumerate(operands):
        role = f"x{i}"
        entries.append(pointer(role, role, x) if isinstance(x, CUDAArray)
                       else scalar(role, role, x, scalar_ty))
    entries += [scalar(f"p{i}", f"p{i}", params[i] if i < len(params) else None, scalar_ty)
                for i in range(3)]
    return entries + const(OP=op, ARITY=_arity(op), CT=ct, BOOL=dtype == _BOOL)


def _contiguous_entries(op, out, operands, params, dtype):
    return _common_entries(op, out, operands, params, dtype) + [
        ("n", out.size, "i64"), ("BLOCK", _block_size(dtype), "constexpr")]


_MIN_ROW = 16
_ROW_TILE = 2048
_ROW_BLOCK_MAX = 256


def _strided_recipe(op, out, operands, params, dtype, target=None):
    """The launch for operands laid out like these (None: more than MAX_DIMS dims remain):
    the 1-D kernel when they coalesce to contiguous, the rows kernel when the innermost dim
    is contiguous or broadcast in every operand (and long enough), else the flat strided one."""
    arrays = [x for x in operands if isinstance(x, CUDAArray)]
    sizes, strides = coalesce(out.shape, out.element_strides(),
                              *(x.element_strides() for x in arrays))
    recipe = Recipe(out.device, target)
    if len(sizes) == 1 and all(s == (1,) for s in strides):
        recipe.add(_contiguous_kernel, (cdiv(out.size, _block_size(dtype)),),
                   _contiguous_entries(op, out, operands, params, dtype), _NUM_WARPS)
        return recipe
    if len(sizes) > MAX_DIMS:
        return None
    strides = strides[1:]
    ity = index_type(sizes, *strides)
    entries = _common_entries(op, out, operands, params, dtype)
    if sizes[-1] >= _MIN_ROW and all(st[-1] in (0, 1) for st in strides):
        cols, rows = sizes[-1], out.size // sizes[-1]
        bc = min(next_pow2(cols), _ROW_BLOCK_MAX)
        br = min(next_pow2(rows), max(1, _ROW_TILE // bc))
        entries += [("rows", rows, ity), ("cols", cols, ity)]
        entries += size_entries("", sizes[:-1], MAX_DIMS - 1, ity)
        entries += _operand_strides(operands, [st[:-1] for st in strides], MAX_DIMS - 1, ity)
        entries += [(f"{p}_c", st[-1], "constexpr") for p, st in
                    zip("abc", _per_operand(operands, [st[-1:] for st in strides], (0,)))]
        entries += const(NDIM=len(sizes) - 1, INDEX64=ity == "i64", BR=br, BC=bc)
        recipe.add(_rows_kernel, (cdiv(rows, br) * cdiv(cols, bc),), entries, _NUM_WARPS)
        return recipe
    entries += [("n", out.size, "i64")] + size_entries("", sizes, MAX_DIMS, ity)
    entries += _operand_strides(operands, strides, MAX_DIMS, ity)
    entries += const(NDIM=len(sizes), INDEX64=ity == "i64", BLOCK=_STRIDED_BLOCK)
    recipe.add(_strided_kernel, (cdiv(out.size, _STRIDED_BLOCK),), entries, _NUM_WARPS)
    return recipe


def _per_operand(operands, values, default):
    """`values` (one per array operand) spread over the three operand slots."""
    it = iter(values)
    return [next(it) if isinstance(x, CUDAArray) else default for x in operands]


def _operand_strides(operands, strides, max_dims, ity):
    """Stride entries a_s*, b_s*, c_s* of the three operand slots (absent ones constexpr 0)."""
    entries = []
    for prefix, st in zip(("a_", "b_", "c_"), _per_operand(operands, strides, ())):
        entries += stride_entries(prefix, st, max_dims, ity)
    return entries


def _write_by_leading_dim(op, out, operands, params, dtype, stream):
    """More than MAX_DIMS non-mergeable dims (rare): one launch per index of the first dim."""
    for i in range(out.shape[0]):
        write(op, select(out, 0, i), tuple(select(x, 0, i) for x in operands if x is not None),
              params, dtype, stream)


def _unary_kernel(op):
    def kernel(x):
        return run(op, (x,))
    return _named(kernel, op)


def _binary_kernel(op):
    def kernel(a, b):
        return run(op, (a, b))
    return _named(kernel, op)


def _derivative_kernel(op):
    def kernel(g, v):
        return run(op, (g, v))
    return _named(kernel, op)


def _division_kernel(op):
    """A binary kernel that raises, as the CPU kernels, for an integer division by a Python
    scalar zero (checked on the host for free; zeros inside a divisor array give the defined
    values of the module docstring instead: finding them would cost a device sync)."""
    def kernel(a, b):
        if not isinstance(b, CUDAArray) and b == 0 and not is_float(a.dtype):
            raise RuntimeError(f"ZeroDivisionError: {op}: integer division by zero")
        return run(op, (a, b))
    return _named(kernel, op)


def _named(kernel, op):
    kernel.__name__ = kernel.__qualname__ = op
    kernel.__doc__ = f"Elementwise `{op}` on the GPU (see the module docstring)."
    return kernel


for _op in UNARY_OPS:
    register(_op, "cuda")(_unary_kernel(_op))
for _op in BINARY_OPS:
    register(_op, "cuda")((_division_kernel if _op in _DIVISIONS else
                           _derivative_kernel if _op in DERIVATIVE_OPS else _binary_kernel)(_op))


@register("elu", "cuda")
def elu(x, alpha, scale, input_scale):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)): elu, selu and celu."""
    return run("elu", (x,), (alpha, scale, input_scale))


@register("leaky_relu", "cuda")
def leaky_relu(x, negative_slope):
    return run("leaky_relu", (x,), (negative_slope,))


@register("softplus", "cuda")
def softplus(x, beta=1.0, threshold=20.0):
    return run("softplus", (x,), (beta, threshold))


@register("hardshrink", "cuda")
def hardshrink(x, lambd):
    """x where |x| > lambd, else 0."""
    return run("hardshrink", (x,), (lambd,))


@register("softshrink", "cuda")
def softshrink(x, lambd):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return run("softshrink", (x,), (lambd,))


@register("round", "cuda")
def round_(x, decimals=0):
    """Round half to even at `decimals` digits (integers are returned as they are)."""
    if not is_float(x.dtype):
        return run("round", (x,))
    return run("round", (x,), (10.0 ** abs(decimals), 1.0 if decimals < 0 else 0.0))


@register("nan_to_num", "cuda")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN and +-inf replaced; the defaults are the largest finite values of x's own dtype."""
    if not is_float(x.dtype):
        return run("nan_to_num", (x,))
    info = ml_dtypes.finfo(x.dtype)
    return run("nan_to_num", (x,), (float(nan), float(info.max if posinf is None else posinf),
                                    float(info.min if neginf is None else neginf)))


@register("clamp", "cuda")
def clamp(x, low, high):
    """Clamp to [low, high]; either bound may be None, a scalar or an array; NaN propagates."""
    return run("clamp", (x, _scalar_like(low, x.dtype), _scalar_like(high, x.dtype)))


def _scalar_like(value, dtype):
    """A Python float bound of integer data truncated to an int, as the CPU kernels convert it
    (hardtanh/relu6 pass float bounds whatever the dtype); arrays and None pass through."""
    if isinstance(value, float) and not is_float(dtype):
        return int(value)
    return value


@register("where", "cuda")
def where(cond, a, b):
    return run("where", (cond, a, b))


@register("lerp", "cuda")
def lerp(start, end, weight):
    """PyTorch's two-sided form: exact at both ends (weight 0 gives start, 1 gives end)."""
    return run("lerp", (start, end, weight))


@register("addcmul", "cuda")
def addcmul(x, a, b, value):
    return run("addcmul", (x, a, b), (value,))


@register("addcdiv", "cuda")
def addcdiv(x, a, b, value):
    return run("addcdiv", (x, a, b), (value,))


@register("elementwise_into", "cuda")
def elementwise_into(op, out, operands, params=()):
    """`op` of `operands` (arrays of out's shape and dtype, or scalars) written into `out`, for
    the in-place ops. Straight into `out` when it is contiguous and every operand that shares its
    memory is `out` itself, read and written by the same program; otherwise (a strided
    destination, an operand overlapping it another way) computed aside and copied in."""
    dtype, storage = out.dtype, out.storage
    params = _typed(params, dtype) if params else ()
    if out.is_contiguous() and all(x.__class__ is not CUDAArray or x.storage is not storage
                                   or (x.ptr == out.ptr and x.strides == out.strides)
                                   for x in operands):
        activate(out.device)
        write(op, out, operands, params, dtype, current_stream_handle(out.device))
    else:
        copy_(out, run(op, operands, params))
    return out


_INT_ONLY = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift", "bitwise_not")
_PARAMS = {"elu": (1.0, 1.0, 1.0), "leaky_relu": (0.01,), "softplus": (1.0, 20.0),
           "hardshrink": (0.5,), "softshrink": (0.5,),
           "round": (1.0, 0.0), "nan_to_num": (0.0, 1.0, -1.0), "addcmul": (1.0,),
           "addcdiv": (1.0,)}


def _compile_case(op, dtype, target, kinds=None, strides=None, shape=None):
    """Compile `op` on `dtype` operands (contiguous, or with `strides` for every operand);
    `kinds` marks operands given as "scalar" or None instead of arrays."""
    dtype = np.dtype(dtype)
    shape = shape or (8,) * (len(strides[0]) if strides else 1)
    kinds = kinds or ("array",) * _arity(op)
    operands = [placeholder(shape, _BOOL if op == "where" and i == 0 else dtype,
                            strides[i] if strides else None) if kind == "array" else
                (None if kind is None else 1) for i, kind in enumerate(kinds)]
    operands += [None] * (3 - len(operands))
    out = placeholder(shape, _BOOL if op in PREDICATES else dtype)
    _strided_recipe(op, out, operands, _typed(_PARAMS.get(op, ()), dtype), dtype, target)


def compile_all(target):
    """Every op once (float32, or int32 for bitwise ops), the main dtypes, scalar operands and
    strided layouts, compiled for `target` (CI does this without a GPU)."""
    for op in UNARY_OPS + BINARY_OPS + TERNARY_OPS + PARAMETRIC_OPS:
        _compile_case(op, np.int32 if op in _INT_ONLY else np.float32, target)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.uint8, np.bool_):
        _compile_case("add", dtype, target)
        _compile_case("lt", dtype, target, ("array", "scalar"))
    for op in ("pow", "floor_divide", "remainder"):
        _compile_case(op, np.int64, target)
    _compile_case("pow", np.int64, target, ("scalar", "array"))
    _compile_case("pow", np.int8, target, ("array", "scalar"))
    _compile_case("clamp", np.float16, target, ("array", None, "scalar"))
    transposed = (1, 8), (8, 1)
    _compile_case("add", np.float32, target, strides=[(8, 1), (0, 1)])
    _compile_case("mul", ml_dtypes.bfloat16, target, strides=[(768, 1), (0, 1)], shape=(8, 768))
    _compile_case("where", np.float16, target, strides=[(0, 0, 1), (64, 0, 1), (8, 1, 0)],
                  shape=(8, 8, 64))
    _compile_case("mul", ml_dtypes.bfloat16, target, strides=transposed)
    _compile_case("where", np.float32, target, strides=[(1, 8), (8, 1), (0, 0)])
    _compile_case("add", np.float32, target,
                  strides=[tuple(3 * 2 ** (12 - d) for d in range(6)), (1, 0, 0, 0, 0, 0)])
