"""NegativeBinomial(total_count, probs or logits): successes before total_count failures."""

import genesis
from . import constraints
from .binomial import CountOfTrials
from .gamma import Gamma

__all__ = ["NegativeBinomial"]


class NegativeBinomial(CountOfTrials):
    """The number of successes (each of probability `probs`) before `total_count` failures;
    sampled as a Poisson whose rate is Gamma(total_count, (1 - p) / p)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        with genesis.no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(),
                         validate_args=False).sample(sample_shape)
            return genesis.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = genesis.nn.functional.logsigmoid
        n = self.total_count
        unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        normalization = -genesis.lgamma(n + value) + genesis.lgamma(1.0 + value) \
            + genesis.lgamma(n)
        normalization = genesis.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization
