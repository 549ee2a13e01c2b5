"""torch.special's Airy, Bessel, erfcx and Hurwitz zeta functions on numpy, vectorised.

Each follows the evaluation of PyTorch's CPU kernel (Cephes's approximations, whose tables are in
backends/cephes.py): the same branches, operations in the same order and the same working
precision (float32 data computes in float32; zeta, as PyTorch's CPU kernel, in float64), so
results round as PyTorch's do. A branch is evaluated on its own elements only (`branches`), as
the scalar code evaluates one branch per element. erfcx is our own: exp(x^2) erfc(x) below 2.5,
Laplace's continued fraction beyond. Inputs are float32 or float64 arrays (the ops layer
rejects half types, as PyTorch does).
"""

import functools
import math

import numpy as np

from ...dispatch import register
from .. import cephes
from .numerics import erfc

FRAC_1_SQRT_PI = 1 / math.sqrt(math.pi)


def branches(args, *cases):
    """out[i] = value(*(a[i] for a in args)) for the first (condition, value) whose condition
    holds at i, as an if/else chain: a condition None holds everywhere, a value is a function
    of the selected elements or a constant. The result has args[0]'s shape and dtype."""
    out = np.empty_like(args[0])
    rest = np.ones(out.shape, bool)
    for condition, value in cases:
        hit = rest if condition is None else rest & condition
        if hit.any():
            out[hit] = value(*(a[hit] for a in args)) if callable(value) else value
        rest &= ~hit
    return out


def polevl(x, coefficients):
    """The polynomial with `coefficients` (highest power first) at x, by Horner's rule from 0
    as Cephes's polevl runs it."""
    r = np.zeros_like(x)
    for c in coefficients:
        r = r * x + c
    return r


def chbevl(y, coefficients):
    """Cephes's Chebyshev series sum at y (its recurrence, then half of a - p)."""
    p, q, a = 0.0, 0.0, np.full_like(y, coefficients[0])
    for c in coefficients[1:]:
        p, q = q, a
        a = y * q - p + c
    return 0.5 * (a - p)


ELEMENTWISE = []  # the names numpy_kernel registers (the meta backend shares their rule)


def numpy_kernel(name, compute=None):
    """Register fn (of float arrays of one shape) as the CPU kernel `name` of arrays of one
    dtype or Python scalars beside them: broadcast together and cast to `compute` (default:
    their dtype), the result rounded to their dtype; floating-point warnings are silenced
    (overflow gives inf and 0/0 NaN, as in PyTorch)."""
    def decorate(fn):
        @functools.wraps(fn)
        def run(*args):
            dtype = next(a.dtype for a in args if isinstance(a, np.ndarray))
            with np.errstate(all="ignore"):
                arrays = np.broadcast_arrays(*(np.asarray(a, compute or dtype) for a in args))
                return np.asarray(fn(*(np.array(a) for a in arrays))).astype(dtype, copy=False)
        run.__name__ = run.__qualname__ = name
        register(name, "cpu")(run)
        ELEMENTWISE.append(name)
        return fn
    return decorate


# Airy's Ai: asymptotic forms beyond |x| = 2.09, the Maclaurin series between.

@numpy_kernel("airy_ai")
def _airy_ai(x):
    """Ai(x): NaN at +-inf, 0 past 103.892 (where exp would overflow)."""
    return branches((x,), (np.isinf(x), np.nan), (x > 103.892, 0.0),
                    (x < -2.09, _airy_oscillating), (x >= 2.09, _airy_decaying),
                    (None, _airy_series))


def _airy_oscillating(x):
    zeta = -2.0 * x * np.sqrt(-x) / 3.0
    z = 1.0 / zeta
    zz = z * z
    f = zz * polevl(zz, cephes.AIRY_AFN) / polevl(zz, cephes.AIRY_AFD)
    g = z * polevl(zz, cephes.AIRY_AGN) / polevl(zz, cephes.AIRY_AGD)
    t = zeta + math.pi / 4  # rounds to float32 as float32(pi) / 4 does
    return 5.64189583547756286948e-01 / np.sqrt(np.sqrt(-x)) * (np.sin(t) * (1.0 + f)
                                                                  - np.cos(t) * g)


