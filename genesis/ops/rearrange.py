"""Reshaping and indexing built on views and scatters: diff, rot90, tril/triu_indices,
Tensor.unfold, the *_scatter ops, index_reduce and put."""

import builtins

from .. import dtypes
from ..autograd.function import Function
from ..autograd.views import AsStridedScatter
from ..tensor import Tensor, wrap_dim
from .common import make_view
from .copies import clone
from .creation import zeros
from .elementwise import _inplace, logical_xor, maximum, minimum, where
from .gather_scatter import index_add
from .index import _INDEX_DTYPES, index_put, nonzero
from .ranges import arange
from .reduce import amax, amin, prod, sum
from .shape import as_strided, diagonal, flatten, movedim, narrow, reshape, select, transpose
from .shape_copies import cat, flip


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim` (`!=` for bool), after prepending/appending."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input.ndim, "diff")
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        later, earlier = narrow(x, dim, 1, size - 1), narrow(x, dim, 0, size - 1)
        x = logical_xor(later, earlier) if x.dtype is dtypes.bool_ else later - earlier
    return x


def rot90(input, k=1, dims=(0, 1)):
    """`input` rotated by 90 degrees k times in the plane `dims`, from the first towards the
    second axis."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (wrap_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return clone(input)


def _triangle_indices(row, col, offset, dtype, device, keep):
    r = arange(row, device=device).unsqueeze(1)
    c = arange(col, device=device).unsqueeze(0)
    return nonzero(keep(c - r, offset)).t().to(dtype)


def tril_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None, layout=None):
    """(2, N) row and column indices of the lower triangle of a row x col matrix."""
    return _triangle_indices(row, col, offset, dtype, device, lambda d, k: d <= k)


def triu_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None, layout=None):
    """(2, N) row and column indices of the upper triangle of a row x col matrix."""
    return _triangle_indices(row, col, offset, dtype, device, lambda d, k: d >= k)


class Unfold(Function):
    """The windows of `x` along `dim` as a view; backward sums each window's gradient back into
    the positions it covers (windows overlap when step < size)."""

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.dim, ctx.size, ctx.step = dim, size, step
        shape, strides = list(x.shape), list(x.stride())
        shape[dim], strides[dim] = (x.shape[dim] - size) // step + 1, strides[dim] * step
        return make_view(x, tuple(shape) + (size,), tuple(strides) + (x.stride()[dim],),
                         x.storage_offset())

    @staticmethod
    def backward(ctx, g):
        dim, size, step = ctx.dim, ctx.size, ctx.step
        grad = zeros(ctx.input_shape(0), dtype=g.dtype, device=g.device)
        starts = arange(g.shape[dim], device=g.device) * step
        for j in range(size):
            grad = index_add(grad, dim, starts + j, select(g, -1, j))
        return grad, None, None, None


def unfold(self, dimension, size, step):
    """A view of every `size`-long window along `dimension`, `step` apart, as a new last dim."""
    x = reshape(self, (1,)) if self.ndim == 0 else self
    dim = wrap_dim(dimension, x.ndim, "unfold")
    if size > x.shape[dim]:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {x.shape[dim]} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    out = Unfold.apply(x, dim, size, step)
    return reshape(out, (size,)) if self.ndim == 0 else out


def _scatter_into(op, input, src, region):
    """`input` with the view `region(input)` replaced by `src` (same shape), out of place."""
    base = input if input.is_contiguous() and input.storage_offset() == 0 else clone(
        input, memory_format=None).contiguous()
    view = region(base.detach())
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {list(view.shape)}")
    geometry = (tuple(view.shape), tuple(view.stride()), view.storage_offset())
    return AsStridedScatter.apply(base, src.to(input.dtype).contiguous(), geometry, True)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """`input` with input[..., start:end:step, ...] (along `dim`) replaced by `src`."""
    dim = wrap_dim(dim, input.ndim, "slice_scatter")
    index = (slice(None),) * dim + (slice(start, end, step),)
    return _scatter_into("slice_scatter", input, src, lambda t: t[index])


def select_scatter(input, src, dim, index):
    """`input` with input.select(dim, index) replaced by `src`."""
    return _scatter_into("select_scatter", input, src, lambda t: select(t, dim, index))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """`input` with input.diagonal(offset, dim1, dim2) replaced by `src`."""
    return _scatter_into("diagonal_scatter", input, src,
                         lambda t: diagonal(t, offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """`input` with input.as_strided(size, stride, storage_offset) replaced by `src`."""
    return _scatter_into("as_strided_scatter", input, src,
                         lambda t: as_strided(t, size, stride, storage_offset or 0))


_REDUCTIONS = {"prod": (prod, 1.0), "amax": (amax, float("-inf")), "amin": (amin, float("inf")),
               "mean": (sum, 0.0), "sum": (sum, 0.0)}


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """`input` whose slices along `dim` at `index` are combined with `source`'s by `reduce`
    ("prod", "mean", "amax", "amin"); slices no index names stay as they were.

    Computed as one comparison of the n positions with the K indices, broadcast over the other
    dims: memory grows as n * K * (the other dims' sizes), traded for composing
    differentiable ops that run on every device."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({dtypes.scalar_type_name(input.dtype)}) and "
                           f"source ({dtypes.scalar_type_name(source.dtype)}) must have the same "
                           "scalar type")
    dim = wrap_dim(dim, builtins.max(input.ndim, 1), "index_reduce")
    x = reshape(input, (1,)) if input.ndim == 0 else input
    src = reshape(source, (1,)) if source.ndim == 0 else source
    n = x.shape[dim]
    index = flatten(index)
    _check_index_reduce_shapes(x, src, index, dim)
    if index.numel() and (index.min().item() < -n or index.max().item() >= n):
        raise IndexError(f"index_reduce(): index out of range for a dimension of size {n}")
    index = index % builtins.max(n, 1)
    out = _fold_segments(movedim(x, dim, -1), index, movedim(src, dim, -1), reduce, include_self)
    return reshape(movedim(out, -1, dim), tuple(input.shape))


def _fold_segments(x, index, src, reduce, include_self):
    """`x` (..., n) with each position p combined by `reduce` with the values of `src` (..., K)
    whose `index` (broadcast against src) is p, through one (..., n, K) comparison."""
    n = x.shape[-1]
    hits = index.unsqueeze(-2) == arange(n, device=x.device).unsqueeze(-1)
    fold, identity = _REDUCTIONS[reduce]
    combined = fold(where(hits, src.unsqueeze(-2), identity), dim=-1)
    count = sum(hits, dim=-1)
    if include_self:
        combined = _combine_self(reduce, x, combined, count)
    elif reduce == "mean":
        combined = combined / count.clamp(min=1).to(combined.dtype)
    return where(count > 0, combined.to(x.dtype), x)


def _check_index_reduce_shapes(x, src, index, dim):
    if src.ndim != x.ndim or src.shape[dim] != index.numel():
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): "
                           f"({src.shape[dim] if src.ndim > dim else 1}), for dim: {dim}")
    if any(src.shape[d] != x.shape[d] for d in range(x.ndim) if d != dim):
        raise RuntimeError(f"index_reduce_(): source tensor shape must match self tensor shape, "
                           f"excluding the specified dimension. Got self.shape = "
                           f"{list(x.shape)} source.shape = {list(src.shape)}")


def _combine_self(reduce, x, folded, count):
    """The source reduction folded together with the input's own values."""
    if reduce == "prod":
        return x * folded
    if reduce == "amax":
        return maximum(x, folded)
    if reduce == "amin":
        return minimum(x, folded)
    if reduce == "sum":
        return x + folded
    return (x + folded) / (count + 1).to(folded.dtype)


def _check_scatter_reduce(input, dim, index, src, reduce):
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if not input.ndim == index.ndim == src.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    for d in range(input.ndim):
        if index.shape[d] > src.shape[d] or (d != dim and index.shape[d] > input.shape[d]):
            raise RuntimeError(f"scatter_reduce(): Expected index {list(index.shape)} to be "
                               f"smaller than self {list(input.shape)} apart from dimension "
                               f"{dim} and to be smaller size than src {list(src.shape)}")
    n = input.shape[dim]
    if index.numel() and (index.min().item() < 0 or index.max().item() >= n):
        bad = index.min().item() if index.min().item() < 0 else index.max().item()
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """`input` with `src`'s values combined into it along `dim` at `index` by `reduce` ("sum",
    "prod", "mean", "amax", "amin"); positions no index names keep their values.

    Like index_reduce, one (..., n, K) comparison of positions with indices: memory grows as
    n * K * (the other dims' sizes)."""
    x, index, src = (reshape(t, (1,)) if t.ndim == 0 else t for t in (input, index, src))
    dim = wrap_dim(dim, x.ndim, "scatter_reduce")
    _check_scatter_reduce(x, dim, index, src, reduce)
    extent = tuple(index.shape[d] if d != dim else x.shape[d] for d in range(x.ndim))
    src = region_of(src, tuple(index.shape))
    folded = _fold_segments(movedim(region_of(x, extent), dim, -1), movedim(index, dim, -1),
                            movedim(src, dim, -1), reduce, include_self)
    out = movedim(folded, -1, dim)
    if extent != tuple(x.shape):
        out = _scatter_into("scatter_reduce", x, out, lambda t: region_of(t, extent))
    return reshape(out, tuple(input.shape))


def region_of(t, shape):
    """The leading `shape` corner of `t`."""
    for d, size in enumerate(shape):
        t = narrow(t, d, 0, size)
    return t


def put(input, index, source, accumulate=False):
    """`input` read as 1-D with `source` written (or added) at `index`."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError("put_(): Expected a long tensor for index")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    n = input.numel()
    if index.numel() and (index.min().item() < -n or index.max().item() >= n):
        raise IndexError(f"out of range: tried to access index "
                         f"{index.max().item()} on a tensor of {n} elements.")
    flat = index_put(flatten(input), (flatten(index),), flatten(source).to(input.dtype),
                     accumulate)
    return reshape(flat, tuple(input.shape))


class RearrangeMethods:
    """Tensor methods of this family, with the in-place forms of the reducing writes."""

    diff = diff
    rot90 = rot90
    unfold = unfold
    slice_scatter = slice_scatter
    select_scatter = select_scatter
    diagonal_scatter = diagonal_scatter
    as_strided_scatter = as_strided_scatter
    index_reduce = index_reduce
    index_reduce_ = _inplace(index_reduce, "index_reduce_")
    put = put
    put_ = _inplace(put, "put_")
    scatter_reduce = scatter_reduce
    scatter_reduce_ = _inplace(scatter_reduce, "scatter_reduce_")


__all__ = ["diff", "rot90", "tril_indices", "triu_indices", "slice_scatter", "select_scatter",
           "diagonal_scatter", "as_strided_scatter", "index_reduce", "put", "scatter_reduce"]
