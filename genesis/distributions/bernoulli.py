"""Bernoulli(probs or logits) over {0, 1}, and Geometric: the failures before the first
success of such trials."""

import genesis
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import (broadcast_all, broadcast_tensors, lazy_property, logits_to_probs,
                    probs_to_logits, tiny)


def _bce_with_logits(logits, target):
    """-(target log sigmoid(l) + (1 - target) log sigmoid(-l)), stable for any l."""
    return logits.clamp(min=0) - logits * target + (-logits.abs()).exp().log1p()


class BinaryEvent(Distribution):
    """A distribution parameterized by one event probability per batch element, given as
    `probs` or as `logits` (the other computed on first use)."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        super().__init__((self.probs if probs is not None else self.logits).shape,
                         validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(BinaryEvent, ExponentialFamily):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return genesis.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            return genesis.bernoulli(self.probs.expand(*shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = genesis.arange(2, dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values


class Geometric(BinaryEvent):
    """The number of failures before the first success of Bernoulli(probs) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(probs, logits, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to satisfy "
                             "the constraint Interval(lower_bound=0.0, upper_bound=1.0), but "
                             f"found invalid values:\n{self.probs}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return genesis.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            u = genesis.rand(*shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny(u.dtype))
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_tensors(value.to(self.probs.dtype), self.probs)
        certain = (probs == 1) & (value == 0)
        return value * (-genesis.where(certain, 0.0, probs)).log1p() + probs.log()

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs
