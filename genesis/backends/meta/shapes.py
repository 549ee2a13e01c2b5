"""Meta kernels whose output shape has a rule of its own: matrix products, convolutions,
concatenation, indexing and recurrent cells. Operands arrive checked, promoted and broadcast by
the ops layer, as for the CPU kernels, whose result dtypes these keep."""

import numpy as np

from ...dispatch import register
from ..cpu.conv import _out_size
from .array import dense, laid_out_as
from .probe import probe


def _product_shape(a, b):
    """numpy's (and torch's) matmul shape: a 1-D operand is a row (a) or a column (b) whose
    dim is dropped from the result; batch dims broadcast."""
    rows = a.shape[-2:-1] if a.ndim > 1 else ()
    cols = b.shape[-1:] if b.ndim > 1 else ()
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return tuple(batch) + rows + cols


@register("matmul", "meta")
def matmul(a, b, bias=None, out=None, allow_tf32=None):
    if out is not None:
        return out
    return dense(_product_shape(a, b), probe("matmul", (a, b)).dtype)


@register("cat", "meta")
def cat(arrays, dim):
    shape = list(arrays[0].shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    return dense(shape, arrays[0].dtype)


@register("conv2d_igemm", "meta")
def conv2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size=None):
    """(N, C_out, H, W), laid out as the input (channels-last or not), as the CPU kernel."""
    size = tuple(out_size or _out_size(x.shape[2:], weight.shape[2:], stride, padding,
                                       dilation))
    return laid_out_as(dense((x.shape[0], weight.shape[0], *size), x.dtype), x)


@register("conv_transpose2d_igemm", "meta")
def conv_transpose2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size):
    out = dense((x.shape[0], weight.shape[1] * groups, *out_size), x.dtype)
    return laid_out_as(out, x)


@register("conv2d_igemm_weight_grad", "meta")
def conv2d_igemm_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups,
                             channels_last=False):
    return dense(weight_shape, x.dtype, (0, 2, 3, 1) if channels_last else None)


@register("check_index", "meta")
def check_index(index, size, allow_negative):
    """The index as int64 and no out-of-range value: a meta index has no values to check
    (torch checks none either)."""
    return dense(index.shape, np.int64), None


@register("index", "meta")
def index(arr, indices):
    """arr[i0, i1, ...] over the leading dims: the indices' shape, then arr's other dims."""
    lead = np.broadcast_shapes(*(i.shape for i in indices))
    return dense(tuple(lead) + arr.shape[len(indices):], arr.dtype)


@register("gather", "meta")
def gather(arr, dim, index):
    return dense(index.shape, arr.dtype)


def _written_in_place(out, *args):
    """An in-place write (scatter, index_put, a cache write): metadata unchanged, no result,
    as the CPU kernels return none."""


for _name in ("scatter", "index_put", "kv_cache_write"):
    register(_name, "meta")(_written_in_place)


def _like_arguments(count, positions, single=False):
    """The meta kernel of a recurrent cell taking `count` arrays and then an optional `out`:
    its outputs have the shapes of the arrays at `positions` and the first one's dtype."""
    def run(*args):
        out = args[count] if len(args) > count else None
        if out is None:
            out = tuple(dense(args[p].shape, args[0].dtype) for p in positions)
        return out[0] if single else out
    return run


register("lstm_cell_fwd", "meta")(_like_arguments(3, (2, 2)))
register("lstm_cell_bwd", "meta")(_like_arguments(5, (2, 4)))
register("gru_cell_fwd", "meta")(_like_arguments(3, (2,), single=True))
register("gru_cell_bwd", "meta")(_like_arguments(4, (1, 2, 3)))
