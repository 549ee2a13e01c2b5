"""Multinomial(total_count, probs or logits): category counts of total_count Categorical
draws."""

import genesis
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_tensors

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts over the last dim of `probs`/`logits` after `total_count` (a Python int) draws;
    log_prob also takes counts of other totals, sample needs the int."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = object.__new__(type(self))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self._event_shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape) if isinstance(sample_shape, (tuple, list)) else \
            (sample_shape,)
        draws = self._categorical.sample((self.total_count,) + sample_shape)
        draws = draws.permute(*range(1, draws.ndim), 0)
        counts = genesis.zeros(*self._extended_shape(sample_shape), dtype=self.probs.dtype,
                               device=self.probs.device)
        return counts.scatter_add(-1, draws, genesis.ones_like(draws, dtype=self.probs.dtype))

    def entropy(self):
        n = genesis.tensor(float(self.total_count), dtype=self.probs.dtype,
                           device=self.probs.device)
        term1 = n * self._categorical.entropy() - genesis.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        term2 = (binomial_probs * genesis.lgamma(support + 1)).sum((0, -1))
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_tensors(self.logits, value)
        log_factorial_n = genesis.lgamma(value.sum(-1) + 1)
        log_factorial_xs = genesis.lgamma(value + 1).sum(-1)
        logits = genesis.where((value == 0) & (logits == float("-inf")), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