def _airy_decaying(x):
    zeta = 2.0 * x * np.sqrt(x) / 3.0
    ratio = polevl(1.0 / zeta, cephes.AIRY_AN) / polevl(1.0 / zeta, cephes.AIRY_AD)
    return 5.64189583547756286948e-01 * ratio / (2.0 * np.sqrt(np.sqrt(x)) * np.exp(zeta))


def _airy_series(x):
    """c1 f(x) - c2 g(x), the two power series in x^3 summed until a term of f is below
    epsilon relative to f (each element stops on its own, as the scalar loop does)."""
    eps = np.finfo(x.dtype).eps
    f, g, m, n, z = np.ones_like(x), x.copy(), np.ones_like(x), x.copy(), x * x * x
    k, live = 1.0, np.ones(x.shape, bool)
    while live.any():
        m = np.where(live, m * z / (k + 1) / (k + 2), m)
        n = np.where(live, n * z / (k + 2) / (k + 3), n)
        f, g = np.where(live, f + m, f), np.where(live, g + n, g)
        live &= np.abs(m / f) > eps
        k += 3
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g


# Bessel functions of the first and second kinds, orders 0 and 1: rationals up to 5, the
# phase-amplitude form beyond.

def _phase_amplitude(x, w, order, second_kind):
    """sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)) for J (sin and cos
    exchanged and the sign flipped for Y), P and Q the order's rationals in w = (5/x)^2."""
    tables = (cephes.J0_PP, cephes.J0_PQ, cephes.J0_QP, cephes.J0_QQ) if order == 0 else \
        (cephes.J1_PP, cephes.J1_PQ, cephes.J1_QP, cephes.J1_QQ)
    p = polevl(w, tables[0]) / polevl(w, tables[1])
    q = 5.0 / x * (polevl(w, tables[2]) / polevl(w, tables[3]))
    shifted = x - (0.785398163397448309615660845819875721 if order == 0 else
                   2.356194490192344928846982537459627163)
    if second_kind:
        value = p * np.sin(shifted) + q * np.cos(shifted)
    else:
        value = p * np.cos(shifted) - q * np.sin(shifted)
    return value * cephes.SQRT_2_OVER_PI / np.sqrt(x)


def _w0(x):
    return 25.0 / (x * x)


def _w1(x):
    return 5.0 / x * (5.0 / x)


def _j0_positive(x):
    def rational(x):
        x2 = x * x
        return ((x2 - 5.78318596294678452118e+00) * (x2 - 3.04712623436620863991e+01)
                * polevl(x2, cephes.J0_RP) / polevl(x2, cephes.J0_RQ))
    return branches((x,), (x < 0.00001, lambda x: 1.0 - x * x / 4.0), (x <= 5.0, rational),
                    (None, lambda x: _phase_amplitude(x, _w0(x), 0, False)))


def _j1_positive(x):
    def rational(x):
        x2 = x * x
        return (polevl(x2, cephes.J1_RP) / polevl(x2, cephes.J1_RQ) * x
                * (x2 - 1.46819706421238932572e+01) * (x2 - 4.92184563216946036703e+01))
    return branches((x,), (x <= 5.0, rational),
                    (None, lambda x: _phase_amplitude(x, _w1(x), 1, False)))


@numpy_kernel("bessel_j0")
def _bessel_j0(x):
    """J0(x), even."""
    return _j0_positive(np.where(x < 0, -x, x))


@numpy_kernel("bessel_j1")
def _bessel_j1(x):
    """J1(x), odd (J1(-0) is -0, as PyTorch's)."""
    y = _j1_positive(np.where(x < 0, -x, x))
    return np.where(x < 0, -y, y)


