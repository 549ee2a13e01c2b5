"""Reductions over any dims with `keepdim`, as PyTorch.

Each reduction normalizes its dims once here and calls one kernel; backward broadcasts the
output gradient back over the reduced dims (`expand_reduced`) and is written with genesis ops.
"""

from .. import dtypes
from ..autograd.function import Function
from .common import call, cast, make_view, normalize_dims, wrap


def reduce_dims(x, dim, op):
    """`dim` as a sorted tuple of axes of `x`; None or an empty list mean every axis."""
    if x.ndim == 0:
        if dim is not None:
            normalize_dims(dim, 1, op)
        return ()
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    return normalize_dims(dim, x.ndim, op)


def kept_shape(shape, dims):
    """`shape` with the reduced `dims` set to 1 (the keepdim=True output shape)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def accumulate_dtype(dtype):
    """The dtype a sum of `dtype` gives: int64 for integers and bools, else `dtype`."""
    return dtype if dtype.is_floating_point or dtype is dtypes.int64 else dtypes.int64


class ExpandReduced(Function):
    """A reduction's output gradient broadcast back to the input shape (a stride-0 view)."""

    @staticmethod
    def forward(ctx, g, shape, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        strides = iter(g.stride())
        if keepdim:
            kept = [next(strides) for _ in shape]
        else:
            kept = [0 if i in dims else next(strides) for i in range(len(shape))]
        return make_view(g, shape, [0 if i in dims else s for i, s in enumerate(kept)], g._offset)

    @staticmethod
    def backward(ctx, gg):
        return sum(gg, ctx.dims, ctx.keepdim), None, None, None


def expand_reduced(g, shape, dims, keepdim):
    """The gradient `g` of a reduction over `dims` broadcast to the input `shape`."""
    return ExpandReduced.apply(g, tuple(shape), dims, keepdim)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        out_dtype = dtype or accumulate_dtype(x.dtype)
        x = cast(x, dtype or x.dtype)
        return wrap(call("sum", x, dims, keepdim, out_dtype), x.device, out_dtype)

    @staticmethod
    def backward(ctx, g):
        return expand_reduced(g, ctx.shape, ctx.dims, ctx.keepdim), None, None, None


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (all dims by default); integer and bool inputs give int64."""
    dims = reduce_dims(input, dim, "sum")
    return Sum.apply(input, dims, keepdim, dtypes.as_dtype(dtype) if dtype is not None else None)


TENSOR_METHODS = {"sum": sum}

__all__ = ["sum"]
