"""HalfNormal(scale): |X| for X ~ Normal(0, scale); Chi2(df): Gamma(df / 2, 1 / 2);
Geometric(probs | logits): failures before the first success."""

import math

import genesis
from . import constraints
from .bernoulli import BinaryEvent, _bce_with_logits
from .distribution import Distribution
from .gamma import Gamma
from .location_scale import Normal
from .utils import broadcast_all, broadcast_tensors, tiny


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


class Chi2(Gamma):
    """Chi-squared with `df` degrees of freedom."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, genesis.full(tuple(df.shape), 0.5, dtype=df.dtype,
                                                device=df.device), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


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
