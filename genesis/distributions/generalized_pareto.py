"""GeneralizedPareto(loc, scale, concentration): the tail distribution of extreme value
theory; concentration 0 is an Exponential shifted to loc, -1 a Uniform."""

import math

import genesis
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival function (1 + c z)^(-1/c) of z = (x - loc) / scale (exp(-z) at c = 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _safe_concentration(self):
        """(concentration == 0, concentration with its zeros replaced by 1)."""
        eq_zero = genesis.isclose(self.concentration, genesis.zeros_like(self.concentration))
        return eq_zero, genesis.where(eq_zero, 1.0, self.concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(genesis.rand(*shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, c = self._safe_concentration()
        y = 1 / c + genesis.ones_like(z)
        nonzero = genesis.where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - genesis.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, c = self._safe_concentration()
        return genesis.where(eq_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, c = self._safe_concentration()
        log_u = (-value).log1p()
        nonzero = self.loc + self.scale / c * (-c * log_u).expm1()
        return genesis.where(eq_zero, self.loc - self.scale * log_u, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        c = genesis.where(valid, self.concentration, 0.5)
        return genesis.where(valid, self.loc + self.scale / (1 - c), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        c = genesis.where(valid, self.concentration, 0.25)
        return genesis.where(valid, self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c)), math.nan)

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).expand(*self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = genesis.where(self.concentration < 0,
                              self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
