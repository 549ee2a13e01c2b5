"""Transforms that act on a tensor's structure, each built from others or from shapes: a
transform's dims read as one event (Independent), reshaped events (Reshape), and transforms
applied to slices joined along a dim (Cat, Stack)."""

import math

import genesis
from . import constraints
from .independent import sum_rightmost
from .transform_base import Transform


class IndependentTransform(Transform):
    """`base_transform` with its rightmost `reinterpreted_batch_ndims` dims treated as one event:
    log |det J| sums over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


def _reshaped(shape, old, new):
    """`shape` with its trailing `old` dims replaced by `new`."""
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if tuple(shape[cut:]) != tuple(old):
        raise ValueError(f"Shape mismatch: expected {genesis.Size(shape[cut:])} but got "
                         f"{genesis.Size(old)}")
    return genesis.Size(tuple(shape[:cut]) + tuple(new))


class ReshapeTransform(Transform):
    """The right-most dims reshaped from `in_shape` to `out_shape` (volume-preserving)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = genesis.Size(in_shape), genesis.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return x.reshape(*batch, *self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.ndim - len(self.out_shape)])
        return y.reshape(*batch, *self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return genesis.zeros(*batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        return _reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _reshaped(shape, self.out_shape, self.in_shape)


def _check_dim(op, t, dim, size, want):
    """PyTorch's assertions on a CatTransform/StackTransform input."""
    if not -t.ndim <= dim < t.ndim:
        raise AssertionError(f"dim {dim} out of range for tensor with {t.ndim} dimensions")
    if t.shape[dim] != want:
        raise AssertionError(f"{op}.size({dim}) = {t.shape[dim]} must equal {size} {want}")


class CatTransform(Transform):
    """Transforms `tseq` applied to consecutive slices of `lengths` along `dim`."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        tseq = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = list(lengths) if lengths is not None else [1] * len(tseq)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, x, name):
        _check_dim(name, x, self.dim, "length", self.length)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [x.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _call(self, x):
        return genesis.cat([t(v) for t, v in zip(self.transforms, self._slices(x, "x"))],
                           self.dim)

    def _inverse(self, y):
        return genesis.cat([t.inv(v) for t, v in zip(self.transforms, self._slices(y, "y"))],
                           self.dim)

    def log_abs_det_jacobian(self, x, y):
        parts = [sum_rightmost(t.log_abs_det_jacobian(a, b), self.event_dim - t.event_dim)
                 for t, a, b in zip(self.transforms, self._slices(x, "x"), self._slices(y, "y"))]
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        return genesis.cat(parts, dim) if dim < 0 else sum(parts)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms `tseq` applied to the slices along `dim`, one each."""

    def __init__(self, tseq, dim=0, cache_size=0):
        tseq = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z, name):
        _check_dim(name, z, self.dim, "len(transforms)", len(self.transforms))
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return genesis.stack([t(v) for t, v in zip(self.transforms, self._slices(x, "x"))],
                             self.dim)

    def _inverse(self, y):
        return genesis.stack([t.inv(v) for t, v in zip(self.transforms, self._slices(y, "y"))],
                             self.dim)

    def log_abs_det_jacobian(self, x, y):
        return genesis.stack([t.log_abs_det_jacobian(a, b) for t, a, b in
                              zip(self.transforms, self._slices(x, "x"), self._slices(y, "y"))],
                             self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
