"""The formulas of kernels/special.py's Airy, Bessel, erfcx and zeta functions: the evaluations of
backends/cpu/special.py (PyTorch's, on Cephes's tables in backends/cephes.py), lane by lane.

Each branch is computed on every lane and the lane's own chosen by `tl.where`, in the order of
the scalar code's if/else chain; loops whose length depends on the data (Airy's series, zeta's
sum) run until no lane of the block needs another step, each lane stopping where its scalar
loop would. Divisions and square roots are correctly rounded (`div_rn`, `sqrt_rn`), as
PyTorch's CUDA kernels compute them; the arithmetic is in the data's type (float32 or float64).
"""

import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ... import cephes
from ...cpu.special import ERFCX_DIRECT_BELOW, FRAC_1_SQRT_PI, erfcx_terms, spherical_series
from ._math import div_rn, sqrt_rn


def _tables(*names):
    return tuple(tl.constexpr(getattr(cephes, name)) for name in names)


AIRY_AN, AIRY_AD, AIRY_AFN, AIRY_AFD, AIRY_AGN, AIRY_AGD = _tables(
    "AIRY_AN", "AIRY_AD", "AIRY_AFN", "AIRY_AFD", "AIRY_AGN", "AIRY_AGD")
J0_PP, J0_PQ, J0_QP, J0_QQ, J0_RP, J0_RQ, Y0_YP, Y0_YQ = _tables(
    "J0_PP", "J0_PQ", "J0_QP", "J0_QQ", "J0_RP", "J0_RQ", "Y0_YP", "Y0_YQ")
J1_PP, J1_PQ, J1_QP, J1_QQ, J1_RP, J1_RQ, Y1_YP, Y1_YQ = _tables(
    "J1_PP", "J1_PQ", "J1_QP", "J1_QQ", "J1_RP", "J1_RQ", "Y1_YP", "Y1_YQ")
I0_A, I0_B, I1_A, I1_B, K0_A, K0_B, K1_A, K1_B = _tables(
    "I0_A", "I0_B", "I1_A", "I1_B", "K0_A", "K0_B", "K1_A", "K1_B")
ZETA_A = tl.constexpr(cephes.ZETA_A)


SPHERICAL_32 = tl.constexpr(spherical_series(np.float32))
SPHERICAL_64 = tl.constexpr(spherical_series(np.float64))
ERFCX_CUT = tl.constexpr(ERFCX_DIRECT_BELOW)
ERFCX_TERMS_32 = tl.constexpr(erfcx_terms(np.dtype(np.float32)))
ERFCX_TERMS_64 = tl.constexpr(erfcx_terms(np.dtype(np.float64)))
_FRAC_1_SQRT_PI = tl.constexpr(FRAC_1_SQRT_PI)
_QUARTER_PI = tl.constexpr(math.pi / 4)  # pi/4 rounds to float32 as float32(pi) / 4 does
_SQRT_2_OVER_PI = tl.constexpr(cephes.SQRT_2_OVER_PI)
_TWO_OVER_PI = tl.constexpr(cephes.TWO_OVER_PI)
_ZETA_EPS = tl.constexpr(cephes.MACHEP)


@triton.jit
def polevl(x, C: tl.constexpr):
    """The polynomial with coefficients C (highest power first) at x, Horner's rule from 0."""
    r = tl.zeros_like(x)
    for i in tl.static_range(len(C.value)):
        r = r * x + C[i]
    return r


@triton.jit
def _chbevl(y, C: tl.constexpr):
    """Cephes's Chebyshev series sum at y: its recurrence, then half of a - p."""
    p = tl.zeros_like(y)
    q = tl.zeros_like(y)
    a = tl.zeros_like(y) + C[0]
    for i in tl.static_range(1, len(C.value)):
        p = q
        q = a
        a = y * q - p + C[i]
    return 0.5 * (a - p)


@triton.jit
def _typed(value, like):
    """`value` in like's dtype: Triton compares a tensor with a Python float rounded to float32,
    which would move float64 branch points such as 2.09."""
    return tl.full([], value, like.dtype)


@triton.jit
def any_lane(flags):
    return tl.max(flags.to(tl.int32), 0) > 0


