"""Sorting and selection by value: sort, argsort, msort, topk, kthvalue, unique.

sort and topk call one kernel each ("sort", "topk") giving (values, indices) along a dim; the
gradient of the values is scattered back to the positions they came from (gather_scatter.py's
`Scatter`). argsort, msort and kthvalue are made of them. unique calls the "unique" kernel and
has no gradient.
"""

from .. import dtypes
from ..autograd.function import Function, name_node
from ..dispatch import kernel
from ..tensor import wrap_dim
from .common import wrap
from .creation import zeros
from .gather_scatter import Scatter
from .named_tuples import return_type
from .shape import narrow, reshape


class SortLike(Function):
    """(values, indices) from a sorting kernel ("sort" or "topk") along `dim`.

    The gradient of the values goes back to the positions they came from.
    """

    @staticmethod
    def forward(ctx, x, dim, op, args):
        ctx.in_shape, ctx.dim = tuple(x.shape), dim
        ctx.node_name = op.capitalize() + "Backward0"
        values, indices = kernel(op, x.device.type)(x._data, dim, *args)
        indices = wrap(indices, x.device, dtypes.int64)
        ctx.save_for_backward(indices)
        return wrap(values, x.device, x.dtype), indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        base = zeros(ctx.in_shape, dtype=g.dtype, device=g.device)
        return Scatter.apply(base, ctx.dim, indices, g, None), None, None, None


_SORT = return_type("sort", ("values", "indices"))
_TOPK = return_type("topk", ("values", "indices"))
_KTHVALUE = return_type("kthvalue", ("values", "indices"))


def _sorted(input, dim, op, args, result):
    if input.ndim == 0:
        wrap_dim(dim, 0, op)
        values, indices = SortLike.apply(reshape(input, (1,)), 0, op, args)
        return result(reshape(values, ()), reshape(indices, ()))
    return result(*SortLike.apply(input, wrap_dim(dim, input.ndim, op), op, args))


def sort(input, dim=-1, descending=False, stable=False):
    """Values sorted along `dim` and their original indices; equal values keep their order."""
    return _sorted(input, dim, "sort", (bool(descending), bool(stable)), _SORT)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort `input` along `dim`."""
    return sort(input, dim, descending, stable).indices


def msort(input):
    """`input` sorted along its first dimension."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The `k` largest (or smallest) values along `dim` and their indices."""
    size = input.shape[wrap_dim(dim, input.ndim, "topk")] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    return _sorted(input, dim, "topk", (k, bool(largest), bool(sorted)), _TOPK)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest value along `dim` and its index."""
    d = wrap_dim(dim, input.ndim, "kthvalue")
    size = input.shape[d] if input.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = topk(input, k, d, largest=False)
    if not input.ndim:
        return _KTHVALUE(values, indices)
    pick = (lambda t: narrow(t, d, k - 1, 1)) if keepdim else (lambda t: t.select(d, k - 1))
    return _KTHVALUE(name_node(pick(values), "KthvalueBackward0"), pick(indices))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with inverse indices and counts."""
    if dim is not None:
        dim = wrap_dim(dim, input.ndim, "unique")
    outs = kernel("unique", input.device.type)(input._data, return_inverse, return_counts, dim)
    values = wrap(outs[0], input.device, input.dtype)
    extra = tuple(wrap(o, input.device, dtypes.int64) for o in outs[1:])
    return (values,) + extra if extra else values


class SortingMethods:
    """Tensor methods of this family: sorting, top-k, k-th value, unique."""

    sort = sort
    argsort = argsort
    msort = msort
    topk = topk
    kthvalue = kthvalue
    unique = unique


__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique"]
