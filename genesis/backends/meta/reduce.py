"""Reductions, scans, softmax and sorting on meta arrays. A reduction drops its dims (keeps them
as 1 with keepdim); the others keep the input's shape or, for topk, cut one dim to k. Dtypes
and the number of outputs come from the CPU kernels (`probe`). The multi-tensor norm of
gradient clipping gives a 0-d array; the clipping itself, in place, changes no metadata."""

from ...dispatch import register
from .array import dense
from .probe import outputs_like, probe


def reduced_shape(shape, dims, keepdim):
    """`shape` reduced over `dims` (an int, a tuple, or None for all of them)."""
    if dims is None:
        dims = range(len(shape))
    elif isinstance(dims, int):
        dims = (dims,)
    dims = {d % max(len(shape), 1) for d in dims}
    if keepdim:
        return tuple(1 if d in dims else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in dims)


def _shapes(found, shape):
    return tuple(shape for _ in found) if isinstance(found, tuple) else shape


def reduction(op):
    """The meta kernel of `op(x, dims, keepdim, *options)`."""
    def run(x, dims, keepdim, *options):
        found = probe(op, (x, dims, keepdim, *options))
        return outputs_like(found, _shapes(found, reduced_shape(x.shape, dims, keepdim)))
    return run


def same_shape(op):
    """The meta kernel of `op(x, *options)`, whose outputs have x's shape."""
    def run(x, *options):
        found = probe(op, (x, *options))
        return outputs_like(found, _shapes(found, x.shape))
    return run


for _name in ("sum", "nansum", "prod", "mean", "amax", "amin", "any", "all", "logsumexp",
              "norm", "var", "argmax", "argmin", "max_dim", "min_dim", "median_dim"):
    register(_name, "meta")(reduction(_name))
for _name in ("cumsum", "cumprod", "softmax", "log_softmax", "sort", "flip", "roll", "tril",
              "triu"):
    register(_name, "meta")(same_shape(_name))


@register("count_nonzero", "meta")
def count_nonzero(x, dims):
    return outputs_like(probe("count_nonzero", (x, dims)), reduced_shape(x.shape, dims, False))


@register("median", "meta")
def median(x):
    return outputs_like(probe("median", (x,)), ())


@register("topk", "meta")
def topk(x, dim, k, largest, sorted_):
    found = probe("topk", (x, dim, min(k, 1), largest, sorted_))
    shape = x.shape[:dim] + (k,) + x.shape[dim + 1:]
    return outputs_like(found, _shapes(found, shape))


@register("total_norm", "meta")
def total_norm(arrays, norm_type, dtype):
    """The norm of all the arrays together: a 0-d array of `dtype`."""
    return dense((), dtype)


@register("clip_by_total_norm_", "meta")
def clip_by_total_norm_(arrays, max_norm, total_norm):
    """The arrays scaled in place: their metadata stays as it is."""