@triton.jit
def special_unary(OP: tl.constexpr, x, live):
    """The unary function OP at x (`live`: the lanes that hold elements)."""
    if OP == "airy_ai":
        r = _airy_ai(x, live)
    elif OP == "bessel_j0":
        r = _j0(tl.where(x < 0, -x, x))
    elif OP == "bessel_j1":
        r = _j1(tl.where(x < 0, -x, x))
        r = tl.where(x < 0, -r, r)
    elif OP == "bessel_y0":
        r = _y0(x)
    elif OP == "bessel_y1":
        r = _y1(x)
    elif OP == "modified_bessel_i0":
        r = _i0(tl.abs(x))
    elif OP == "modified_bessel_i1":
        r = _i1(tl.abs(x))
        r = tl.where(x < 0, -r, r)
    elif OP == "modified_bessel_k0" or OP == "scaled_modified_bessel_k0":
        r = _k(x, 0, OP == "scaled_modified_bessel_k0")
    elif OP == "modified_bessel_k1" or OP == "scaled_modified_bessel_k1":
        r = _k(x, 1, OP == "scaled_modified_bessel_k1")
    elif OP == "spherical_bessel_j0":
        r = _spherical_j0(x)
    else:
        tl.static_assert(OP == "erfcx", "unknown special function")
        r = _erfcx(x)
    return r


# Airy's Ai

@triton.jit
def _airy_ai(x, live):
    """NaN at +-inf, 0 past 103.892, the oscillating form below -2.09, the decaying one from
    2.09, the series between."""
    zeta = div_rn(-2.0 * x * sqrt_rn(-x), 3.0)
    z = div_rn(1.0, zeta)
    zz = z * z
    f = div_rn(zz * polevl(zz, AIRY_AFN), polevl(zz, AIRY_AFD))
    g = div_rn(z * polevl(zz, AIRY_AGN), polevl(zz, AIRY_AGD))
    t = zeta + _QUARTER_PI
    oscillating = div_rn(5.64189583547756286948e-01, sqrt_rn(sqrt_rn(-x))) * (
        libdevice.sin(t) * (1.0 + f) - libdevice.cos(t) * g)
    zeta = div_rn(2.0 * x * sqrt_rn(x), 3.0)
    w = div_rn(1.0, zeta)
    ratio = div_rn(polevl(w, AIRY_AN), polevl(w, AIRY_AD))
    decaying = div_rn(5.64189583547756286948e-01 * ratio,
                      2.0 * sqrt_rn(sqrt_rn(x)) * libdevice.exp(zeta))
    below = x < _typed(-2.09, x)
    above = x >= _typed(2.09, x)
    series = _airy_series(tl.where(below | above, 0.0, x), live & ~(below | above))
    r = tl.where(above, decaying, series)
    r = tl.where(below, oscillating, r)
    r = tl.where(x > _typed(103.892, x), 0.0, r)
    return tl.where((x == float("inf")) | (x == float("-inf")), float("nan"), r)


@triton.jit
def _airy_series(x, live):
    """The two Maclaurin series in x^3, each lane summing until a term of f is below epsilon
    relative to f."""
    if x.dtype == tl.float64:
        eps = 2.220446049250313e-16
    else:
        eps = 1.1920928955078125e-07
    f = tl.zeros_like(x) + 1.0
    m = tl.zeros_like(x) + 1.0
    g = x
    n = x
    z = x * x * x
    k = tl.zeros_like(x) + 1.0
    while any_lane(live):
        m = tl.where(live, div_rn(div_rn(m * z, k + 1.0), k + 2.0), m)
        n = tl.where(live, div_rn(div_rn(n * z, k + 2.0), k + 3.0), n)
        f = tl.where(live, f + m, f)
        g = tl.where(live, g + n, g)
        live = live & (tl.abs(div_rn(m, f)) > eps)
        k += 3.0
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g


# Bessel functions of the first and second kinds

