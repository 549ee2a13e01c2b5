"""Dropout: zero elements with probability p in training and scale the rest by 1 / (1 - p)."""

from ..._warnings import warn
from ...autograd.function import Function, name_node
from ...dispatch import has_kernel, kernel
from ...ops import creation
from ...ops.common import wrap
from ...ops.random import bernoulli, philox_args


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(like, p, shape=None):
    """Bernoulli(1 - p) keep-mask scaled by 1 / (1 - p), in `like`'s dtype (zeros when p == 1)."""
    probe = like if shape is None else creation.empty(shape, dtype=like.dtype, device=like.device)
    if p == 1.0:
        return creation.zeros_like(probe)
    return bernoulli(probe, 1.0 - p) * (1.0 / (1.0 - p))


class _FusedDropout(Function):
    """x / (1 - p) on kept elements by the backend's "dropout" kernel, in one pass: the keep mask
    is drawn from Philox counters (seed, offset), and the gradient is the same op on the
    gradient with the same counters (the mask drawn again, never stored)."""

    @staticmethod
    def forward(ctx, x, p, seed, offset):
        ctx.args = (p, seed, offset)
        return wrap(kernel("dropout", x.device.type)(x._data, p, seed, offset), x.device, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _FusedDropout.apply(grad, *ctx.args), None, None, None


def dropout(input, p=0.5, training=True, inplace=False):
    """Randomly zero elements (drawn from the global generator) in training; identity otherwise."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if not inplace and p < 1.0 and has_kernel("dropout", input.device.type):
        return _FusedDropout.apply(input, p, *philox_args(input.device, None, input.numel()))
    mask = _dropout_mask(input, p)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, training, inplace, batched=True):
    """Zero whole channels: one draw per (N, C) of a batched input, per C of an unbatched one,
    broadcast over the trailing dims (PyTorch's feature_dropout)."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    leading = 2 if batched else 1
    if input.ndim < leading or batched and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:leading]) + (1,) * (input.ndim - leading)
    mask = _dropout_mask(input, p, shape)
    if inplace:
        return input.mul_(mask)
    # PyTorch runs an unbatched input as a batch of one, squeezed after
    return input * mask if batched else name_node(input * mask, "SqueezeBackward1")


def _warn_dims(op, input, spatial):
    """PyTorch's deprecation warning for an input of other than `spatial` + 1 or + 2 dims."""
    if input.ndim not in (spatial + 1, spatial + 2):
        warn(
            f"{op}: Received a {input.ndim}-D input to {op}, which is deprecated and will result "
            f"in an error in a future release. To retain the behavior and silence this warning, "
            f"please use dropout instead. Note that {op} exists to provide channel-wise dropout "
            f"on inputs with {spatial} spatial dimensions, a channel dimension, and an optional "
            f"batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of a (N, C, L) or unbatched (C, L) input."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of a (N, C, H, W) input; a 3-D input is taken as (N, C, L), as PyTorch
    does (with its warning), and other ranks drop over their first two dims."""
    _check_p(p)
    _warn_dims("dropout2d", input, 2)
    if input.ndim == 3:
        warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.")
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of a (N, C, D, H, W) input; any other rank is taken as unbatched."""
    _check_p(p)
    _warn_dims("dropout3d", input, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)
