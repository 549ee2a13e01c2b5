"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the distribution of
sum_i x_i x_i^T over df Normal(0, Sigma) vectors, sampled by Bartlett's decomposition."""

import math
import numbers
import warnings

import genesis
import genesis.linalg as LA
from . import constraints
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .utils import broadcast_shapes, eps, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma: d/dx of mvlgamma(x, p)."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shift = genesis.arange(p, dtype=x.dtype, device=x.device) / 2
    return genesis.digamma(x.unsqueeze(-1) - shift).sum(-1)


class Wishart(ExponentialFamily):
    """Positive-definite p x p matrices with `df` > p - 1 degrees of freedom and scale Sigma."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0
    _unexpanded = ("_unbroadcasted_scale_tril",)

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, param = given[0]
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = genesis.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(*batch_shape)
        p = param.shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(*batch_shape, -1, -1))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, tuple(param.shape[-2:]), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = LA.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = LA.cholesky(LA.inv(param))

    def _matrix_shape(self):
        return (*self._batch_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(*self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return genesis.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            *self._matrix_shape())

    def _df_matrix(self, df):
        return df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = genesis.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag = V.diagonal(0, -2, -1)
        return self._df_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        """L A A^T L^T with A lower triangular: sqrt(Chi2(df - i)) on the diagonal, standard
        normals below it."""
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        chi2_df = self.df.unsqueeze(-1) - genesis.arange(p, dtype=L.dtype, device=L.device)
        diag = Chi2(chi2_df, validate_args=False).rsample(sample_shape).sqrt()
        below = genesis.randn(*sample_shape, *self._batch_shape, p * (p - 1) // 2,
                              dtype=L.dtype, device=L.device)
        noise = genesis.diag_embed(diag.clamp(min=eps(L.dtype))) + vec_to_tril_matrix(below, -1)
        chol = L @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett samples; samples that come out singular (possible for df < p) are drawn
        again, up to `max_try_correction` (10) times."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = tuple(sample_shape) if isinstance(sample_shape, (tuple, list)) else \
            (sample_shape,)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = genesis.where(singular.unsqueeze(-1).unsqueeze(-1), fresh, sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_half(self):
        """p log(2) / 2 + log det(L)."""
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return p * _LOG_2 / 2 + L.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = genesis.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            0, -2, -1).sum(-1)
        return (-nu * self._log_det_half() - genesis.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * LA.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * self._log_det_half() + genesis.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-LA.slogdet(-2 * x).logabsdet + _LOG_2 * p) \
            + genesis.mvlgamma(y + (p + 1) / 2, p=p)
