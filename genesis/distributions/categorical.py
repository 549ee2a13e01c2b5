"""Categorical (class indices) and OneHotCategorical (one-hot vectors), from probs or logits."""

import math

import genesis
from . import constraints
from .distribution import Distribution
from .utils import broadcast_tensors, finfo, lazy_property, logits_to_probs, probs_to_logits


def _probs_or_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    if value.ndim < 1:
        raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
    return name, value


class Categorical(Distribution):
    """A distribution over 0..K-1 with the last dim of `probs` (normalized) or `logits`."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, value = _probs_or_logits(probs, logits)
        if name == "probs":
            self.probs = value / value.sum(-1, keepdim=True)
        else:
            self.logits = value - value.logsumexp(-1, keepdim=True)
        self._num_events = value.shape[-1]
        super().__init__(value.shape[:-1], validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self.__dict__.get("probs", self.__dict__.get("logits")).shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return genesis.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype,
                            device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        count = math.prod(shape[:len(shape) - len(self._batch_shape)])
        flat = self.probs.detach().reshape(-1, self._num_events)
        draws = genesis.multinomial(flat, count, True)
        return draws.mT.reshape(*shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = float(finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = genesis.arange(self._num_events, dtype=genesis.int64, device=self.probs.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """A Categorical whose samples are one-hot vectors (event shape (K,))."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = object.__new__(type(self))
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return genesis.nn.functional.one_hot(self.probs.argmax(-1),
                                             self._event_shape[0]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return genesis.nn.functional.one_hot(indices, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = genesis.eye(n, dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape(n, *(1,) * len(self._batch_shape), n)
        return values.expand(n, *self._batch_shape, n) if expand else values

    def __repr__(self):
        return repr(self._categorical).replace("Categorical", "OneHotCategorical", 1)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the one-hot sample with the straight-through
    gradient of the probabilities (sample + probs - probs.detach())."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
