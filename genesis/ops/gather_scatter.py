"""Indexing along one dim: gather/scatter, index_select/add/copy/fill, take, repeat_interleave.

gather and scatter pair each element of an int32/int64 `index` of the input's rank with a
position along `dim`; their backward is the other one (the gradient of gather scatters, adding). The
index_* ops take a 1-D index of slices along `dim`: they move `dim` to the front and use
index.py's advanced-indexing primitives (`Index`, `IndexPut`). take reads the input as 1-D,
take_along_dim is a gather of broadcast operands, and repeat_interleave an index_select (or,
when every repeat is the same, an expanded view flattened). The backends implement "gather",
"scatter", "check_index" and "repeat_interleave".
"""

from .. import dtypes
from ..autograd.function import Function, name_node
from ..dispatch import kernel
from ..tensor import Tensor, wrap_dim
from .autocast import autocast_policy
from .common import broadcast_shapes, call, check_devices, rounded_scalar, wrap
from .creation import zeros
from .elementwise import _inplace
from .index import _INDEX_DTYPES, OUT_OF_BOUNDS, Index, IndexPut, checked_index
from .shape import basic_index, expand, flatten, movedim, reshape, unsqueeze


def _narrowed(t, shape, skip=None):
    """`t` sliced to the leading `shape` in every dim but `skip` (a view; `t` if nothing to cut)."""
    items = tuple(("slice", 0, n, 1) if d != skip and n != t.shape[d] else ("keep",)
                  for d, n in enumerate(shape))
    return t if all(item == ("keep",) for item in items) else basic_index(t, items, "Narrow")


class Gather(Function):
    """out[i][j] = x[index[i][j]][j] (dim 0); x matches index's shape except along `dim`."""

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim = tuple(x.shape), dim
        ctx.save_for_backward(index)
        return wrap(call("gather", x, dim, index), x.device, x.dtype)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        base = zeros(ctx.in_shape, dtype=g.dtype, device=g.device)
        return Scatter.apply(base, ctx.dim, index, g, "add"), None, None


class Scatter(Function):
    """`x` with x[index[i][j]][j] = src[i][j] (dim 0), or combined by reduce "add"/"multiply"."""

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce):
        ctx.dim, ctx.reduce = dim, reduce
        ctx.save_for_backward(index)
        out = call("contiguous", x)
        vals = src._data if isinstance(src, Tensor) else rounded_scalar(x.dtype, src)
        kernel("scatter", x.device.type)(out, dim, index._data, vals, reduce)
        return wrap(out, x.device, x.dtype)

    @staticmethod
    def backward(ctx, g):
        if ctx.reduce == "multiply":
            raise RuntimeError("scatter(): the backward of reduce='multiply' is not implemented")
        (index,) = ctx.saved_tensors
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = g if ctx.reduce == "add" else Scatter.apply(g, ctx.dim, index, 0, None)
        if ctx.needs_input_grad[3]:
            gsrc = Gather.apply(_narrowed(g, tuple(index.shape), ctx.dim), ctx.dim, index)
        return gx, None, None, gsrc, None


def _lift_0d(*tensors):
    """0-d tensors as 1-D of one element (gather/scatter treat them so)."""
    return tuple(reshape(t, (1,)) if isinstance(t, Tensor) and t.ndim == 0 else t
                 for t in tensors)


def _check_gather_args(input, dim, index, op):
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if input.device.type != "meta":  # meta takes indices from any device, as torch's
        check_devices(f"{op}()", input, index)
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = wrap_dim(dim, input.ndim, op)
    for d in range(input.ndim):
        if d != dim and index.shape[d] > input.shape[d]:
            raise RuntimeError(f"{op}(): Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than self {list(input.shape)} "
                               f"apart from dimension {dim}")
    return dim, checked_index(index, input.shape[dim], dim, False, RuntimeError)


def gather(input, dim, index, *, sparse_grad=False):
    """Values of `input` along `dim` at `index` (int32 or int64, same rank, not larger
    elsewhere)."""
    shape = tuple(index.shape)
    input, index = _lift_0d(input, index)
    dim, index = _check_gather_args(input, dim, index, "gather")
    out = Gather.apply(_narrowed(input, tuple(index.shape), dim), dim, index)
    return reshape(out, shape) if not shape else out


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """`input` with `src` (or the scalar `value`) written along `dim` at `index`."""
    src = value if src is None else src
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    shape = tuple(input.shape)
    lifted, index, src = _lift_0d(input, index, src)
    dim, index = _check_gather_args(lifted, dim, index, "scatter")
    if isinstance(src, Tensor):
        check_devices("scatter()", input, src)
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        if src.ndim != index.ndim or any(i > s for i, s in zip(index.shape, src.shape)):
            raise RuntimeError(f"scatter(): Expected index {list(index.shape)} to be smaller size "
                               f"than src {list(src.shape)}")
        src = _narrowed(src, tuple(index.shape))
    out = Scatter.apply(lifted, dim, index, src, reduce)
    return reshape(out, shape) if not shape else out


@autocast_policy("scatter_add")
def scatter_add(input, dim, index, src):
    """`input` with `src` added along `dim` at `index` (duplicates summed)."""
    return scatter(input, dim, index, src, reduce="add")


# torch's words for an index out of bounds where they are not OUT_OF_BOUNDS's (index_select's
# vary with torch's kernel path: 'index out of range in self' along dim 0, another along dim 1)
_OUT_OF_BOUNDS_TEXTS = {"index_copy": "index_copy_(): " + OUT_OF_BOUNDS}


def _dim_index(input, dim, index, op, allow_negative=False, error=IndexError):
    """(dim, checked 1-D index) for the index_* ops."""
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    dim = wrap_dim(dim, input.ndim, op)
    return dim, checked_index(reshape(index, (-1,)), input.shape[dim], dim, allow_negative,
                              error, _OUT_OF_BOUNDS_TEXTS.get(op, OUT_OF_BOUNDS))


def index_select(input, dim, index):
    """The slices of `input` along `dim` at the positions `index` (a copy)."""
    dim, index = _dim_index(input, dim, index, "index_select")
    moved = movedim(input, dim, 0) if dim else input
    out_perm = tuple(range(1, dim + 1)) + (0,) + tuple(range(dim + 1, input.ndim)) if dim else None
    return name_node(Index.apply(moved, (index,), out_perm), "IndexSelectBackward0")


def _put_along(input, dim, index, values, accumulate):
    """`input` with the slices along `dim` at `index` set to (or increased by) `values`."""
    moved = movedim(input, dim, 0) if dim else input
    if isinstance(values, Tensor) and dim:
        values = movedim(values, dim, 0)
    out = IndexPut.apply(moved, (index,), values, accumulate)
    return movedim(out, 0, dim) if dim else out


# PyTorch's dtype mismatch messages, which name the in-place op whichever form was called.
_SOURCE_DTYPE_ERRORS = {
    "index_add": "index_add_(): self ({}) and source ({}) must have the same scalar type",
    "index_copy": "index_copy_(): self and source expected to have the same dtype, but got "
                  "(self) {} and (source) {}",
}


def _check_source(input, dim, index, source, op):
    if source.dtype is not input.dtype:
        raise RuntimeError(_SOURCE_DTYPE_ERRORS[op].format(
            dtypes.scalar_type_name(input.dtype), dtypes.scalar_type_name(source.dtype)))
    if source.ndim != input.ndim or any(s != n for d, (s, n) in
                                        enumerate(zip(source.shape, input.shape)) if d != dim):
        raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, excluding "
                           f"the specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if source.shape[dim] != index.shape[0]:
        raise RuntimeError(f"{op}(): Number of indices ({index.shape[0]}) should be equal to "
                           f"source.size(dim): ({source.shape[dim]}), for dim: {dim}")


def index_add(input, dim, index, source, *, alpha=1):
    """`input` plus `alpha * source` added into the slices along `dim` at `index`."""
    dim, index = _dim_index(input, dim, index, "index_add", error=RuntimeError)
    _check_source(input, dim, index, source, "index_add")
    return name_node(_put_along(input, dim, index, source if alpha == 1 else source * alpha, True),
                     "IndexAddBackward0")