@triton.jit
def _phase_amplitude(x, ORDER: tl.constexpr, SECOND_KIND: tl.constexpr):
    """sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)), sin and cos exchanged and
    the sign flipped for the second kind."""
    if ORDER == 0:
        w = div_rn(25.0, x * x)
        p = div_rn(polevl(w, J0_PP), polevl(w, J0_PQ))
        q = div_rn(5.0, x) * div_rn(polevl(w, J0_QP), polevl(w, J0_QQ))
        shifted = x - 0.785398163397448309615660845819875721
    else:
        w = div_rn(5.0, x) * div_rn(5.0, x)
        p = div_rn(polevl(w, J1_PP), polevl(w, J1_PQ))
        q = div_rn(5.0, x) * div_rn(polevl(w, J1_QP), polevl(w, J1_QQ))
        shifted = x - 2.356194490192344928846982537459627163
    if SECOND_KIND:
        value = p * libdevice.sin(shifted) + q * libdevice.cos(shifted)
    else:
        value = p * libdevice.cos(shifted) - q * libdevice.sin(shifted)
    return div_rn(value * _SQRT_2_OVER_PI, sqrt_rn(x))


@triton.jit
def _j0(x):
    """J0 at x >= 0 (or NaN)."""
    x2 = x * x
    rational = div_rn((x2 - 5.78318596294678452118e+00) * (x2 - 3.04712623436620863991e+01)
                      * polevl(x2, J0_RP), polevl(x2, J0_RQ))
    r = tl.where(x <= 5.0, rational, _phase_amplitude(x, 0, False))
    return tl.where(x < _typed(0.00001, x), 1.0 - div_rn(x2, 4.0), r)


@triton.jit
def _j1(x):
    """J1 at x >= 0 (or NaN)."""
    x2 = x * x
    rational = div_rn(polevl(x2, J1_RP), polevl(x2, J1_RQ)) * x \
        * (x2 - 1.46819706421238932572e+01) * (x2 - 4.92184563216946036703e+01)
    return tl.where(x <= 5.0, rational, _phase_amplitude(x, 1, False))


@triton.jit
def _y0(x):
    x2 = x * x
    near = div_rn(polevl(x2, Y0_YP), polevl(x2, Y0_YQ)) \
        + _TWO_OVER_PI * libdevice.log(x) * _j0(x)
    near = tl.where(x < 0, float("nan"), near)
    near = tl.where(x == 0, float("-inf"), near)
    return tl.where(x <= 5.0, near, _phase_amplitude(x, 0, True))


@triton.jit
def _y1(x):
    x2 = x * x
    near = x * div_rn(polevl(x2, Y1_YP), polevl(x2, Y1_YQ)) \
        + _TWO_OVER_PI * (_j1(x) * libdevice.log(x) - div_rn(1.0, x))
    near = tl.where(x <= 0, float("nan"), near)
    near = tl.where(x == 0, float("-inf"), near)
    return tl.where(x <= 5.0, near, _phase_amplitude(x, 1, True))


# Modified Bessel functions

@triton.jit
def _i0(x):
    """I0 at x >= 0 (or NaN)."""
    e = libdevice.exp(x)
    far = div_rn(e * _chbevl(div_rn(32.0, x) - 2.0, I0_B), sqrt_rn(x))
    return tl.where(x <= 8.0, e * _chbevl(x * 0.5 - 2.0, I0_A), far)


@triton.jit
def _i1(x):
    """I1 at x >= 0 (or NaN)."""
    e = libdevice.exp(x)
    far = div_rn(e * _chbevl(div_rn(32.0, x) - 2.0, I1_B), sqrt_rn(x))
    return tl.where(x <= 8.0, _chbevl(x * 0.5 - 2.0, I1_A) * x * e, far)


@triton.jit
def _k(x, ORDER: tl.constexpr, SCALED: tl.constexpr):
    """K0 or K1 (times exp(x) when SCALED): inf at 0, NaN below. Unscaled K0's log term is
    computed in float64, as PyTorch's (a double literal widens it there)."""
    if ORDER == 0:
        if SCALED:
            near = _chbevl(x * x - 2.0, K0_A) - libdevice.log(0.5 * x) * _i0(x)
        else:
            wide = x.to(tl.float64)
            near = (_chbevl(x * x - 2.0, K0_A).to(tl.float64)
                    - libdevice.log(0.5 * wide) * _i0(x).to(tl.float64)).to(x.dtype)
        far = _chbevl(div_rn(8.0, x) - 2.0, K0_B)
    else:
        near = libdevice.log(0.5 * x) * _i1(x) + div_rn(_chbevl(x * x - 2.0, K1_A), x)
        far = _chbevl(div_rn(8.0, x) - 2.0, K1_B)
    if SCALED:
        near = near * libdevice.exp(x)
        far = div_rn(far, sqrt_rn(x))
    else:
        far = div_rn(libdevice.exp(-x) * far, sqrt_rn(x))
    r = tl.where(x <= 2.0, near, far)
    r = tl.where(x < 0, float("nan"), r)
    return tl.where(x == 0, float("inf"), r)


