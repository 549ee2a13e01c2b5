"""Weibull(scale, concentration): scale * E^(1/concentration) for E ~ Exponential(1)."""


import genesis
from . import constraints
from .transformed_distribution import TransformedDistribution, expand_by_rebuilding
from .transforms import AffineTransform, PowerTransform
from .uniform import Exponential
from .utils import broadcast_all

__all__ = ["Weibull"]

_EULER_GAMMA = 0.57721566490153286060


class Weibull(TransformedDistribution):
    """Density (k / s) (x / s)^(k - 1) exp(-(x / s)^k) on x > 0."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(genesis.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_by_rebuilding(self, batch_shape)

    @property
    def mean(self):
        return self.scale * genesis.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (genesis.lgamma(1 + 2 * r).exp()
                                    - (2 * genesis.lgamma(1 + r)).exp())

    def entropy(self):
        r = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - r) + (self.scale * r).log() + 1
