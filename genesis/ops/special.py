"""Special functions composed from elementary ops: lgamma, digamma, polygamma, mvlgamma, erfinv,
ndtri, log_ndtr, the modified Bessel functions i0/i0e/i1/i1e, logit, sinc, xlog1py, entr, and
the regularized incomplete gamma functions igamma/igammac.

Each iterative evaluation (a series, an asymptotic expansion, Newton steps) is the forward of a
Function whose backward is the closed-form derivative, as PyTorch's derivatives are; the
evaluation runs in float32 for half types (rounded once) and in the input's type otherwise.
Integer inputs compute in the default float dtype.
"""

import math

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from .common import _finfo, broadcast_shapes, sum_to
from .creation import tensor
from .elementwise import (_inplace, abs, cos, erf, erfc, exp, floor, log, log1p, logical_and,
                          sigmoid, sign, sin, sqrt, tan, where, xlogy)
from .reduce import amin

_HALF = (dtypes.float16, dtypes.bfloat16)
_SQRT2 = math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _float_input(op, x):
    """`x` as the floating type the op computes in, and the type its result has."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    out = x.dtype if x.dtype.is_floating_point else dtypes.get_default_dtype()
    return x.to(dtypes.float32 if out in _HALF else out), out


class Special(Function):
    """y = evaluate(x); dy/dx = derivative(x, y), written with genesis ops."""

    @staticmethod
    def forward(ctx, x, evaluate, derivative, dtype):
        y = evaluate(x)
        ctx.derivative = derivative
        ctx.save_for_backward(x, y)
        return y.to(dtype)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g.to(x.dtype) * ctx.derivative(x, y), None, None, None


def _special(op, evaluate, derivative, doc):
    """The public function `op`: `evaluate` as a differentiable op whose derivative(x, y) is
    dy/dx, on floating input (integers and bools promote to the default float type)."""
    def fn(input):
        x, dtype = _float_input(op, input)
        return Special.apply(x, evaluate, derivative, dtype)
    fn.__name__, fn.__doc__ = op, doc
    return fn


# Gamma family: shift the argument to z >= 10 by the recurrences, then Stirling's series.

_SHIFT = 10
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
_DIGAMMA = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _is_pole(x):
    return logical_and(x <= 0, x == floor(x))


def _lgamma_positive(z):
    """log|Gamma(z)| for z >= 0.5."""
    small = z < _SHIFT
    base = where(small, z, 1.0)
    shifted = where(small, z + _SHIFT, z)
    product = base
    for k in range(1, _SHIFT):
        product = product * (base + k)
    inv, inv2 = 1 / shifted, 1 / (shifted * shifted)
    series, power = 0.0, inv
    for c in _STIRLING:
        series = series + c * power
        power = power * inv2
    value = (shifted - 0.5) * log(shifted) - shifted + _HALF_LOG_2PI + series
    return value - where(small, log(abs(product)), 0.0)


def _from_nearest_integer(x):
    """x - round(x), exact: sin(pi x) and tan(pi x) evaluated on it keep their precision near
    the poles, where pi * x would round away the distance to the integer."""
    return x - x.round()


def _lgamma(x):
    reflect = x < 0.5
    z = where(reflect, 1 - x, x)
    value = _lgamma_positive(z)
    reflected = math.log(math.pi) - log(abs(sin(math.pi * _from_nearest_integer(x)))) - value
    return where(_is_pole(x), math.inf, where(reflect, reflected, value))


def _digamma_positive(z):
    """psi(z) for z >= 0.5."""
    small = z < _SHIFT
    base = where(small, z, 1.0)
    shifted = where(small, z + _SHIFT, z)
    recurrence = 0.0
    for k in range(_SHIFT):
        recurrence = recurrence + 1 / (base + k)
    inv2 = 1 / (shifted * shifted)
    series, power = 0.0, inv2
    for c in _DIGAMMA:
        series = series + c * power
        power = power * inv2
    value = log(shifted) - 0.5 / shifted - series
    return value - where(small, recurrence, 0.0)


def _digamma(x):
    reflect = x < 0.5
    value = _digamma_positive(where(reflect, 1 - x, x))
    reflected = value - math.pi / tan(math.pi * _from_nearest_integer(x))
    out = where(reflect, reflected, value)
    return where(x == 0, -math.inf, where(_is_pole(x), math.nan, out))


def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2, by shifting q past 10 and the
    Euler-Maclaurin tail."""
    lowest = amin(q).item() if q.numel() else 0.0
    terms = _SHIFT + max(0, math.ceil(-lowest))
    total = 0.0
    for k in range(terms):
        total = total + (q + k) ** -s
    z = q + terms
    tail = z ** (1 - s) / (s - 1) + 0.5 * z ** -s
    rising, factorial, power = s, 2.0, z ** (-s - 1)
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
    for j, b in enumerate(bernoulli):
        tail = tail + b / factorial * rising * power
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        factorial *= (2 * j + 3) * (2 * j + 4)
        power = power / (z * z)
    return where(_is_pole(q), math.inf, total + tail)