@autocast_policy("index_copy")
@autocast_policy("index_copy")
def index_copy(input, dim, index, source):
    """`input` with the slices along `dim` at `index` replaced by those of `source`."""
    dim, index = _dim_index(input, dim, index, "index_copy")
    _check_source(input, dim, index, source, "index_copy")
    return _put_along(input, dim, index, source, False)


def index_fill(input, dim, index, value):
    """`input` with the slices along `dim` at `index` set to `value` (a scalar or 0-d tensor)."""
    dim, index = _dim_index(input, dim, index, "index_fill", allow_negative=True)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        shape = list(input.shape)
        shape[dim] = index.shape[0]
        value = expand(value.to(input.dtype), tuple(shape))
    return _put_along(input, dim, index, value, False)


def take(input, index):
    """`input` read as 1-D at `index`; the result has index's shape."""
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("take(): Expected a long tensor for index")
    n = input.numel()
    data, bad = call("check_index", index, n, True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return Index.apply(reshape(input, (-1,)), (wrap(data, index.device, dtypes.int64),), None)


def take_along_dim(input, indices, dim=None):
    """`gather` with `input` and `indices` (int64 only, unlike gather's) broadcast against each
    other except along `dim`."""
    if indices.dtype is not dtypes.int64:
        raise RuntimeError("take_along_dim(): dtype of indices should be Long but got "
                           f"{dtypes.scalar_type_name(indices.dtype)}")
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if input.ndim != indices.ndim:
        raise RuntimeError("take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    dim = wrap_dim(dim, input.ndim, "take_along_dim")
    ones = [list(t.shape) for t in (input, indices)]
    for s in ones:
        s[dim] = 1
    shape = list(broadcast_shapes(*map(tuple, ones), op="take_along_dim"))
    x_shape, i_shape = list(shape), list(shape)
    x_shape[dim], i_shape[dim] = input.shape[dim], indices.shape[dim]
    return gather(expand(input, tuple(x_shape)), dim, expand(indices, tuple(i_shape)))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along `dim`) `repeats` times, which may vary per slice.

    `repeat_interleave(repeats)` alone gives the indices 0, 0, 1, ... that such a repeat reads.
    """
    if repeats is None:
        return _repeat_index(input)
    if dim is None:
        input, dim = reshape(input, (-1,)), 0
    dim = wrap_dim(dim, input.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor) and repeats.ndim <= 1 and repeats.numel() == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        if repeats.ndim != 1 or repeats.shape[0] != input.shape[dim]:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.numel()} and input.size({dim}) = "
                               f"{input.shape[dim]}")
        return index_select(input, dim, _repeat_index(repeats))
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    shape = list(input.shape)
    shape.insert(dim + 1, repeats)
    return flatten(expand(unsqueeze(input, dim + 1), tuple(shape)), dim, dim + 1)


def _repeat_index(repeats):
    if repeats.ndim != 1 or repeats.dtype not in _INDEX_DTYPES:
        raise RuntimeError("repeat_interleave: repeats must be a 1-d tensor of int32 or int64")
    if repeats.numel() and bool((repeats < 0).any()):
        raise RuntimeError("repeats can not be negative")
    return wrap(call("repeat_interleave", repeats), repeats.device, dtypes.int64)


class GatherScatterMethods:
    """Tensor methods of this family: gathers and scatters, the index_* ops, take, repeats."""

    gather = gather
    scatter = scatter
    scatter_add = scatter_add
    index_select = index_select
    index_add = index_add
    index_copy = index_copy
    index_fill = index_fill
    take = take
    take_along_dim = take_along_dim
    repeat_interleave = repeat_interleave
    scatter_ = _inplace(scatter, "scatter_")
    scatter_add_ = _inplace(scatter_add, "scatter_add_")
    index_add_ = _inplace(index_add, "index_add_")
    index_copy_ = _inplace(index_copy, "index_copy_")
    index_fill_ = _inplace(index_fill, "index_fill_")


__all__ = [
    "gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy", "index_fill",
    "take", "take_along_dim", "repeat_interleave"]
