"""Dropout: zero elements with probability p in training and scale the rest by 1 / (1 - p)."""

from ..._warnings import warn
from ...autograd.function import Function
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


def _feature_dropout(input, p, training, inplace, spatial, op):
    """Zero whole channels: one draw per (N, C) broadcast over the `spatial` trailing dims. An
    input without a batch dim, or (dropout2d/3d, deprecated, with PyTorch's warning) of another
    rank, counts as one batch of its leading dim's channels, as PyTorch's does."""
    _check_p(p)
    batched = input.ndim == spatial + 2
    if not batched and input.ndim != spatial + 1:
        if spatial == 1:
            raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                               "input. Note that dropout1d exists to provide channel-wise dropout "
                               "on inputs with 1 spatial dimension, a channel dimension, and an "
                               "optional batch dimension (i.e. 2D or 3D inputs).")
        warn(f"{op}: Received a {input.ndim}-D input to {op}, which is deprecated and will result "
             "in an error in a future release. To retain the behavior and silence this warning, "
             f"please use dropout instead. Note that {op} exists to provide channel-wise dropout "
             f"on inputs with {spatial} spatial dimensions, a channel dimension, and an optional "
             f"batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).")
        if input.ndim == 0:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0:
        return input
    drawn = 2 if batched else 1
    mask = _dropout_mask(input, p, tuple(input.shape[:drawn]) + (1,) * (input.ndim - drawn))
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")
