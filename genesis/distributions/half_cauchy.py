"""HalfCauchy(scale): |X| for X ~ Cauchy(0, scale)."""

import math

import genesis
from . import constraints
from .location_scale import Cauchy
from .transformed_distribution import TransformedDistribution, expand_by_rebuilding
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    """Density 2 / (pi scale (1 + (x / scale)^2)) on x >= 0."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_by_rebuilding(self, batch_shape)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return genesis.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                            device=self.scale.device)

    @property
    def mode(self):
        return genesis.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return genesis.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