@numpy_kernel("bessel_y0")
def _bessel_y0(x):
    """Y0(x): -inf at 0, NaN below."""
    def near(x):
        x2 = x * x
        return (polevl(x2, cephes.Y0_YP) / polevl(x2, cephes.Y0_YQ)
                + cephes.TWO_OVER_PI * np.log(x) * _j0_positive(x))
    small = x <= 5.0
    return branches((x,), (small & (x == 0), -np.inf), (small & (x < 0), np.nan),
                    (small, near), (None, lambda x: _phase_amplitude(x, _w0(x), 0, True)))


@numpy_kernel("bessel_y1")
def _bessel_y1(x):
    """Y1(x): -inf at 0, NaN below."""
    def near(x):
        x2 = x * x
        return (x * (polevl(x2, cephes.Y1_YP) / polevl(x2, cephes.Y1_YQ))
                + cephes.TWO_OVER_PI * (_j1_positive(x) * np.log(x) - 1.0 / x))
    small = x <= 5.0
    return branches((x,), (small & (x == 0), -np.inf), (small & (x <= 0), np.nan),
                    (small, near), (None, lambda x: _phase_amplitude(x, _w1(x), 1, True)))


# Modified Bessel functions: Chebyshev series on two ranges each.

def _i0_positive(x):
    return branches((x,), (x <= 8.0, lambda x: np.exp(x) * chbevl(x / 2.0 - 2.0, cephes.I0_A)),
                    (None, lambda x: np.exp(x) * chbevl(32.0 / x - 2.0, cephes.I0_B)
                     / np.sqrt(x)))


def _i1_positive(x):
    return branches((x,), (x <= 8.0, lambda x: chbevl(x / 2.0 - 2.0, cephes.I1_A) * x
                           * np.exp(x)),
                    (None, lambda x: np.exp(x) * chbevl(32.0 / x - 2.0, cephes.I1_B)
                     / np.sqrt(x)))


@numpy_kernel("modified_bessel_i0")
def _modified_bessel_i0(x):
    """I0(x), even."""
    return _i0_positive(np.abs(x))


@numpy_kernel("modified_bessel_i1")
def _modified_bessel_i1(x):
    """I1(x), odd."""
    y = _i1_positive(np.abs(x))
    return np.where(x < 0, -y, y)


def _k0_near(x, wide_log=False):
    """K0 on (0, 2]; `wide_log`: its log term in float64, as PyTorch's modified_bessel_k0
    computes it (a double literal there widens it)."""
    log = np.log(0.5 * x.astype(np.float64)) if wide_log else np.log(0.5 * x)
    return chbevl(x * x - 2.0, cephes.K0_A) - log * _i0_positive(x)


def _k1_near(x):
    return np.log(0.5 * x) * _i1_positive(x) + chbevl(x * x - 2.0, cephes.K1_A) / x


def _k(x, near, far_table, scaled):
    """K (exp(x) K when `scaled`) of the order whose (0, 2] form is `near` and whose series
    beyond is `far_table`: inf at 0, NaN below."""
    def close(x):
        return near(x) * np.exp(x) if scaled else near(x)

    def far(x):
        series = chbevl(8.0 / x - 2.0, far_table)
        return (series if scaled else np.exp(-x) * series) / np.sqrt(x)
    return branches((x,), (x == 0, np.inf), (x < 0, np.nan), (x <= 2.0, close), (None, far))


@numpy_kernel("modified_bessel_k0")
def _modified_bessel_k0(x):
    """K0(x)."""
    return _k(x, lambda x: _k0_near(x, wide_log=True), cephes.K0_B, False)


@numpy_kernel("modified_bessel_k1")
def _modified_bessel_k1(x):
    """K1(x)."""
    return _k(x, _k1_near, cephes.K1_B, False)


@numpy_kernel("scaled_modified_bessel_k0")
def _scaled_modified_bessel_k0(x):
    """exp(x) K0(x)."""
    return _k(x, _k0_near, cephes.K0_B, True)


@numpy_kernel("scaled_modified_bessel_k1")
def _scaled_modified_bessel_k1(x):
    """exp(x) K1(x)."""
    return _k(x, _k1_near, cephes.K1_B, True)


