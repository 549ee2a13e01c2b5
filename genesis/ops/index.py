"""Indexing by position: `x[...]`, `x[...] = v`, index_put, the masked ops and nonzero.

Index arguments are normalized here, once for every device. Python ints, slices, None, Ellipsis
and bools make a basic view (`shape.basic_index`); integer tensors and lists, and bool masks
(through `nonzero`), are advanced indices: bounds-checked, wrapped and broadcast together. The
masked ops (masked_fill, masked_select, masked_scatter) are a `where` or advanced indexing by
the mask's nonzero positions. The backends implement a few primitives on arrays: "index"
(gather over the leading dims by broadcast index arrays), "index_put" (optionally
accumulating), "check_index" and "nonzero"; `Index`, `IndexPut` and `checked_index` are shared
with the ops along one dim in gather_scatter.py.
"""

import operator

import numpy as np

from .. import dtypes
from .._warnings import warn_once
from ..autograd.function import Function, name_node
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..autograd.views import AsStridedScatter
from ..dispatch import kernel
from ..tensor import Tensor
from .autocast import autocast_policy
from .common import (SCALAR_TYPES, broadcast_shapes, call, cast, contiguous_strides,
                     rounded_scalar, wrap)
from .creation import full, tensor, zeros
from .elementwise import _inplace, where
from .inplace import check_inplace_target, snapshot_for_graph, write_result
from .shape import (basic_index, expand, flatten, fresh_view, index_geometry, inverse_permutation,
                    narrow, permute, reshape, unbind)

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
        vals = values._data if isinstance(values, Tensor) else rounded_scalar(x.dtype, values)
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


OUT_OF_BOUNDS = "index {bad} is out of bounds for dimension {dim} with size {size}"


def checked_index(index, size, dim, allow_negative=True, error=IndexError, text=OUT_OF_BOUNDS):
    """`index` as a fresh int64 tensor in [0, size) (negatives wrapped when allowed); else
    `error` with torch's `text` (formatted with the index, dim and size)."""
    data, bad = call("check_index", index, size, allow_negative)
    if bad is not None:
        raise error(text.format(bad=bad, dim=dim, size=size))
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
    if isinstance(entry, (list, tuple, range, np.ndarray)):
        entry = tensor(list(entry) if isinstance(entry, range) else entry, device=device,
                       dtype=dtypes.int64 if isinstance(entry, range) else None)
        if entry.numel() == 0 and entry.dtype.is_floating_point:
            entry = cast(entry, dtypes.int64)
    if not isinstance(entry, Tensor):
        try:
            return "int", operator.index(entry)
        except TypeError:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(entry).__name__})") from None
    if entry.dtype is dtypes.uint8:
        warn_once("uint8 index", "indexing with dtype torch.uint8 is now deprecated, please use "
                  "a dtype torch.bool instead.")
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


def _check_scalar_index(index):
    """PyTorch's errors for a 0-dim tensor indexed by one int or one slice (`loss.data[0]`)."""
    if isinstance(index, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        return
    if index == 0:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    raise IndexError(f"index {index} is out of bounds for dimension 0 with size 0")


def parse_index(x, index):
    """Normalize `index` for `x[index]` into a `_Plan`; IndexError as PyTorch raises them."""
    if x.ndim == 0:
        _check_scalar_index(index)
    entries = [_classify(e, x.device) for e in _as_tuple(index)]
    entries = _expand_ellipsis(entries, x.ndim)
    plan = _Plan()
    plan.items, advanced = _basic_items(x, entries)
    plan.x_shape, plan._result_shape = x._data.shape, None
    plan.indices, plan.perm, plan.out_perm = (), None, None
    if not advanced:
        return plan
    view_shape = plan.result_shape
    indices = [checked_index(t, size, v) for v, size, t in advanced]
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
        return basic_index(self, plan.items, _view_name(plan.items, self.shape))
    return Index.apply(_advanced_operand(self, plan), plan.indices, plan.out_perm)


def _view_name(items, shape):
    """PyTorch's node name for a basic index: its last step that does something (a select, a
    slice narrower than its dim, a new dim), or Alias when none does."""
    name, dim = "Alias", 0
    for item in items:
        kind = item[0]
        if kind == "new":
            name = "Unsqueeze"
            continue
        if kind == "select":
            name = "Select"
        elif kind == "slice" and item[1:] != (0, shape[dim], 1):
            name = "Slice"
        dim += 1
    return name


def _broadcasts_to(value, target):
    """Whether tensor `value` broadcasts to the shape `target`."""
    try:
        return broadcast_shapes(tuple(value.shape), target) == target
    except RuntimeError:
        return False


def _prepare_value(x, plan, value):
    """`value` for writing into `x[index]`: a scalar, or a tensor of x's dtype shaped for the
    kernel (the indexed shape, advanced dims first)."""
    if not isinstance(value, Tensor):
        if not isinstance(value, SCALAR_TYPES + (np.generic,)):
            raise TypeError(f"can't assign a {type(value).__name__} to a genesis tensor")
        return value.item() if isinstance(value, np.generic) else value
    if plan.indices and value.dtype is not x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dtypes.scalar_type_name(x.dtype)} for the destination and "
                           f"{dtypes.scalar_type_name(value.dtype)} for the source.")
    value = value.to(device=x.device, dtype=x.dtype)
    target = plan.result_shape
    while value.ndim > len(target) and value.shape[0] == 1:
        value = reshape(value, tuple(value.shape[1:]))
    if plan.indices and not _broadcasts_to(value, target):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}")
    value = expand(value, target)  # a basic index's mismatch: expand's error, as torch's copy_
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
        return name_node(AsStridedScatter.apply(x, value, region, True), "CopySlices")
    new = IndexPut.apply(_advanced_operand(x, plan), plan.indices, value, accumulate)
    if plan.perm is not None:
        new = permute(new, inverse_permutation(plan.perm))
    if plan.trivial_basic:
        return new
    return name_node(AsStridedScatter.apply(x, new, region, True), "CopySlices")


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
            data = value._data if isinstance(value, Tensor) else rounded_scalar(self.dtype, value)
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


