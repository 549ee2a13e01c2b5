"""Indexing: `x[...]`, `x[...] = v`, gather/scatter, index_*, masked_*, take, nonzero, sort, topk.

Index arguments are normalized here, once for every device. Python ints, slices, None, Ellipsis
and bools make a basic view (`shape.basic_index`); integer tensors and lists, and bool masks
(through `nonzero`), are advanced indices: bounds-checked, wrapped and broadcast together. The
backends implement a few primitives on arrays: "index" (gather over the leading dims by
broadcast index arrays), "index_put" (optionally accumulating), "gather", "scatter",
"check_index", "nonzero", "sort", "topk", "repeat_interleave", "unique".
"""

import math
import operator
import sys

import numpy as np

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..autograd.views import AsStridedScatter
from ..dispatch import kernel
from ..tensor import Tensor, wrap_dim
from .autocast import autocast_policy
from .common import SCALAR_TYPES, broadcast_shapes, call, cast, contiguous_strides, scalar_for, wrap
from .creation import full, tensor, zeros
from .elementwise import _inplace, where
from .inplace import check_inplace_target, snapshot_for_graph, write_result
from .reduce import _return_type
from .shape import (basic_index, expand, flatten, fresh_view, index_geometry,
                    inverse_permutation, movedim, narrow, permute, reshape, unbind, unsqueeze)

_INDEX_DTYPES = (dtypes.int64, dtypes.int32)


class Index(Function):
    """x[i0, i1, ...] over x's leading dims; the indices are checked int64 tensors of one shape.

    `out_perm` reorders the result's dims (advanced dims placed after leading basic dims).
    """

    @staticmethod
    def forward(ctx, x, indices, out_perm):
        ctx.in_shape, ctx.out_perm = tuple(x.shape), out_perm
        ctx.save_for_backward(*indices)
        data = kernel("index", x.device.type)(x._data, [i._data for i in indices])
        out = wrap(data, x.device, x.dtype)
        if out_perm is None:
            return out
        shape, strides = tuple(out.shape), out.stride()
        return fresh_view(out, [shape[d] for d in out_perm], [strides[d] for d in out_perm])

    @staticmethod
    def backward(ctx, g):
        indices = ctx.saved_tensors
        if ctx.out_perm is not None:
            g = permute(g, inverse_permutation(ctx.out_perm))
        return IndexAddToZeros.apply(ctx.in_shape, indices, g), None, None


class IndexAddToZeros(Function):
    """zeros(shape) with `values` added at `indices`: Index's backward (an embedding's weight
    gradient), accumulating straight into the fresh zeros instead of into a copy of them."""

    @staticmethod
    def forward(ctx, shape, indices, values):
        ctx.save_for_backward(*indices)
        out = zeros(shape, dtype=values.dtype, device=values.device)
        kernel("index_put", values.device.type)(out._data, [i._data for i in indices],
                                                values._data, True)
        return out

    @staticmethod
    def backward(ctx, g):
        return None, None, Index.apply(g, ctx.saved_tensors, None)


class IndexPut(Function):
    """Out of place: `x` with x[indices] = values (+= with `accumulate`); indices as in Index.

    `values` is a Python scalar or a tensor of x's dtype shaped like `x[indices]`.
    """

    @staticmethod
    def forward(ctx, x, indices, values, accumulate):
        ctx.accumulate = accumulate
        ctx.save_for_backward(*indices)
        out = call("contiguous", x)
        vals = values._data if isinstance(values, Tensor) else scalar_for(x.dtype, values)
        kernel("index_put", x.device.type)(out, [i._data for i in indices], vals, accumulate)
        return wrap(out, x.device, x.dtype)

    @staticmethod
    def backward(ctx, g):
        indices = ctx.saved_tensors
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = g if ctx.accumulate else IndexPut.apply(g, indices, 0, False)
        if ctx.needs_input_grad[2]:
            gv = Index.apply(g, indices, None)
        return gx, None, gv, None


def checked_index(index, size, dim, op, allow_negative=True, error=IndexError):
    """`index` as a fresh int64 tensor in [0, size) (negatives wrapped when allowed)."""
    data, bad = call("check_index", index, size, allow_negative)
    if bad is not None:
        raise error(f"{op}(): index {bad} is out of bounds for dimension {dim} with size {size}")
    return wrap(data, index.device, dtypes.int64)