def spherical_series(dtype):
    """sin(x)/x = 1 + x^2 (c1 + x^2 (c2 + ... x^2 c6)): c6..c1, c_k = (-1)^k / (2k+1)! divided
    in `dtype`, as PyTorch writes them (T(-1.0) / T(6.0))."""
    t = np.dtype(dtype).type
    return tuple(float(t((-1) ** k) / t(math.factorial(2 * k + 1))) for k in range(6, 0, -1))


@numpy_kernel("spherical_bessel_j0")
def _spherical_bessel_j0(x):
    """sin(x) / x: 0 at +-inf, its Maclaurin series below |x| = 0.5."""
    def series(x):
        x2 = x * x
        return 1.0 + x2 * polevl(x2, spherical_series(x.dtype))
    return branches((x,), (np.isinf(x), 0.0), (np.abs(x) < 0.5, series),
                    (None, lambda x: np.sin(x) / x))


# erfcx = exp(x^2) erfc(x).

ERFCX_DIRECT_BELOW = 2.5


def erfcx_terms(dtype):
    """Terms of the continued fraction beyond ERFCX_DIRECT_BELOW: enough for the dtype's
    precision at 2.5 (the worst point)."""
    return 40 if dtype == np.float64 else 20


@numpy_kernel("erfcx")
def _erfcx(x):
    """exp(x^2) erfc(x): directly below 2.5, where neither factor overflows nor underflows;
    beyond, erfc's continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / ...)))),
    summed from its tail; 2 exp(x^2) - erfcx(-x) for negative x."""
    def positive(x):
        return branches((x,), (x < ERFCX_DIRECT_BELOW, lambda x: np.exp(x * x) * erfc(x)),
                        (None, lambda x: _erfcx_fraction(x, erfcx_terms(x.dtype))))
    return branches((x,), (x < 0, lambda x: 2.0 * np.exp(x * x) - positive(-x)),
                    (None, positive))


def _erfcx_fraction(x, terms):
    t = x
    for k in range(terms, 0, -1):
        t = x + (k / 2) / t
    return FRAC_1_SQRT_PI / t


# The Hurwitz zeta function, as Cephes's zeta: direct summation until the terms are
# negligible or q + i passes 9, then the Euler-Maclaurin tail.

@numpy_kernel("zeta", compute=np.float64)
def _zeta(x, q):
    """sum_k (q + k)^-x: inf at x = 1 and at the poles q = 0, -1, ...; NaN for x < 1 and
    for q <= 0 with x not an integer."""
    nonpositive = q <= 0
    return branches((x, q), (x == 1, np.inf), (x < 1, np.nan),
                    (nonpositive & (q == np.floor(q)), np.inf),
                    (nonpositive & (x != np.floor(x)), np.nan), (None, _zeta_sum))


def _zeta_sum(x, q):
    s, a, b = q ** -x, q.copy(), np.zeros_like(q)
    summing = np.ones(x.shape, bool)
    steps = 0
    while True:
        step = summing & ((steps < 9) | (a <= 9.0))
        if not step.any():
            break
        steps += 1
        a = np.where(step, a + 1.0, a)
        b = np.where(step, a ** -x, b)
        s = np.where(step, s + b, s)
        summing &= ~(step & (-cephes.MACHEP * s < b) & (b < cephes.MACHEP * s))
    return np.where(summing, _zeta_tail(x, s, a, b, summing), s)


def _zeta_tail(x, s, w, b, live):
    """s plus the Euler-Maclaurin remainder past w, whose first term is b = w^-x."""
    s = s + b * w / (x - 1.0) - 0.5 * b
    a, k = 1.0, 0.0
    live = live.copy()
    for coefficient in cephes.ZETA_A:
        a = a * (x + k)
        b = b / w
        t = a * b / coefficient
        s = np.where(live, s + t, s)
        live &= ~(np.abs(t / s) < cephes.MACHEP)
        a = a * (x + (k + 1.0))
        b = b / w
        k += 2.0
    return s