@triton.jit
def _spherical_j0(x):
    """sin(x) / x: its series below |x| = 0.5, 0 at +-inf."""
    x2 = x * x
    if x.dtype == tl.float64:
        series = polevl(x2, SPHERICAL_64)
    else:
        series = polevl(x2, SPHERICAL_32)
    r = tl.where(tl.abs(x) < 0.5, 1.0 + x2 * series, div_rn(libdevice.sin(x), x))
    return tl.where((x == float("inf")) | (x == float("-inf")), 0.0, r)


# erfcx

@triton.jit
def _erfcx_fraction(x, TERMS: tl.constexpr):
    t = x
    for k in tl.static_range(TERMS, 0, -1):
        t = x + div_rn(k * 0.5, t)
    return div_rn(_FRAC_1_SQRT_PI, t)


@triton.jit
def _erfcx(x):
    """exp(x^2) erfc(x) below ERFCX_CUT, the continued fraction beyond, 2 exp(x^2) - erfcx(-x)
    for negative x (backends/cpu/special.py's erfcx)."""
    a = tl.abs(x)
    if x.dtype == tl.float64:
        fraction = _erfcx_fraction(a, ERFCX_TERMS_64)
    else:
        fraction = _erfcx_fraction(a, ERFCX_TERMS_32)
    positive = tl.where(a < ERFCX_CUT, libdevice.exp(a * a) * libdevice.erfc(a), fraction)
    return tl.where(x < 0, 2.0 * libdevice.exp(x * x) - positive, positive)


# The Hurwitz zeta function

@triton.jit
def zeta(x, q, live):
    """sum_k (q + k)^-x as Cephes sums it: terms until they are negligible or q + i passes 9,
    then the Euler-Maclaurin tail; inf at x = 1 and at the poles of q, NaN for x < 1 and for
    q <= 0 with x not an integer."""
    nonpositive = q <= 0
    pole = nonpositive & (q == libdevice.floor(q))
    undefined = nonpositive & (x != libdevice.floor(x))
    regular = live & (x != 1) & ~(x < 1) & ~pole & ~undefined
    s = _zeta_sum(tl.where(regular, x, 2.0), tl.where(regular, q, 1.0), regular)
    r = tl.where(undefined, float("nan"), s)
    r = tl.where(pole, float("inf"), r)
    r = tl.where(x < 1, float("nan"), r)
    return tl.where(x == 1, float("inf"), r)


@triton.jit
def _zeta_sum(x, q, summing):
    s = libdevice.pow(q, -x)
    a = q
    b = tl.zeros_like(q)
    steps = 0
    stepping = summing
    while any_lane(stepping):
        a = tl.where(stepping, a + 1.0, a)
        b = tl.where(stepping, libdevice.pow(a, -x), b)
        s = tl.where(stepping, s + b, s)
        summing = summing & ~(stepping & (-_ZETA_EPS * s < b) & (b < _ZETA_EPS * s))
        steps += 1
        stepping = summing & ((steps < 9) | (a <= 9.0))
    return tl.where(summing, _zeta_tail(x, s, a, b, summing), s)


@triton.jit
def _zeta_tail(x, s, w, b, live):
    """s plus the Euler-Maclaurin remainder past w, whose first term is b = w^-x."""
    s = s + div_rn(b * w, x - 1.0) - 0.5 * b
    a = tl.zeros_like(x) + 1.0
    k = 0.0
    for i in tl.static_range(len(ZETA_A.value)):
        a = a * (x + k)
        b = div_rn(b, w)
        t = div_rn(a * b, ZETA_A[i])
        s = tl.where(live, s + t, s)
        live = live & ~(tl.abs(div_rn(t, s)) < _ZETA_EPS)
        a = a * (x + (k + 1.0))
        b = div_rn(b, w)
        k += 2.0
    return s
