"""Shape ops that make views: reshaping, permuting, broadcasting, slicing and splitting.

Views (view, reshape when possible, permute, expand, squeeze, narrow, select, split, ...) compute
their shape, strides and offset here, once for every device, and call `make_view`: the result
shares the input's storage and version counter. Their backward is written with genesis ops: the
inverse permutation, `sum_to`, or a scatter into zeros of the region the view covers. meshgrid
and atleast_*d are made of views too. `view(dtype)` reads the same bytes as another dtype
over the backend's `storage_as` of the storage; as in PyTorch it has no base and no history.
The shape ops that copy (cat, flip, roll, tril/triu, repeat, diag) are in shape_copies.py.
"""

import math
import operator

from .. import dtypes
from .._warnings import warn_once
from ..autograd import forward_ad, grad_mode
from ..autograd.function import Function, UntrackedNode, name_node
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.views import AsStrided, AsStridedScatter
from ..dispatch import kernel
from ..tensor import Tensor, wrap_dim
from .common import (call, contiguous_strides, expand_strides, make_view, normalize_dims, sum_to,
                     wrap)
from .creation import zeros
from .legacy import error_type_name
from .size_args import _sizes, check_view_arguments, int_list


def _geometry(t):
    return t._data.shape, t.stride(), t._offset