class _Plan:
    """A parsed index: basic `items` (see `index_geometry`), then advanced indices.

    `adv_dims` are the dims of the basic view the checked, broadcast `indices` apply to; `perm`
    brings them to the front; `out_perm` places the indexed dims in the result as PyTorch does;
    `result_shape` is the shape of `x[index]` (worked out on first use: `x[i]` needs none).
    """

    __slots__ = ("items", "indices", "perm", "out_perm", "x_shape", "_result_shape")

    @property
    def result_shape(self):
        if self._result_shape is None:
            self._result_shape = index_geometry(self.x_shape, contiguous_strides(self.x_shape),
                                                0, self.items)[0]
        return self._result_shape

    @property
    def trivial_basic(self):
        return all(item == ("keep",) for item in self.items)


def _classify(entry, device):
    """One index entry as (kind, payload): new, bool, int, slice, ellipsis, tensor or mask."""
    if entry is None:
        return "new", 1
    if entry is Ellipsis:
        return "ellipsis", None
    if isinstance(entry, (bool, np.bool_)):
        return "bool", bool(entry)
    if isinstance(entry, slice):
        return "slice", entry
    if isinstance(entry, (list, tuple, np.ndarray)):
        entry = tensor(entry, device=device)
        if entry.numel() == 0 and entry.dtype.is_floating_point:
            entry = cast(entry, dtypes.int64)
    if not isinstance(entry, Tensor):
        try:
            return "int", operator.index(entry)
        except TypeError:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(entry).__name__})") from None
    if entry.dtype in (dtypes.bool_, dtypes.uint8):
        return ("bool", bool(entry.item())) if entry.ndim == 0 else ("mask", entry.to(device))
    if entry.dtype not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if entry.ndim == 0:
        return "int", int(entry.item())
    return "tensor", entry.to(device)


def _expand_ellipsis(entries, ndim):
    consumed = sum(1 if kind in ("int", "slice", "tensor") else p.ndim if kind == "mask" else 0
                   for kind, p in entries)
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    ellipses = [i for i, (kind, _) in enumerate(entries) if kind == "ellipsis"]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [("keep", None)] * (ndim - consumed)
    if not ellipses:
        return entries + fill
    i = ellipses[0]
    return entries[:i] + fill + entries[i + 1:]


