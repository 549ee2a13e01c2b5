"""LKJCholesky(dim, concentration): Cholesky factors of correlation matrices whose density is
proportional to det(C)^(concentration - 1), sampled by the onion method."""

import math

import genesis
from . import constraints
from .dirichlet import Beta
from .distribution import Distribution
from .utils import broadcast_all, tiny

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution on the lower Cholesky factors L of dim x dim correlation matrices
    C = L L^T."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        self._beta = self._row_norms(validate_args)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def _row_norms(self, validate_args):
        """Beta laws of the squared norms of the rows' off-diagonal parts (the onion method)."""
        c = self.concentration
        offset = genesis.arange(self.dim - 1, dtype=c.dtype, device=c.device)
        offset = genesis.cat([genesis.zeros(1, dtype=c.dtype, device=c.device), offset])
        marginal = c + 0.5 * (self.dim - 2)
        return Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset,
                    validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = LKJCholesky(self.dim, self.concentration.expand(*batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with genesis.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = genesis.randn(*shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = u.pow(2).sum(-1, keepdim=True).sqrt()
            first_row = genesis.arange(self.dim, device=y.device) == 0
            u = genesis.where(first_row.unsqueeze(-1), 0.0, u / norm)
            w = y.sqrt() * u
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny(w.dtype)).sqrt()
            return w + genesis.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        diag = value.diagonal(0, -2, -1)[..., 1:]
        order = genesis.arange(2, self.dim + 1, dtype=c.dtype, device=c.device)
        order = 2 * (c - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = c + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + genesis.mvlgamma(alpha - 0.5, dm1) \
            - genesis.lgamma(alpha) * dm1
        return unnormalized - normalizer
