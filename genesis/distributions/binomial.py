"""Binomial(total_count, probs or logits): successes in total_count Bernoulli trials."""

import genesis
from . import constraints
from .bernoulli import BinaryEvent
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Binomial"]


class CountOfTrials(BinaryEvent):
    """A count over `total_count` trials of one event probability (`probs` or `logits`),
    broadcast together, total_count in the parameter's dtype."""

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        total_count, value = broadcast_all(total_count, value)
        self.total_count = total_count.to(value.dtype)
        setattr(self, name, value)
        Distribution.__init__(self, value.shape, validate_args=validate_args)

    @property
    def param_shape(self):
        return self.__dict__.get("probs", self.__dict__.get("logits")).shape


def _clamp_by_zero(x):
    """max(x, 0), with gradient 1/2 at 0 as torch's."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(CountOfTrials):
    """The number of successes in `total_count` independent trials of probability `probs`."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs, logits, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            return genesis.binomial(self.total_count.expand(*shape), self.probs.expand(*shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, k, logits = self.total_count, value, self.logits
        log_factorials = genesis.lgamma(n + 1) - genesis.lgamma(k + 1) - genesis.lgamma(n - k + 1)
        normalizer = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p()
        return log_factorials + k * logits - normalizer

    def _homogeneous_count(self, op):
        count = int(self.total_count.max())
        if not bool((self.total_count.min() == count).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{op}`.")
        return count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        count = self._homogeneous_count("enumerate_support")
        values = genesis.arange(1 + count, dtype=self.total_count.dtype,
                                device=self.total_count.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values
