"""Dirichlet(concentration) and Beta(concentration1, concentration0), sampled as normalized
Gamma samples: their reparameterized gradients flow through `standard_gamma`'s."""

import genesis
from . import constraints
from .exp_family import ExponentialFamily
from .gamma import standard_gamma
from .utils import broadcast_all, digamma, eps, lgamma, tiny


def _dirichlet_mode(concentration):
    """(c - 1)+ normalized; where every c < 1, the one-hot of the largest (as PyTorch)."""
    shifted = (concentration - 1).clamp(min=0.0)
    mode = shifted / shifted.sum(-1, keepdim=True)
    peak = genesis.nn.functional.one_hot(mode.argmax(-1), shifted.shape[-1]).to(mode.dtype)
    all_below_one = (concentration < 1).all(-1, keepdim=True)
    return genesis.where(all_below_one, peak, mode)


class Dirichlet(ExponentialFamily):
    """Dirichlet over the simplex of the last dim of `concentration`."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(*shape))
        return (g / g.sum(-1, keepdim=True)).clamp(min=tiny(g.dtype), max=1 - eps(g.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (genesis.xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1))
                - lgamma(c).sum(-1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(c0) - (k - c0) * digamma(c0)
                - ((c - 1.0) * digamma(c)).sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0) on [0, 1]: a two-category Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def _check_arguments(self):
        """Checked as the two-category Dirichlet, with torch's message."""
        Dirichlet(genesis.stack([self.concentration1, self.concentration0], -1),
                  validate_args=True)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        both = genesis.stack([self.concentration1, self.concentration0], -1)
        return _dirichlet_mode(both)[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration1.expand(*shape))
        y = standard_gamma(self.concentration0.expand(*shape))
        return (x / (x + y)).clamp(min=tiny(x.dtype), max=1 - eps(x.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (genesis.xlogy(a - 1, value) + genesis.xlogy(b - 1, 1 - value)
                - lgamma(a) - lgamma(b) + lgamma(a + b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (lgamma(a) + lgamma(b) - lgamma(total) - (a - 1) * digamma(a)
                - (b - 1) * digamma(b) + (total - 2) * digamma(total))
