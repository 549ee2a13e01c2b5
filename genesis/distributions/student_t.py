"""StudentT(df, loc, scale): a Normal whose precision is scaled by an independent Chi2(df)/df."""

import math

import genesis
from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import broadcast_all, digamma, lgamma


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom, location `loc` and scale `scale`."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return genesis.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        heavy = genesis.where(self.df > 1, float("inf"), float("nan"))
        return genesis.where(self.df > 2, finite, heavy)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        normal = genesis.randn(*shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - log_norm

    def entropy(self):
        half_df, half_next = 0.5 * self.df, 0.5 * (self.df + 1)
        lbeta = lgamma(half_df) + 0.5 * math.log(math.pi) - lgamma(half_next)
        return (self.scale.log() + half_next * (digamma(half_next) - digamma(half_df))
                + 0.5 * self.df.log() + lbeta)
