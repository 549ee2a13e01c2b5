"""FisherSnedecor(df1, df2): the F distribution, (X1 / df1) / (X2 / df2) for chi-squared X1, X2."""

import genesis
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import expand_by_rebuilding
from .utils import broadcast_all, tiny

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The ratio of two scaled chi-squared variables with `df1` and `df2` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=validate_args)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=validate_args)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_by_rebuilding(self, batch_shape)

    @property
    def mean(self):
        df2 = genesis.where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return genesis.where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self):
        df2 = genesis.where(self.df2 <= 4, float("nan"), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        x1, x2 = self._gamma1.rsample(sample_shape), self._gamma2.rsample(sample_shape)
        eps = tiny(x2.dtype)
        return (x1 / x2.clamp(min=eps)).clamp(min=eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = genesis.lgamma(ct1 + ct2) - genesis.lgamma(ct1) - genesis.lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