def _slice_item(s, size):
    step = 1 if s.step is None else operator.index(s.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = None if s.start is None else operator.index(s.start)
    stop = None if s.stop is None else operator.index(s.stop)
    start, stop, _ = slice(start, stop, step).indices(size)
    return ("slice", start, max(0, -(-(stop - start) // step)), step)


def _basic_items(x, entries):
    """Basic-indexing items, and the advanced (view dim, its size, index tensor) triples.

    A bool indexes a new dim of size 1 with [0] (True) or [] (False), as in PyTorch.
    """
    items, advanced, d, v = [], [], 0, 0
    shape = tuple(x.shape)
    for kind, payload in entries:
        if kind in ("new", "bool"):
            items.append(("new", 1))
            if kind == "bool":
                advanced.append((v, 1, zeros(int(payload), dtype=dtypes.int64, device=x.device)))
            v += 1
        elif kind == "int":
            size = shape[d]
            if not -size <= payload < size:
                raise IndexError(f"index {payload} is out of bounds for dimension {d} with size "
                                 f"{size}")
            items.append(("select", payload % size))
            d += 1
        elif kind == "mask":
            k = payload.ndim
            for j in range(k):
                if d + j >= len(shape) or payload.shape[j] != shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(payload.shape)} at index {j} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(shape)} at index {d + j}")
            for column in nonzero(payload, as_tuple=True):
                advanced.append((v, shape[d], column))
                items.append(("keep",))
                d, v = d + 1, v + 1
        else:
            items.append(_slice_item(payload, shape[d]) if kind == "slice" else ("keep",))
            if kind == "tensor":
                advanced.append((v, shape[d], payload))
            d, v = d + 1, v + 1
    return tuple(items), advanced


def _as_tuple(index):
    """`index` as a tuple of entries; a short list holding sequences, slices, None or Ellipsis
    counts as a tuple (PyTorch and numpy's legacy rule), other lists are one index."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(e, (list, tuple, slice, Tensor, np.ndarray)) or e is None or e is Ellipsis
            for e in index):
        return tuple(index)
    return (index,)


def parse_index(x, index):
    """Normalize `index` for `x[index]` into a `_Plan`; IndexError as PyTorch raises them."""
    entries = [_classify(e, x.device) for e in _as_tuple(index)]
    entries = _expand_ellipsis(entries, x.ndim)
    plan = _Plan()
    plan.items, advanced = _basic_items(x, entries)
    plan.x_shape, plan._result_shape = x._data.shape, None
    plan.indices, plan.perm, plan.out_perm = (), None, None
    if not advanced:
        return plan
    view_shape = plan.result_shape
    indices = [checked_index(t, size, v, "index") for v, size, t in advanced]
    try:
        batch = broadcast_shapes(*(tuple(i.shape) for i in indices), op="index")
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(str(list(i.shape)) for i in indices)) from None
    with no_grad():
        plan.indices = tuple(expand(i, batch) for i in indices)
    dims = [v for v, _, _ in advanced]
    rest = [d for d in range(len(view_shape)) if d not in dims]
    plan.perm = tuple(dims + rest) if dims != list(range(len(dims))) else None
    place = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0
    nb, rest_shape = len(batch), [view_shape[d] for d in rest]
    if place:
        plan.out_perm = (tuple(range(nb, nb + place)) + tuple(range(nb))
                         + tuple(range(nb + place, nb + len(rest))))
    plan._result_shape = tuple(rest_shape[:place]) + batch + tuple(rest_shape[place:])
    return plan


def _advanced_operand(x, plan):
    """The basic view of `x` with the advanced dims moved to the front."""
    view = x if plan.trivial_basic else basic_index(x, plan.items)
    return view if plan.perm is None else permute(view, plan.perm)


def getitem(self, index):
    """`x[index]`: a view for basic indices, a copy when advanced indices take part."""
    plan = parse_index(self, index)
    if not plan.indices:
        return basic_index(self, plan.items)
    return Index.apply(_advanced_operand(self, plan), plan.indices, plan.out_perm)


def _prepare_value(x, plan, value):
    """`value` for writing into `x[index]`: a scalar, or a tensor of x's dtype shaped for the
    kernel (the indexed shape, advanced dims first)."""
    if not isinstance(value, Tensor):
        if not isinstance(value, SCALAR_TYPES + (np.generic,)):
            raise TypeError(f"can't assign a {type(value).__name__} to a genesis tensor")
        return value.item() if isinstance(value, np.generic) else value
    if plan.indices and value.dtype is not x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{x.dtype.name} for the destination and {value.dtype.name} for the "
                           "source.")
    value = value.to(device=x.device, dtype=x.dtype)
    target = plan.result_shape
    while value.ndim > len(target) and value.shape[0] == 1:
        value = reshape(value, tuple(value.shape[1:]))
    try:
        fits = broadcast_shapes(tuple(value.shape), target) == target
    except RuntimeError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}")
    value = expand(value, target)
    return value if plan.out_perm is None else permute(value, inverse_permutation(plan.out_perm))


def _put(x, plan, value, accumulate):
    """Out of place and in the graph: `x` with `x[index]` set to (or increased by) `value`."""
    x = x.contiguous()
    region = index_geometry(tuple(x.shape), x.stride(), x.storage_offset(), plan.items)
    if not plan.indices:
        if not isinstance(value, Tensor):
            value = full(region[0], value, dtype=x.dtype, device=x.device)
        if accumulate:
            value = basic_index(x, plan.items) + value
        return AsStridedScatter.apply(x, value, region, True)
    new = IndexPut.apply(_advanced_operand(x, plan), plan.indices, value, accumulate)
    if plan.perm is not None:
        new = permute(new, inverse_permutation(plan.perm))
    return new if plan.trivial_basic else AsStridedScatter.apply(x, new, region, True)


def _put_in_place(self, plan, value, accumulate, op):
    """`_put` written straight into `self`, for writes autograd need not record."""
    check_inplace_target(self, op)
    with no_grad():
        if not plan.indices:
            view = basic_index(self, plan.items)
            if accumulate:
                value = view + value
            if not isinstance(value, Tensor):
                value = full((), value, dtype=self.dtype, device=self.device)
            kernel("copy_", self.device.type)(view._data, value._data)
        else:
            operand = _advanced_operand(self, plan)
            data = value._data if isinstance(value, Tensor) else scalar_for(self.dtype, value)
            kernel("index_put", self.device.type)(operand._data, [i._data for i in plan.indices],
                                                  data, accumulate)
    self._bump_version()
    return self


def _index_put_(self, index, value, accumulate, op):
    plan = parse_index(self, index)
    value = _prepare_value(self, plan, value)
    recorded = is_grad_enabled() and (self.requires_grad or (isinstance(value, Tensor)
                                                             and value.requires_grad))
    if not recorded:
        return _put_in_place(self, plan, value, accumulate, op)
    return write_result(self, _put(snapshot_for_graph(self, value), plan, value, accumulate), op)


def setitem(self, index, value):
    """`x[index] = value`: broadcast, cast; in the graph; a failed write changes nothing."""
    _index_put_(self, index, value, False, "index_put_")


def index_put_(self, indices, values, accumulate=False):
    """Write (or with `accumulate`, add) `values` at the positions `indices` select, in place."""
    return _index_put_(self, tuple(indices), values, accumulate, "index_put_")


@autocast_policy("index_put")
@autocast_policy("index_put")
def index_put(input, indices, values, accumulate=False):
    """Out of place `x[indices] = values` (or `+=` with accumulate, duplicates summed)."""
    plan = parse_index(input, tuple(indices))
    return _put(input, plan, _prepare_value(input, plan, values), accumulate)


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
        vals = src._data if isinstance(src, Tensor) else scalar_for(x.dtype, src)
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
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = wrap_dim(dim, input.ndim, op)
    for d in range(input.ndim):
        if d != dim and index.shape[d] > input.shape[d]:
            raise RuntimeError(f"{op}(): Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than self {list(input.shape)} "
                               f"apart from dimension {dim}")
    return dim, checked_index(index, input.shape[dim], dim, op, False, RuntimeError)


def gather(input, dim, index, *, sparse_grad=False):
    """Values of `input` along `dim` at `index` (int64, same rank, not larger elsewhere)."""
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
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        if src.ndim != index.ndim or any(i > s for i, s in zip(index.shape, src.shape)):
            raise RuntimeError(f"scatter(): Expected index {list(index.shape)} to be smaller size "
                               f"than src {list(src.shape)}")
        src = _narrowed(src, tuple(index.shape))
    out = Scatter.apply(lifted, dim, index, src, reduce)
    return reshape(out, shape) if not shape else out


@autocast_policy("scatter_add")
@autocast_policy("scatter_add")
def scatter_add(input, dim, index, src):
    """`input` with `src` added along `dim` at `index` (duplicates summed)."""
    return scatter(input, dim, index, src, reduce="add")


def _dim_index(input, dim, index, op, allow_negative=False, error=IndexError):
    """(dim, checked 1-D index) for the index_* ops."""
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    dim = wrap_dim(dim, input.ndim, op)
    return dim, checked_index(reshape(index, (-1,)), input.shape[dim], dim, op, allow_negative,
                              error)


def index_select(input, dim, index):
    """The slices of `input` along `dim` at the positions `index` (a copy)."""
    dim, index = _dim_index(input, dim, index, "index_select")
    moved = movedim(input, dim, 0) if dim else input
    out_perm = tuple(range(1, dim + 1)) + (0,) + tuple(range(dim + 1, input.ndim)) if dim else None
    return Index.apply(moved, (index,), out_perm)


def _put_along(input, dim, index, values, accumulate):
    """`input` with the slices along `dim` at `index` set to (or increased by) `values`."""
    moved = movedim(input, dim, 0) if dim else input
    if isinstance(values, Tensor) and dim:
        values = movedim(values, dim, 0)
    out = IndexPut.apply(moved, (index,), values, accumulate)
    return movedim(out, 0, dim) if dim else out


def _check_source(input, dim, index, source, op):
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype.name}) and source ({source.dtype.name}) "
                           "must have the same scalar type")
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
    return _put_along(input, dim, index, source if alpha == 1 else source * alpha, True)


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


def _check_mask(mask, op):
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")


_FLOAT_MAX = {dtypes.float16: 65504.0, dtypes.bfloat16: 3.3895313892515355e38,
              dtypes.float32: 3.4028234663852886e38, dtypes.float64: sys.float_info.max}


def _check_fill_value(value, dtype):
    """RuntimeError, as PyTorch, for a finite Python number beyond a floating dtype's range
    (it would become inf)."""
    if dtype in _FLOAT_MAX and type(value) in (int, float) and math.isfinite(value) \
            and abs(value) > _FLOAT_MAX[dtype]:
        raise RuntimeError(f"masked_fill_: value {value} cannot be converted to type "
                           f"{dtype.name} without overflow")


def _plan_masked_fill(self, mask, value):
    """masked_fill_ as the kernel where(mask, value, self) writing self (inplace.py)."""
    _check_mask(mask, "masked_fill_")
    if isinstance(value, Tensor) and value.ndim:
        return None
    _check_fill_value(value, self.dtype)
    return "where", (mask, value, self), ()


def masked_fill(input, mask, value):
    """`input` with `value` (a scalar or 0-d tensor) where `mask` holds; broadcasts."""
    _check_mask(mask, "masked_fill_")
    _check_fill_value(value, input.dtype)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = value.to(device=input.device, dtype=input.dtype)
    elif input.dtype.is_floating_point:  # a Python float keeps a floating input's dtype
        value = float(value)
    else:
        value = full((), value, dtype=input.dtype, device=input.device)
    return where(mask, value, input)


def _broadcast_masked(input, mask, op):
    _check_mask(mask, op)
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape), op=op)
    return expand(input, shape), expand(mask, shape)


def masked_select(input, mask):
    """The elements of `input` where `mask` holds, as a 1-D tensor (both broadcast)."""
    input, mask = _broadcast_masked(input, mask, "masked_select")
    if not input.ndim:
        input, mask = reshape(input, (1,)), reshape(mask, (1,))
    return getitem(input, mask)


def masked_scatter(input, mask, source):
    """`input` with the positions where `mask` holds filled, in order, from `source`."""
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{input.dtype.name} and {source.dtype.name}")
    input, mask = _broadcast_masked(input, mask, "masked_scatter_")
    shape = tuple(input.shape)
    if not shape:
        input, mask = reshape(input, (1,)), reshape(mask, (1,))
    indices = nonzero(mask, as_tuple=True)
    count = indices[0].shape[0]
    if source.numel() < count:
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    out = IndexPut.apply(input, indices, narrow(flatten(source), 0, 0, count), False)
    return reshape(out, shape) if not shape else out


def take(input, index):
    """`input` read as 1-D at `index`; the result has index's shape."""
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("take(): Expected a long tensor for index")
    n = input.numel()
    data, bad = call("check_index", index, n, True)
    if bad is not None:
        raise IndexError(f"take(): out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return Index.apply(reshape(input, (-1,)), (wrap(data, index.device, dtypes.int64),), None)


def take_along_dim(input, indices, dim=None):
    """`gather` with `input` and `indices` broadcast against each other except along `dim`."""
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


def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    out = wrap(call("nonzero", input), input.device, dtypes.int64)
    if not as_tuple:
        return out
    if input.ndim == 0:
        return (zeros(out.shape[0], dtype=dtypes.int64, device=input.device),)
    return unbind(out, 1)


argwhere = nonzero


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


_SORT = _return_type("sort", ("values", "indices"))
_TOPK = _return_type("topk", ("values", "indices"))
_KTHVALUE = _return_type("kthvalue", ("values", "indices"))


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
    return _KTHVALUE(pick(values), pick(indices))


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


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with inverse indices and counts."""
    if dim is not None:
        dim = wrap_dim(dim, input.ndim, "unique")
    outs = kernel("unique", input.device.type)(input._data, return_inverse, return_counts, dim)
    values = wrap(outs[0], input.device, input.dtype)
    extra = tuple(wrap(o, input.device, dtypes.int64) for o in outs[1:])
    return (values,) + extra if extra else values


class IndexMethods:
    """Tensor methods of this family: indexing, gathers and scatters, masks, sorting."""

    __getitem__ = getitem
    __setitem__ = setitem
    index_put_ = index_put_
    index_put = index_put
    gather = gather
    scatter = scatter
    scatter_add = scatter_add
    index_select = index_select
    index_add = index_add
    index_copy = index_copy
    index_fill = index_fill
    masked_fill = masked_fill
    masked_select = masked_select
    masked_scatter = masked_scatter
    take = take
    take_along_dim = take_along_dim
    nonzero = nonzero
    argwhere = argwhere
    sort = sort
    argsort = argsort
    msort = msort
    topk = topk
    kthvalue = kthvalue
    repeat_interleave = repeat_interleave
    unique = unique
    scatter_ = _inplace(scatter, "scatter_")
    scatter_add_ = _inplace(scatter_add, "scatter_add_")
    index_add_ = _inplace(index_add, "index_add_")
    index_copy_ = _inplace(index_copy, "index_copy_")
    index_fill_ = _inplace(index_fill, "index_fill_")
    masked_scatter_ = _inplace(masked_scatter, "masked_scatter_")
    masked_fill_ = _inplace(masked_fill, "masked_fill_", _plan_masked_fill)


__all__ = [
    "index_put", "gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy",
    "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim",
    "nonzero", "argwhere", "sort", "argsort", "msort", "topk", "kthvalue", "repeat_interleave",
    "unique"]