def _polygamma(n):
    if n == 0:
        return _digamma
    scale = (-1) ** (n + 1) * math.factorial(n)
    return lambda x: scale * _hurwitz_zeta(n + 1, x)


lgamma = _special("lgamma", _lgamma, lambda x, y: _digamma(x),
                  "log|Gamma(x)|, elementwise.")
digamma = _special("digamma", _digamma, lambda x, y: _polygamma(1)(x),
                   "The logarithmic derivative of Gamma, elementwise.")


def polygamma(n, input):
    """The n-th derivative of digamma."""
    if not isinstance(n, int) or n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _special("polygamma", _polygamma(n), lambda x, y: _polygamma(n + 1)(x),
                    polygamma.__doc__)(input)


def mvlgamma(input, p):
    """Multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not input.dtype.is_floating_point:
        raise RuntimeError("mvlgamma: input must be a floating point tensor")
    out = p * (p - 1) / 4 * math.log(math.pi)
    for i in range(p):
        out = out + lgamma(input - i / 2)
    return out


# Inverse error function and inverse normal CDF: an initial guess from Abramowitz and Stegun
# 26.2.23, then Newton steps on erf(x) = a where |a| <= 1/2, and on log(erfc(x)) = log(1 - a) in
# the tails, where erf's residual would cancel and erfc's convexity would slow Newton down.

_NEWTON_STEPS = 6


def _inverse_erf_magnitude(a, c):
    """x >= 0 with erf(x) = a, given a in [0, 1] and c = 1 - a computed exactly."""
    p = where(c > 0, c / 2, 0.5)
    t = sqrt(-2 * log(p))
    x = (t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
         / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)) / _SQRT2
    x = abs(x)
    central = a <= 0.5
    log_c = log(where(central, 1.0, c))
    for _ in range(_NEWTON_STEPS):
        slope = 2 / math.sqrt(math.pi) * exp(-x * x)
        tail = erfc(x)
        step = where(central, (erf(x) - a) / slope,
                     (log_c - log(tail)) * (tail / slope))
        x = x - step
    x = where(c == 0, math.inf, x)
    return where(c < 0, math.nan, x)


def _erfinv(y):
    a = abs(y)
    return sign(y) * _inverse_erf_magnitude(a, 1 - a)


def _ndtri(p):
    upper = p >= 0.5
    a = where(upper, 2 * p - 1, 1 - 2 * p)
    c = where(upper, 2 * (1 - p), 2 * p)
    magnitude = _SQRT2 * _inverse_erf_magnitude(a, c)
    out = where(upper, magnitude, -magnitude)
    return where(logical_and(p >= 0, p <= 1), out, math.nan)


erfinv = _special("erfinv", _erfinv, lambda x, y: math.sqrt(math.pi) / 2 * exp(y * y),
                  "The inverse of erf on (-1, 1), elementwise.")
ndtri = _special("ndtri", _ndtri, lambda x, y: math.sqrt(2 * math.pi) * exp(y * y / 2),
                 "The inverse of the standard normal CDF.")


def ndtr(input):
    """The standard normal CDF."""
    x, dtype = _float_input("ndtr", input)
    return (0.5 * erfc(-x / _SQRT2)).to(dtype)


def log_ndtr(input):
    """log of the standard normal CDF, accurate far into the lower tail (an asymptotic series
    where the CDF itself would underflow)."""
    x, dtype = _float_input("log_ndtr", input)
    cut = -20.0 if x.dtype is dtypes.float64 else -10.0
    tail = x < cut
    direct = log(0.5 * erfc(-where(tail, 0.0, x) / _SQRT2))
    z = where(tail, x, cut)
    inv2 = 1 / (z * z)
    series, term = 1.0, 1.0
    for k in range(1, 7):
        term = term * -(2 * k - 1) * inv2
        series = series + term
    asymptotic = -z * z / 2 - log(-z) - _HALF_LOG_2PI + log(series)
    return where(tail, asymptotic, direct).to(dtype)


# Modified Bessel functions of the first kind, orders 0 and 1: the power series below 30
# (all terms positive, so no cancellation) and Hankel's asymptotic expansion above it.

_BESSEL_CUT = 30.0
_SERIES_TERMS = 90
_ASYMPTOTIC_TERMS = 20


def _bessel_series(x, order):
    """I_order(x) for |x| < cut: sum_k (x/2)^(2k+order) / (k! (k+order)!)."""
    quarter = x * x / 4
    term = (x / 2) ** order / math.factorial(order)
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter / (k * (k + order))
        total = total + term
    return total


def _bessel_asymptotic_scaled(x, order):
    """exp(-|x|) I_order(|x|) for |x| >= cut."""
    inv = 1 / (8 * x)
    total, term = 1.0, 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * -(4 * order * order - (2 * k - 1) ** 2) * inv / k
        total = total + term
    return total / sqrt(2 * math.pi * x)


def _bessel(order, scaled):
    def evaluate(x):
        ax = abs(x)
        large = ax >= _BESSEL_CUT
        near = where(large, 0.0, x)
        series = _bessel_series(near, order)
        if scaled:
            series = series * exp(-abs(near))
        far = _bessel_asymptotic_scaled(where(large, ax, _BESSEL_CUT), order)
        if not scaled:
            far = far * exp(where(large, ax, 0.0))
        if order == 1:
            far = far * sign(x)
        return where(large, far, series)
    return evaluate


_i0, _i0e, _i1, _i1e = _bessel(0, False), _bessel(0, True), _bessel(1, False), _bessel(1, True)


def _i1_over_x(x, i1):
    """I1(x) / x, with its limit 1/2 at 0."""
    return where(x == 0, 0.5, i1 / where(x == 0, 1.0, x))


i0 = _special("i0", _i0, lambda x, y: _i1(x),
              "The modified Bessel function of the first kind, order 0.")
i0e = _special("i0e", _i0e, lambda x, y: _i1e(x) - sign(x) * y,
               "exp(-|x|) i0(x), the exponentially scaled i0.")
i1 = _special("i1", _i1, lambda x, y: _i0(x) - _i1_over_x(x, y),
              "The modified Bessel function of the first kind, order 1.")
i1e = _special("i1e", _i1e, lambda x, y: _i0e(x) - sign(x) * y - _i1_over_x(x, y),
               "exp(-|x|) i1(x), the exponentially scaled i1.")


# Elementary compositions: their gradients come from the ops they are made of.

def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x, dtype = _float_input("logit", input)
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    return (log(x) - log1p(-x)).to(dtype)


def _sinc(x):
    """sin(pi x) / (pi x), with its limit 1 at 0."""
    zero = x == 0
    safe = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, sin(safe) / safe)


def _sinc_derivative(x, y):
    """d/dx sinc = pi (s cos s - sin s) / s^2 at s = pi x. Near 0 the two terms cancel (both
    about s), so |s| < 0.5 takes the series -s/3 + s^3/30 - s^5/840 + s^7/45360 instead
    (truncation below 1e-9)."""
    s = x * math.pi
    s2 = s * s
    series = s * (-1 / 3 + s2 * (1 / 30 + s2 * (-1 / 840 + s2 / 45360)))
    small = abs(s) < 0.5
    safe = where(small, 1.0, s)
    direct = (safe * cos(safe) - sin(safe)) / (safe * safe)
    return where(small, series, direct) * math.pi


sinc = _special("sinc", _sinc, _sinc_derivative, "sin(pi x) / (pi x), 1 at 0.")
sinc.__doc__ = "sin(pi x) / (pi x), with its limit 1 at 0."


class XLog1Py(Function):
    """x * log1p(y), 0 where x is 0 (unless y is nan); d/dx = log1p(y) (0 where x == 0 and
    y <= -1), d/dy = x / (1 + y)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return where(logical_and(x == 0, y == y), 0.0, x * log1p(y))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = where(logical_and(x == 0, y <= -1), 0.0, g * log1p(y))
        gy = g * x / (1 + y)
        return sum_to(gx, tuple(x.shape)), sum_to(gy, tuple(y.shape))


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is nan)."""
    device = (input if isinstance(input, Tensor) else other).device
    input, other = (t if isinstance(t, Tensor) else tensor(t, device=device)
                    for t in (input, other))
    dtype = dtypes.result_type(input, other)
    dtype = dtype if dtype.is_floating_point else dtypes.get_default_dtype()
    return XLog1Py.apply(input.to(dtype), other.to(dtype))


def entr(input):
    """-x log x elementwise: 0 at 0 and -inf for negative x."""
    x, dtype = _float_input("entr", input)
    out = -xlogy(x, x)
    return where(x < 0, -math.inf, out).to(dtype)


# Regularized incomplete gamma: P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P, as Cephes
# computes them (PyTorch's calc_igamma derives from it): P by its power series where x <= 1 or
# x <= a, Q by Legendre's continued fraction elsewhere, each then giving the other. Every element
# iterates together until all have converged (checked every _CHECK_EVERY steps).

_CHECK_EVERY = 16
_MAX_STEPS = 4096
_BIG, _BIG_INV = 4.503599627370496e15, 2.22044604925031308085e-16


def _converged(done, step):
    return step % _CHECK_EVERY == 0 and bool(done.all())


def _lower_series(a, x, eps, wanted):
    """sum_n x^n / ((a+1)...(a+n)), to relative `eps` where `wanted`."""
    r, term, total = a, 1.0, 1.0
    for step in range(1, _MAX_STEPS + 1):
        r = r + 1
        term = term * x / r
        total = total + term
        if _converged((term <= total * eps) | ~wanted, step):
            break
    return total


def _upper_fraction(a, x, eps, wanted):
    """Legendre's continued fraction of Q(a, x) e^x x^-a Gamma(a), for x > 1 and x > a, by its
    convergents p_k / q_k (rescaled together when they grow large): each element keeps the
    first convergent within relative `eps` of the one before, where `wanted`."""
    y, z, c = 1 - a, x + 2 - a, 0.0
    p_prev, q_prev, p, q = 1.0, x, x + 1, z * x
    ratio, done = p / q, ~wanted
    for step in range(1, _MAX_STEPS + 1):
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        p_prev, q_prev, p, q = p, q, p * z - p_prev * yc, q * z - q_prev * yc
        new = p / where(q != 0, q, 1.0)
        settled = (q != 0) & (abs(ratio - new) <= abs(new) * eps)
        ratio = where(done | (q == 0), ratio, new)
        done = done | settled
        scale = where(abs(p) > _BIG, _BIG_INV, 1.0)
        p_prev, q_prev, p, q = p_prev * scale, q_prev * scale, p * scale, q * scale
        if _converged(done, step):
            break
    return ratio


def _incomplete_gamma(a, x, upper, eps):
    """P(a, x) (Q when `upper`) for tensors of one floating type, with PyTorch's values at the
    edges: NaN for negative or NaN arguments and for a = x = 0 or a = x = inf."""
    regular = (a > 0) & (x > 0) & (a < math.inf) & (x < math.inf)
    a_safe, x_safe = where(regular, a, 1.0), where(regular, x, 1.0)
    fraction = (x_safe > 1) & (x_safe > a_safe)
    log_prefix = a_safe * log(x_safe) - x_safe - _lgamma(a_safe)
    prefix = exp(log_prefix)
    lower = _lower_series(a_safe, x_safe, eps, ~fraction) * prefix / a_safe
    upper_part = _upper_fraction(a_safe, where(fraction, x_safe, a_safe + 2), eps, fraction) \
        * prefix
    p = where(fraction, 1 - upper_part, lower)
    value = where(fraction, upper_part, 1 - lower) if upper else p
    one_at = (a == 0) | (x == math.inf)  # P is 1 there, and 0 where x == 0 or a == inf
    edge = where(one_at, 0.0 if upper else 1.0, 1.0 if upper else 0.0)
    value = where(regular, value, edge)
    invalid = (a < 0) | (x < 0) | (a != a) | (x != x) | ((a == 0) & (x == 0)) \
        | ((a == math.inf) & (x == math.inf))
    return where(invalid, math.nan, value)


class IncompleteGamma(Function):
    """P(a, x) or Q(a, x); d/dx = +-x^(a-1) e^-x / Gamma(a). PyTorch has no derivative in a."""

    @staticmethod
    def forward(ctx, a, x, upper, dtype):
        compute = dtypes.float32 if dtype in _HALF else dtypes.float64
        a_c, x_c = a.to(compute), x.to(compute)
        ctx.upper = upper
        ctx.save_for_backward(a, x)
        eps = float(_finfo(compute).eps)
        return _incomplete_gamma(a_c, x_c, upper, eps).to(dtype)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        name = "igammac" if ctx.upper else "igamma"
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        density = exp((a - 1) * log(x) - x - _lgamma(a))
        gx = g * (-density if ctx.upper else density)
        return None, sum_to(gx, tuple(x.shape)), None, None


def float_operands(op, input, other):
    """Two tensors of op `op` (whose kernels PyTorch has for floating types only) in their
    promoted floating type, broadcast together, with PyTorch's errors."""
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    dtype = dtypes.result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_{input.device.type}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(dtype)}'")
    a, x = input.to(dtype), other.to(dtype)
    if tuple(a.shape) != tuple(x.shape):
        shape = broadcast_shapes(tuple(a.shape), tuple(x.shape), op=op)
        a, x = a.expand(shape), x.expand(shape)
    return a, x


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other); differentiable in
    `other` only, as in PyTorch."""
    a, x = float_operands("igamma", input, other)
    return IncompleteGamma.apply(a, x, False, a.dtype)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other)."""
    a, x = float_operands("igammac", input, other)
    return IncompleteGamma.apply(a, x, True, a.dtype)


def expit(input):
    return sigmoid(input)


class SpecialMethods:
    """Tensor methods of this family and their in-place forms."""

    lgamma = lgamma
    digamma = digamma
    mvlgamma = mvlgamma
    erfinv = erfinv
    i0 = i0
    logit = logit
    sinc = sinc
    lgamma_ = _inplace(lgamma, "lgamma_")
    digamma_ = _inplace(digamma, "digamma_")
    mvlgamma_ = _inplace(mvlgamma, "mvlgamma_")
    erfinv_ = _inplace(erfinv, "erfinv_")
    i0_ = _inplace(i0, "i0_")
    logit_ = _inplace(logit, "logit_")
    sinc_ = _inplace(sinc, "sinc_")

    def polygamma(self, n):
        """The n-th derivative of digamma at this tensor (`polygamma(n, self)`)."""
        return polygamma(n, self)

    polygamma_ = _inplace(polygamma, "polygamma_")  # of the method just above
    igamma = igamma
    igammac = igammac
    igamma_ = _inplace(igamma, "igamma_")
    igammac_ = _inplace(igammac, "igammac_")


__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0", "logit", "sinc", "igamma",
           "igammac"]
