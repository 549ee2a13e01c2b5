"""The view machinery autograd needs: tensors over another tensor's storage, and the history of
a view or base written in place.

`make_view` is the one way to build a view (it shares the storage, base and version counter).
`AsStrided` is a differentiable view given by explicit geometry, `AsStridedScatter` its inverse
(PyTorch's CopySlices: "base with the view's region replaced"). After an in-place write,
`rebase_history` gives the written tensor, and the base it views, the history of that write.
"""

from ..dispatch import kernel
from ..tensor import Tensor, contiguous_strides
from .function import Function, name_node


def make_view(t, shape, strides, offset):
    """A tensor over `t`'s storage with the given geometry; shares its version counter."""
    device, storage, base = t.device, t._storage, t._base
    data = kernel("as_strided", device.type)(storage, tuple(shape), tuple(strides), offset)
    return Tensor._make(data, device, t.dtype, storage, offset, False,
                        t if base is None else base, t._version_counter)


def rebase_history(self, result):
    """Make `self` (just overwritten with `result`'s values) carry `result`'s history.

    A view passes the write on to its base (`AsStridedScatter`) and becomes an `AsStrided` view
    of the new base. A tensor with a history overwritten by a value without one (`zero_`,
    `fill_`) keeps a history that sends zeros to the old one, as PyTorch's does.
    """
    base = self._base
    if base is None and result._requires_grad:
        self.grad_fn, self._output_nr, self._requires_grad = result.grad_fn, result._output_nr, True
        return
    geometry = _geometry(self)
    if base is None:
        written = AsStridedScatter.apply(self, result, geometry)
        self.grad_fn = name_node(written, "CopySlices").grad_fn
        self._output_nr = 0
        return
    new_base = name_node(AsStridedScatter.apply(base, result, geometry), "CopySlices")
    base.grad_fn, base._output_nr, base._requires_grad = new_base.grad_fn, 0, True
    view = AsStrided.apply(base, *geometry)
    self.grad_fn, self._output_nr, self._requires_grad = view.grad_fn, 0, True
    self._base_grad_fn = base.grad_fn


def _zeros_with_geometry(like, geometry):
    """A zero tensor with `geometry` (shape, strides, offset) over fresh storage long enough for it."""
    shape, stride, offset = geometry
    extent = offset + sum((size - 1) * st for size, st in zip(shape, stride)) + 1 if all(shape) \
        else offset
    storage = kernel("full", like.device.type)((max(extent, 1),), 0, like.dtype,
                                               like.device.index)
    owner = Tensor._make(storage, like.device, like.dtype, storage, 0)
    return make_view(owner, shape, stride, offset)


def _geometry(t):
    return (tuple(t.shape), t.stride(), t.storage_offset())


class Restride(Function):
    """A copy of `x` laid out with `geometry` (same shape, other strides/offset)."""

    @staticmethod
    def forward(ctx, x, geometry):
        out = _zeros_with_geometry(x, geometry)
        kernel("copy_", x.device.type)(out._data, x._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class AsStrided(Function):
    """A view of `x`'s storage given by explicit geometry."""

    @staticmethod
    def forward(ctx, x, shape, stride, offset):
        ctx.x_geometry = _geometry(x)
        ctx.view_geometry = (tuple(shape), tuple(stride), offset)
        return make_view(x, shape, stride, offset)

    @staticmethod
    def backward(ctx, grad):
        zeros = _zeros_with_geometry(grad, ctx.x_geometry)
        return AsStridedScatter.apply(zeros, grad, ctx.view_geometry, True), None, None, None


class AsStridedScatter(Function):
    """`base` with the region `view_geometry` (in base's storage coordinates) replaced by `src`.

    With `compute=False` the values were already written in place and forward only aliases
    `base`; with `compute=True` it builds the result out of place.
    """

    @staticmethod
    def forward(ctx, base, src, view_geometry, compute=False):
        ctx.base_geometry = _geometry(base)
        ctx.view_geometry = view_geometry
        if not compute:
            return make_view(base, *ctx.base_geometry)
        out = Restride.forward(None, base, ctx.base_geometry)
        kernel("copy_", base.device.type)(make_view(out, *view_geometry)._data, src._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        laid_out = Restride.apply(grad, ctx.base_geometry)
        grad_src = AsStrided.apply(laid_out, *ctx.view_geometry)
        zeros = _zeros_with_geometry(grad, (ctx.view_geometry[0],
                                            contiguous_strides(ctx.view_geometry[0]), 0))
        grad_base = AsStridedScatter.apply(laid_out, zeros, ctx.view_geometry, True)
        return grad_base, grad_src, None, None
