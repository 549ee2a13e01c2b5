"""Invertible transforms with log |det Jacobian|, as `torch.distributions.transforms`:
elementwise ones (Exp, Affine, Sigmoid, Tanh, Power, Abs, Softplus, a distribution's CDF) and
ones onto structured sets (the simplex, Cholesky factors, positive-definite and correlation
matrices) here; the base class and compositions in transform_base.py, the structural ones
(Independent, Reshape, Cat, Stack) in structure_transforms.py; all under PyTorch's names."""

import math
import numbers

import genesis
from . import constraints
from .independent import sum_rightmost
from .structure_transforms import (CatTransform, IndependentTransform, ReshapeTransform,
                                   StackTransform)
from .transform_base import ComposeTransform, Transform, _Stateless, identity_transform
from .utils import (broadcast_shapes, clamp_probs, eps, tiny, tril_matrix_to_vec,
                    vec_to_tril_matrix)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform"]


class ExpTransform(_Stateless):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x



class PowerTransform(Transform):
    """y = x ** exponent on positive x."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _as_tensors(exponent)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = Transform.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return broadcast_shapes(tuple(shape), tuple(getattr(self.exponent, "shape", ())))

    inverse_shape = forward_shape

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent,
                                                                          cache_size)


def _as_tensors(*values):
    return [v if isinstance(v, genesis.Tensor) else genesis.tensor(float(v)) for v in values]


class SigmoidTransform(_Stateless):
    """y = sigmoid(x), kept inside (0, 1)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = 1

    def _call(self, x):
        return clamp_probs(x.sigmoid())

    def _inverse(self, y):
        y = clamp_probs(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -genesis.nn.functional.softplus(-x) - genesis.nn.functional.softplus(x)



class TanhTransform(_Stateless):
    """y = tanh(x); log|dy/dx| = 2 (log 2 - x - softplus(-2x)), stable for large |x|."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = 1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - genesis.nn.functional.softplus(-2.0 * x))



class SoftmaxTransform(_Stateless):
    """Unconstrained vectors to the simplex (not bijective; no Jacobian)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()



def _same(a, b):
    """Equal numbers, or tensors equal everywhere."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all())


class AffineTransform(Transform):
    """y = loc + scale * x, over `event_dim` event dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self.domain

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _same(self.loc, other.loc) and \
            _same(self.scale, other.scale)

    __hash__ = Transform.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            result = genesis.full(tuple(x.shape), math.log(abs(self.scale)), dtype=x.dtype,
                                  device=x.device)
        else:
            result = self.scale.abs().log().expand(*broadcast_shapes(
                tuple(x.shape), tuple(self.scale.shape)))
        return sum_rightmost(result, self._event_dim)

    def forward_shape(self, shape):
        return broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                        tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size)


class AbsTransform(_Stateless):
    """y = |x| (not bijective; its inverse picks the nonnegative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class SoftplusTransform(_Stateless):
    """y = log(1 + exp(x))."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1

    def _call(self, x):
        return genesis.nn.functional.softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -genesis.nn.functional.softplus(-x)


def _stick_offset(x, extra):
    """log of K + extra - 1, ..., extra for the K entries of x's last dim."""
    k = x.shape[-1]
    return genesis.arange(k + extra - 1, extra - 1, -1, dtype=x.dtype, device=x.device).log()


class StickBreakingTransform(_Stateless):
    """Unconstrained K-vectors to the (K+1)-simplex by stick breaking: the i-th piece takes a
    sigmoid share of what is left, the shares shifted so that x = 0 maps to the centre."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        z = clamp_probs((x - _stick_offset(x, 1)).sigmoid())
        ones = genesis.ones(*x.shape[:-1], 1, dtype=x.dtype, device=x.device)
        left = (1 - z).cumprod(-1)
        return genesis.cat([z, ones], -1) * genesis.cat([ones, left], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        left = (1 - y_crop.cumsum(-1)).clamp(min=tiny(y.dtype))
        return y_crop.log() - left.log() + _stick_offset(y_crop, 1)

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x, 1)
        return (-x + genesis.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return genesis.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return genesis.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_Stateless):
    """Square matrices to lower-triangular ones with a positive (exponentiated) diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + genesis.diag_embed(x.diagonal(0, -2, -1).exp())

    def _inverse(self, y):
        return y.tril(-1) + genesis.diag_embed(y.diagonal(0, -2, -1).log())


class PositiveDefiniteTransform(_Stateless):
    """Square matrices to positive-definite ones, L L^T of their LowerCholeskyTransform."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(genesis.linalg.cholesky(y))


class CorrCholeskyTransform(_Stateless):
    """Vectors of D (D - 1) / 2 reals to Cholesky factors of D x D correlation matrices: tanh
    to (-1, 1), then stick breaking on the squares, row by row."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        e = eps(x.dtype)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + e, max=1 - e), diag=-1)
        left = (1 - r.pow(2)).sqrt().cumprod(-1)
        ones = genesis.ones(*left.shape[:-1], 1, dtype=x.dtype, device=x.device)
        eye = genesis.eye(r.shape[-1], dtype=x.dtype, device=x.device)
        return (r + eye) * genesis.cat([ones, left[..., :-1]], -1)

    def _inverse(self, y):
        left = 1 - (y * y).cumsum(-1)
        ones = genesis.ones(*left.shape[:-1], 1, dtype=y.dtype, device=y.device)
        left = genesis.cat([ones, left[..., :-1]], -1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        left = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick_breaking = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + genesis.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return genesis.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return genesis.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x), onto the unit interval; log |dy/dx| is its log density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = 1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