def _check_mask(mask, op):
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        kind = dtypes.type_meta_name(mask.dtype) if isinstance(mask, Tensor) else \
            type(mask).__name__
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {kind}")


def _plan_masked_fill(self, mask, value):
    """masked_fill_ as the kernel where(mask, value, self) writing self (inplace.py)."""
    _check_mask(mask, "masked_fill_")
    if isinstance(value, Tensor) and value.ndim:
        return None
    value = dtypes.storable_scalar(value, self.dtype)
    return "where", (mask, value, self), ()


def masked_fill(input, mask, value):
    """`input` with `value` (a scalar or 0-d tensor) where `mask` holds; broadcasts."""
    _check_mask(mask, "masked_fill_")
    value = dtypes.storable_scalar(value, input.dtype)
    node = "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0"
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = value.to(device=input.device, dtype=input.dtype)
    elif input.dtype.is_floating_point:  # a Python float keeps a floating input's dtype
        value = float(value)
    else:
        value = full((), value, dtype=input.dtype, device=input.device)
    return name_node(where(mask, value, input), node)


def _broadcast_masked(input, mask, op):
    """`input` and `mask` expanded to their common shape (joined mask first, as torch's)."""
    _check_mask(mask, op)
    shape = broadcast_shapes(tuple(mask.shape), tuple(input.shape), op=op)
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
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{dtypes.scalar_type_name(input.dtype)} and "
                           f"{dtypes.scalar_type_name(source.dtype)}")  # PyTorch's text, no space
    input, mask = _broadcast_masked(input, mask, "masked_scatter_")
    shape = tuple(input.shape)
    if not shape:
        input, mask = reshape(input, (1,)), reshape(mask, (1,))
    indices = nonzero(mask, as_tuple=True)
    count = indices[0].shape[0]
    if source.numel() < count:
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    out = IndexPut.apply(input, indices, narrow(flatten(source), 0, 0, count), False)
    return name_node(reshape(out, shape) if not shape else out, "MaskedScatterBackward0")


def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    out = wrap(call("nonzero", input), input.device, dtypes.int64)
    if not as_tuple:
        return out
    if input.ndim == 0:
        return (zeros(out.shape[0], dtype=dtypes.int64, device=input.device),)
    return unbind(out, 1)


argwhere = nonzero


class IndexMethods:
    """Tensor methods of this family: indexing, index_put, masks, nonzero."""

    __getitem__ = getitem
    __setitem__ = setitem
    index_put_ = index_put_
    index_put = index_put
    masked_fill = masked_fill
    masked_select = masked_select
    masked_scatter = masked_scatter
    nonzero = nonzero
    argwhere = argwhere
    masked_scatter_ = _inplace(masked_scatter, "masked_scatter_")
    masked_fill_ = _inplace(masked_fill, "masked_fill_", _plan_masked_fill)


__all__ = ["index_put", "masked_fill", "masked_select", "masked_scatter", "nonzero", "argwhere"]
