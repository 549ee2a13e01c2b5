"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril), computed
through the Cholesky factor L of the covariance (Sigma = L L^T)."""

import math

import genesis
import genesis.linalg as LA
from . import constraints
from .distribution import Distribution
from .utils import broadcast_shapes, lazy_property


def batch_mahalanobis(L, x):
    """x^T (L L^T)^-1 x over the last dim, batch dims broadcast."""
    batch = broadcast_shapes(tuple(L.shape[:-2]), tuple(x.shape[:-1]))
    n = x.shape[-1]
    Lb = L.expand(*batch, n, n)
    z = LA.solve_triangular(Lb, x.expand(*batch, n).unsqueeze(-1), upper=False)
    return z.squeeze(-1).pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """A multivariate normal with mean `loc` and one of the covariance parameterizations."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _unexpanded = ("_unbroadcasted_scale_tril",)

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        name, matrix = given[0]
        if matrix.ndim < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch = broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(*batch, n, n))
        self.loc = loc.expand(*batch, n)
        super().__init__(batch, (n,), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = LA.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = LA.cholesky(LA.inv(matrix))

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, n, n)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return (L @ L.mT).expand(*self._batch_shape, n, n)

    @lazy_property
    def precision_matrix(self):
        n = self._event_shape[0]
        return genesis.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            *self._batch_shape, n, n)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(*self._batch_shape,
                                                                     *self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        noise = genesis.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ noise.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h