def infer_size(shape, numel, op):
    """`shape` with its one -1 replaced so that the product is `numel`; RuntimeError naming `op`
    otherwise."""
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape  # the usual case: every size given
    known = -math.prod(shape)
    if known > 0 and numel % known == 0 and shape.count(-1) == 1 and min(shape) == -1:
        i = shape.index(-1)  # the other usual case: one size inferred from nonzero others
        return shape[:i] + (numel // known,) + shape[i + 1:]
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred")
    bad = next((s for s in shape if s < -1), None)
    if bad is not None:
        raise RuntimeError(f"{op}(): invalid shape dimension {bad}")
    known = math.prod(s for s in shape if s != -1)
    if unknown and known == 0:
        if numel == 0:
            raise RuntimeError(f"{op}(): cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value and is "
                               "ambiguous")
    elif unknown and numel % known == 0:
        i = unknown[0]
        return shape[:i] + (numel // known,) + shape[i + 1:]
    elif not unknown and known == numel:
        return shape
    raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")


def view_strides(old_shape, old_strides, new_shape):
    """Strides that show a tensor of `old_shape`/`old_strides` as `new_shape` without copying.

    None when impossible (a new dimension would span two non-mergeable old ones); this is
    PyTorch's computeStride, so the strides agree with PyTorch's.
    """
    if not old_shape:
        return (1,) * len(new_shape)
    if old_strides == contiguous_strides(old_shape) and 0 not in old_shape:
        return contiguous_strides(new_shape)  # what the loop below gives a contiguous tensor
    if math.prod(old_shape) == 0:
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) \
            else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_stride = old_strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def index_geometry(shape, strides, offset, items):
    """The geometry of a basic-indexing view of a tensor with `shape`/`strides`/`offset`.

    `items` are applied to the tensor's dims left to right: ("keep",) keeps a dim, ("select", i)
    drops it at index i, ("slice", start, length, step) slices it, ("new", size) inserts a dim
    of size 1 (or 0) and consumes none. Dims after the last item are kept.
    """
    out_shape, out_strides, d = [], [], 0
    for item in items:
        kind = item[0]
        if kind == "new":
            out_shape.append(item[1])
            out_strides.append(shape[d] * strides[d] if d < len(shape) else 1)
            continue
        if kind == "select":
            offset += item[1] * strides[d]
        elif kind == "slice":
            _, start, length, step = item
            offset += start * strides[d] if length else 0
            out_shape.append(length)
            out_strides.append(strides[d] * step)
        else:
            out_shape.append(shape[d])
            out_strides.append(strides[d])
        d += 1
    return (tuple(out_shape) + tuple(shape[d:]), tuple(out_strides) + tuple(strides[d:]), offset)


def diagonal_geometry(shape, strides, offset, diag, dim1, dim2):
    """The geometry of `diagonal(offset=diag, dim1, dim2)`: the diagonal becomes the last dim."""
    if diag >= 0:
        length = max(min(shape[dim1], shape[dim2] - diag), 0)
        offset += diag * strides[dim2] if length else 0
    else:
        length = max(min(shape[dim1] + diag, shape[dim2]), 0)
        offset -= diag * strides[dim1] if length else 0
    rest = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    return (tuple(shape[d] for d in rest) + (length,),
            tuple(strides[d] for d in rest) + (strides[dim1] + strides[dim2],), offset)


def along(dim, item):
    """Basic-indexing items applying `item` to dim `dim` and keeping the others."""
    return (("keep",),) * dim + (item,)


def fresh_view(t, shape, strides):
    """`t` (a kernel result nobody else holds) seen with another geometry; not a view of it."""
    out = make_view(t, shape, strides, t.storage_offset())
    out._base = None
    return out


def inverse_permutation(dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return tuple(inverse)


class ViewFunction(Function):
    """A Function whose forward only makes views of its input: with grad mode off and no
    tangents flowing its `apply` is that forward alone, as Function.apply would run it (nothing
    to record; a view reads no autocast state). Its tangent is the same view of the input's."""

    linear = True

    @classmethod
    def apply(cls, *args):
        if grad_mode._state.enabled or forward_ad._state.active:
            return super().apply(*args)
        return cls.forward(UntrackedNode(), *args)


class View(ViewFunction):
    """`x` seen with another shape and the given strides; backward reshapes the gradient back."""

    @staticmethod
    def forward(ctx, x, shape, strides, name="View"):
        ctx.in_shape, ctx.node_name = x._data.shape, name + "Backward0"
        return make_view(x, shape, strides, x._offset)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None, None, None


class ReshapeCopy(Function):
    """`reshape` where no view can do it: a contiguous copy with the new shape."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = tuple(x.shape)
        flat = wrap(call("contiguous", x), x.device, x.dtype)
        return fresh_view(flat, shape, contiguous_strides(shape))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Permute(ViewFunction):
    """`x` with its dims reordered; backward applies the inverse permutation."""

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        shape, strides, offset = _geometry(x)
        return make_view(x, [shape[d] for d in dims], [strides[d] for d in dims], offset)

    @staticmethod
    def backward(ctx, g):
        return g.permute(inverse_permutation(ctx.dims)), None


class Expand(ViewFunction):
    """`x` broadcast to `shape` with stride-0 dims; backward sums the gradient back."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = tuple(x.shape)
        return make_view(x, shape, expand_strides(x, shape), x.storage_offset())

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.in_shape), None


def scatter_region(g, shape, region):
    """Zeros of `shape` with the region `region` (geometry in a contiguous layout) set to `g`."""
    base = zeros(shape, dtype=g.dtype, device=g.device)
    return AsStridedScatter.apply(base, g, region, True)


class SubView(ViewFunction):
    """A part of `x` (select, narrow, slicing, diagonal): backward scatters into zeros.

    `geometry_fn(shape, strides, offset, *args)` gives the view's geometry; evaluated on a
    contiguous layout of `x` it gives the region the gradient is written into.
    """

    @staticmethod
    def forward(ctx, x, geometry_fn, args, name):
        ctx.geometry, ctx.node_name = (geometry_fn, args), name + "Backward0"
        return make_view(x, *geometry_fn(*_geometry(x), *args))

    @staticmethod
    def backward(ctx, g):
        geometry_fn, args = ctx.geometry
        shape = ctx.input_shape(0)
        region = geometry_fn(shape, contiguous_strides(shape), 0, *args)
        return scatter_region(g, shape, region), None, None, None


def basic_index(x, items, name="Slice"):
    """`x` viewed through basic-indexing `items` (see `index_geometry`)."""
    return SubView.apply(x, index_geometry, (items,), name)


class Split(ViewFunction):
    """Consecutive pieces of `x` along `dim`, as views; with `drop` (unbind) the dim goes."""

    @staticmethod
    def forward(ctx, x, dim, sizes, drop):
        """index_geometry's select (drop) or unit-step slice along `dim`, for each piece."""
        ctx.dim, ctx.drop = dim, drop
        shape, strides, offset = _geometry(x)
        step = strides[dim]
        if drop:
            shape, strides = shape[:dim] + shape[dim + 1:], strides[:dim] + strides[dim + 1:]
        outs, start = [], 0
        for size in sizes:
            if drop:
                outs.append(make_view(x, shape, strides, offset + start * step))
            else:
                outs.append(make_view(x, shape[:dim] + (size,) + shape[dim + 1:], strides,
                                      offset + start * step if size else offset))
            start += size
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        from .shape_copies import cat, stack  # (that module imports this one)
        joined = stack(grads, ctx.dim) if ctx.drop else cat(grads, ctx.dim)
        return joined, None, None, None


def view(self, *shape, size=None, dtype=None):
    """A view with another shape (one size may be -1; RuntimeError when strides forbid it), or
    given a dtype, this tensor's bytes read as that dtype (`view_dtype`)."""
    if dtype is None and len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        shape, dtype = (), shape[0]
    if dtype is not None:
        if shape or size is not None:
            raise TypeError("view() received an invalid combination of arguments: expected "
                            "either (dtype) or (size)")
        return view_dtype(self, dtype)
    shape = _sizes(shape, size, "view")
    check_view_arguments(shape)
    shape = infer_size(int_list(shape, "view"), self.numel(), "view")
    strides = view_strides(self._data.shape, self.stride(), shape)
    if strides is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return View.apply(self, shape, strides)


def reshape(input, shape):
    """A view when the strides allow one, else a contiguous copy."""
    shape = infer_size(int_list((shape,), "reshape", "shape", 2), input.numel(), "reshape")
    strides = view_strides(input._data.shape, input.stride(), shape)
    if strides is None:
        return name_node(ReshapeCopy.apply(input, shape), "UnsafeViewBackward0")
    return View.apply(input, shape, strides)


def view_as(self, other):
    """A view of this tensor with `other`'s shape."""
    return view(self, tuple(other.shape))


def reshape_as(self, other):
    """This tensor reshaped to `other`'s shape."""
    return reshape(self, tuple(other.shape))


def view_dtype(self, dtype):
    """This tensor's bytes read as `dtype`: a tensor over the same storage, sharing the version
    counter so writes through either show in both. As in PyTorch it is not differentiable: the
    result is a leaf that does not require grad, whatever the input."""
    shape, strides, offset = dtype_view_geometry(self, dtype)
    device = self.device.type
    storage = self._storage if dtype is self.dtype \
        else kernel("storage_as", device)(self._storage, dtype)
    data = kernel("as_strided", device)(storage, shape, strides, offset)
    return Tensor._make(data, self.device, dtype, storage, offset, version=self._version_counter)


def dtype_view_geometry(t, dtype):
    """The shape, strides and storage offset (in elements of `dtype`) of `t` read as `dtype`.

    An equal element size keeps them. Otherwise the last dim, which must have stride 1, is
    split (a smaller dtype) or merged (a larger one) by the size ratio, and the other strides
    and the offset scaled with it; RuntimeError with PyTorch's message when they do not divide.
    """
    shape, strides, offset = tuple(t.shape), t.stride(), t.storage_offset()
    old, new = t.dtype.itemsize, dtype.itemsize
    if old == new:
        return shape, strides, offset
    what = (f"to view {dtypes.scalar_type_name(t.dtype)} as {dtypes.scalar_type_name(dtype)} "
            "(different element sizes)")
    if not shape:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if old < new:
        _check_mergeable(shape, strides, offset, new // old, what)
    elif strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    return (shape[:-1] + (shape[-1] * old // new,),
            tuple([s * old // new for s in strides[:-1]]) + (1,), offset * old // new)


def _check_mergeable(shape, strides, offset, ratio, what):
    """RuntimeError unless `ratio` consecutive elements along the last dim can be read as one:
    that dim's size, the offset and the other strides divisible by it, the last stride 1."""
    if shape[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                           f"{shape[-1]}")
    if offset % ratio:
        raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                           f"{offset}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    for d, stride in enumerate(strides[:-1]):
        if stride % ratio:
            raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got "
                               f"{stride}")


def permute(input, dims):
    """Reorder the dims; `dims` must name each dim once."""
    dims = int_list((dims,), "permute", "dims", 2)
    if len(dims) != input.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does "
                           "not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, dims)


def transpose(input, dim0, dim1):
    """A view with dimensions `dim0` and `dim1` swapped."""
    dim0, dim1 = wrap_dim(dim0, input.ndim, "transpose"), wrap_dim(dim1, input.ndim, "transpose")
    if input.ndim == 0:
        return View.apply(input, (), (), "Transpose")
    dims = list(range(input.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return name_node(Permute.apply(input, tuple(dims)), "TransposeBackward0")


swapaxes = swapdims = transpose


def t(input):
    """Transpose a matrix; 0-d and 1-D tensors come back as they are (as views)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return name_node(transpose(input, 0, -1) if input.ndim else transpose(input, 0, 0),
                     "TBackward0")


def _reversed_dims(self):
    """`.T`: the dimensions in reverse order (a view); off matrices PyTorch warns, once."""
    if self.ndim == 0:
        warn_once("T of 0-d", "Tensor.T is deprecated on 0-D tensors. This function is the "
                  "identity in these cases.")
    elif self.ndim != 2:
        warn_once("T of n-d", "The use of `x.T` on tensors of dimension other than 2 to reverse "
                  "their shape is deprecated and it will throw an error in a future release. "
                  "Consider `x.mT` to transpose batches of matrices or "
                  "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                  "tensor.")
    return Permute.apply(self, tuple(reversed(range(self.ndim))))


def _matrix_transpose(self):
    """`.mT` (and `.mH` of a real tensor): the last two dimensions swapped (a view)."""
    if self.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _conj_transpose(self):
    """`.H` (of a real matrix): its transpose (a view)."""
    if self.ndim > 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor. For batches of matrices, consider using "
                           "tensor.mH")
    return _reversed_dims(self)


def adjoint(input):
    """The conjugate transpose of the last two dims (a transpose for real tensors)."""
    return _matrix_transpose(input)


def expand(self, *sizes, size=None):
    """A broadcast view: size-1 dims repeat with stride 0, -1 keeps a size, new dims lead."""
    sizes = int_list(_sizes(sizes, size, "expand"), "expand")
    if len(sizes) < self.ndim:
        name = error_type_name(self.dtype, self.device.type)
        raise RuntimeError(f"expand({name}{{{list(self.shape)}}}, size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({self.ndim})")
    lead = len(sizes) - self.ndim
    shape = list(sizes)
    for i in range(len(sizes) - 1, -1, -1):
        size = sizes[i]
        if i < lead:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            continue
        current = self.shape[i - lead]
        if size == -1:
            shape[i] = current
        elif current != size and current != 1:
            raise RuntimeError(f"The expanded size of the tensor ({size}) must match the existing "
                               f"size ({current}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(self.shape)}")
    return Expand.apply(self, tuple(shape))


def expand_as(self, other):
    """This tensor expanded (a view) to `other`'s shape."""
    return expand(self, tuple(other.shape))


def broadcast_to(input, size):
    """A view of `input` broadcast to `size` (no copy)."""
    return expand(input, int_list((size,), "broadcast_to", "size", 2))


def squeeze(input, dim=None):
    """Drop dims of size 1 (all of them, or those of `dim` that have size 1)."""
    dims = normalize_dims(dim, input.ndim, "squeeze")
    keep = [d for d in range(input.ndim) if not (d in dims and input.shape[d] == 1)]
    shape, strides, _ = _geometry(input)
    variant = 0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1  # PyTorch's
    return name_node(View.apply(input, tuple(shape[d] for d in keep),
                                tuple(strides[d] for d in keep), "Squeeze"),
                     f"SqueezeBackward{variant}")


def unsqueeze(input, dim):
    """Insert a dim of size 1 at `dim` (in [-ndim - 1, ndim])."""
    dim = wrap_dim(dim, input.ndim + 1, "unsqueeze")
    shape, strides, _ = _geometry(input)
    stride = shape[dim] * strides[dim] if dim < input.ndim else 1
    return View.apply(input, shape[:dim] + (1,) + shape[dim:], strides[:dim] + (stride,)
                      + strides[dim:], "Unsqueeze")


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a view when possible)."""
    if input.ndim == 0:
        return reshape(input, (1,))
    start = wrap_dim(start_dim, input.ndim, "flatten")
    end = wrap_dim(end_dim, input.ndim, "flatten")
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = tuple(input.shape)
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """Split dim `dim` into `sizes` (one may be -1)."""
    dim = wrap_dim(dim, input.ndim, "unflatten")
    sizes = int_list((sizes,), "unflatten", "sizes", 2)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = input.shape[dim]
    try:
        sizes = infer_size(sizes, size, "unflatten")
    except RuntimeError:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size "
                           f"of dim {dim} ({size}) in the input tensor") from None
    shape = tuple(input.shape)
    return reshape(input, shape[:dim] + sizes + shape[dim + 1:])


def narrow(input, dim, start, length):
    """`length` elements of dim `dim` from `start` (a negative start counts from the end)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim, "narrow")
    start, length, size = operator.index(start), operator.index(length), input.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    start = start + size if start < 0 else start
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return basic_index(input, along(dim, ("slice", start, length, 1)), "Slice")


def select(input, dim, index):
    """The slice at `index` of dim `dim`, without that dim."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim, "select")
    index, size = operator.index(index), input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return basic_index(input, along(dim, ("select", index % size)), "Select")


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes as a view; it becomes the last dim."""
    dim1, dim2 = wrap_dim(dim1, input.ndim, "diagonal"), wrap_dim(dim2, input.ndim, "diagonal")
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return SubView.apply(input, diagonal_geometry, (offset, dim1, dim2), "Diagonal")


def as_strided(input, size, stride, storage_offset=None):
    """A view of `input`'s storage with explicit geometry (strides and offset in elements)."""
    offset = input.storage_offset() if storage_offset is None else storage_offset
    return AsStrided.apply(input, tuple(size), tuple(stride), offset)


def unbind(input, dim=0):
    """The slices along `dim` as a tuple of views."""
    if input.ndim == 0:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    dim = wrap_dim(dim, input.ndim, "unbind")
    pieces = Split.apply(input, dim, (1,) * input.shape[dim], True)
    name_node(pieces[0], "UnbindBackward0")  # the pieces share one node
    return pieces


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `split_size` along `dim` (the last may be smaller), or of the given sizes."""
    dim = wrap_dim(dim, tensor.ndim, "split")
    size = tensor.shape[dim]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = int_list((split_size_or_sections,), "split_with_sizes", "split_sizes", 2)
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={list(sizes)}")
        return Split.apply(tensor, dim, sizes, False)
    step = operator.index(split_size_or_sections)
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    count = max(-(-size // step), 1) if step else 1
    sizes = (step,) * (count - 1) + (size - step * (count - 1),)
    return Split.apply(tensor, dim, sizes, False)


def chunk(input, chunks, dim=0):
    """At most `chunks` pieces of equal size along `dim` (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = wrap_dim(dim, input.ndim, "chunk")
    size = input.shape[dim]
    if size == 0:
        return Split.apply(input, dim, (0,) * chunks, False)
    return split(input, -(-size // chunks), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """Split at the given indices, or into `sections` pieces whose sizes differ by at most one."""
    dim = wrap_dim(dim, input.ndim, "tensor_split")
    size = input.shape[dim]
    if isinstance(indices_or_sections, (list, tuple)):
        bounds = [min(max(i + size if i < 0 else i, 0), size) for i in indices_or_sections]
        edges = [0] + bounds + [size]
        sizes = tuple(max(b - a, 0) for a, b in zip(edges, edges[1:]))
        starts = edges[:-1]
        return tuple(narrow(input, dim, min(s, size), n) for s, n in zip(starts, sizes))
    sections = operator.index(indices_or_sections)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    base, extra = divmod(size, sections)
    return Split.apply(input, dim, (base + 1,) * extra + (base,) * (sections - extra), False)


def movedim(input, source, destination):
    """Move dims `source` to positions `destination`; the others keep their order."""
    source = (source,) if isinstance(source, int) else tuple(source)
    destination = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(destination)} dims)")
    n = input.ndim
    src = [wrap_dim(d, n, "movedim") for d in source]
    dst = [wrap_dim(d, n, "movedim") for d in destination]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return Permute.apply(input, tuple(o if o is not None else next(rest) for o in order))


moveaxis = movedim


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dimension."""
    return _atleast(tensors, lambda x: reshape(x, (1,)) if x.ndim == 0 else x)


def atleast_2d(*tensors):
    """Each tensor viewed with at least two dimensions."""
    return _atleast(tensors, lambda x: reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape))
                    if x.ndim < 2 else x)


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dimensions."""
    def lift(x):
        if x.ndim == 0:
            return reshape(x, (1, 1, 1))
        if x.ndim == 1:
            return reshape(x, (1, x.shape[0], 1))
        return unsqueeze(x, -1) if x.ndim == 2 else x
    return _atleast(tensors, lift)


def _atleast(tensors, lift):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(lift(x) for x in tensors[0])
    if len(tensors) == 1:
        return lift(tensors[0])
    return tuple(lift(x) for x in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids (views) from 1-D tensors; "xy" swaps the first two output dims. Without
    `indexing` it is "ij", with PyTorch's warning (once a process) that it will be required."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warn_once("meshgrid indexing", "torch.meshgrid: in an upcoming release, it will be "
                  "required to pass the indexing argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    tensors = [reshape(x, (-1,)) for x in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = tuple(x.shape[0] for x in tensors)
    grids = [expand(reshape(x, tuple(-1 if j == i else 1 for j in range(len(shape)))), shape)
             for i, x in enumerate(tensors)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _metadata_inplace(fn, name):
    """`squeeze_`, `unsqueeze_`, `t_`, `transpose_`: `self` takes the geometry of `fn(self)`."""
    def method(self, *args, **kwargs):
        if is_grad_enabled() and self.is_leaf and self.requires_grad:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        out = fn(self, *args, **kwargs)
        self._data = out._data
        if out.requires_grad:
            self.grad_fn, self._output_nr = out.grad_fn, out._output_nr
        return self
    method.__name__ = name
    method.__doc__ = f"In-place `{fn.__name__}`: changes this tensor's geometry, not its data."
    return method


class ShapeMethods:
    """Tensor methods of this family: views, reshapes, splits, in-place geometry changes."""

    view = view
    view_as = view_as

    def reshape(self, *sizes, shape=None):
        """This tensor with `shape` (a view when the strides allow, else a copy)."""
        return reshape(self, int_list(_sizes(sizes, shape, "reshape", "shape"), "reshape",
                                      "shape"))

    reshape_as = reshape_as

    def permute(self, *order, dims=None):
        """A view with the dimensions in the order `dims`."""
        return permute(self, int_list(_sizes(order, dims, "permute", "dims"), "permute", "dims"))

    transpose = transpose
    swapaxes = transpose
    swapdims = transpose
    t = t
    T = property(_reversed_dims)
    mT = property(_matrix_transpose)
    mH = property(_matrix_transpose)
    H = property(_conj_transpose)
    adjoint = adjoint
    expand = expand
    expand_as = expand_as
    broadcast_to = broadcast_to
    squeeze = squeeze
    unsqueeze = unsqueeze
    flatten = flatten
    unflatten = unflatten
    narrow = narrow
    select = select
    diagonal = diagonal
    as_strided = as_strided
    unbind = unbind

    def split(self, split_size, dim=0):
        """Pieces of `split_size` along `dim` (the last may be smaller), or of the given sizes."""
        return split(self, split_size, dim)

    chunk = chunk
    tensor_split = tensor_split
    movedim = movedim
    moveaxis = movedim

    squeeze_ = _metadata_inplace(squeeze, "squeeze_")
    unsqueeze_ = _metadata_inplace(unsqueeze, "unsqueeze_")
    t_ = _metadata_inplace(t, "t_")
    transpose_ = _metadata_inplace(transpose, "transpose_")


__all__ = [
    "reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "adjoint", "broadcast_to",
    "squeeze", "unsqueeze", "flatten", "unflatten", "narrow", "select", "diagonal", "as_strided",
    "unbind", "split", "chunk", "tensor_split", "movedim", "moveaxis", "atleast_1d", "atleast_2d",
    "atleast_3d", "meshgrid"]
