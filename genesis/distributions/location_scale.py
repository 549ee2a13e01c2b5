"""Normal and Laplace, location-scale families with closed-form cdf, icdf and entropy, and
HalfNormal, the absolute value of a zero-mean Normal."""

import math

import genesis
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all, eps, tiny

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class _LocScale(Distribution):
    """Shared parts: loc/scale broadcast together, real support, rsample, mean and mode."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    def _checked(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return value


class Normal(_LocScale, ExponentialFamily):
    """N(loc, scale^2)."""

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(-2))

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        noise = genesis.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + noise * self.scale

    def log_prob(self, value):
        value = self._checked(value)
        return (-((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log()
                - _LOG_SQRT_2PI)

    def cdf(self, value):
        value = self._checked(value)
        return 0.5 * (1 + genesis.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * _erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()


def _erfinv(y):
    """erf^-1 by Newton's method from Giles' single-precision start; the last step is taken
    with y attached, so the gradient is the exact 1 / erf'(x)."""
    with genesis.no_grad():
        w = -((1 - y) * (1 + y)).log()
        small = w < 5
        ws, wl = w - 2.5, w.sqrt() - 3
        central = _polyval(ws, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                                0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                                1.50140941])
        tail = _polyval(wl, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                             0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                             2.83297682])
        x = genesis.where(small, central, tail) * y
        for _ in range(3):
            x = x - (genesis.erf(x) - y) / _erf_slope(x)
    return x - (genesis.erf(x) - y) / _erf_slope(x)


def _erf_slope(x):
    return 2 / math.sqrt(math.pi) * (-x * x).exp()


def _polyval(x, coefficients):
    out = coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


class Laplace(_LocScale):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = eps(self.loc.dtype)
        u = genesis.rand(*shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - e) + (e - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        value = self._checked(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        value = self._checked(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class HalfNormal(Distribution):
    """The absolute value of a zero-mean Normal."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (self.scale,) = broadcast_all(scale)
        super().__init__(self.scale.shape, validate_args=validate_args)

    @property
    def _normal(self):
        return Normal(genesis.zeros_like(self.scale), self.scale, validate_args=False)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return genesis.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape=()):
        return self._normal.rsample(sample_shape).abs()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self._normal.log_prob(value) + math.log(2)
        return genesis.where(value >= 0, log_prob, float("-inf"))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self._normal.cdf(value) - 1

    def icdf(self, prob):
        return self._normal.icdf((prob + 1) / 2)

    def entropy(self):
        return self._normal.entropy() - math.log(2)


class Cauchy(_LocScale):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)); no moments."""

    @property
    def mean(self):
        return self.loc * float("nan")

    @property
    def variance(self):
        return genesis.full(tuple(self.loc.shape), float("inf"), dtype=self.loc.dtype,
                            device=self.loc.device)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = genesis.rand(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value):
        value = self._checked(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


_EULER_GAMMA = 0.57721566490153286060


class Gumbel(_LocScale):
    """Gumbel(loc, scale): cdf exp(-exp(-(x - loc) / scale))."""

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = genesis.rand(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u.clamp(min=tiny(u.dtype), max=1 - eps(u.dtype)))

    def log_prob(self, value):
        value = self._checked(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value):
        value = self._checked(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value):
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)
