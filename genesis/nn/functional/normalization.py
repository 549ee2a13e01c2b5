"""Normalization: layer, RMS, group and batch norm, and `normalize` (unit p-norm vectors).

Statistics and the affine step are computed in float32 for half inputs (as PyTorch does on the
CPU) and the result is cast back once to the input's dtype, also when the parameters are float32
(a model converted to half but for its norms); gradients come from autograd over mean/var and
elementwise ops, except training batch norm's, written in a stable closed form (batch_stats).
"""

import ml_dtypes

from ... import dtypes
from ...autograd.function import name_node
from ...dispatch import has_kernel
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from . import fused_norm
from .batch_stats import BatchNormTraining


def _upcast(x):
    """`x` in the dtype statistics are computed in: float32 for half types."""
    return x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


def _standardize(x, dims, eps):
    """(x - mean) / sqrt(var + eps) over `dims` (biased variance), computed in `x`'s dtype."""
    centered = x - x.mean(dims, keepdim=True)
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * ew.rsqrt(var + eps)


def _affine(y, weight, bias, dtype):
    """`y * weight + bias` (either may be None), rounded once to `dtype`, the input's."""
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.to(dtype)


def _normalized_dims(input, normalized_shape, op):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"{op}: Given normalized_shape={list(shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, shape))}], but got input of size "
                           f"{list(input.shape)}")
    return tuple(range(-len(shape), 0))


@autocast_policy("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Standardize over the trailing `normalized_shape` dims, then scale and shift."""
    dims = _normalized_dims(input, normalized_shape, "layer_norm")
    if has_kernel("layer_norm_fwd", input.device.type):
        out = fused_norm.layer_norm(input, len(dims), weight, bias, eps)
    else:
        out = _affine(_standardize(_upcast(input), dims, eps), weight, bias, input.dtype)
    return name_node(out, "NativeLayerNormBackward0")


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing dims; eps defaults to the dtype's epsilon."""
    dims = _normalized_dims(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = float(ml_dtypes.finfo(input.dtype.numpy_dtype).eps)
    if has_kernel("rms_norm_fwd", input.device.type):
        return fused_norm.rms_norm(input, len(dims), weight, eps)
    x = _upcast(input)
    return _affine(x * ew.rsqrt((x * x).mean(dims, keepdim=True) + eps), weight, None,
                   input.dtype)


def _channel_shape(input):
    """Shape that broadcasts a per-channel (dim 1) vector against `input`."""
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


@autocast_policy("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Standardize each group of channels of (N, C, *) input, then scale and shift per channel."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    n, per_group = input.shape[0], input.shape[1] // num_groups
    for size in input.shape[2:]:
        per_group *= size
    grouped = _upcast(input).reshape(n, num_groups, per_group)
    y = _standardize(grouped, (-1,), eps).reshape(input.shape)
    shape = _channel_shape(input)
    return name_node(_affine(y, None if weight is None else weight.reshape(shape),
                             None if bias is None else bias.reshape(shape), input.dtype),
                     "NativeGroupNormBackward0")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) by batch statistics (training) or running ones (eval).

    In training the running statistics, when given, move towards the batch mean and the unbiased
    batch variance by `momentum`; the gradient is batch_stats' stable form.
    """
    count = input.numel() // max(input.shape[1], 1) if input.ndim > 1 else 0
    if training and count <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{list(input.shape)}")
    if training:
        y, _, _ = BatchNormTraining.apply(input, weight, bias, eps, running_mean, running_var,
                                          momentum)
        return name_node(y, "NativeBatchNormBackward0")
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    x = _upcast(input)
    shape = _channel_shape(input)
    centered = x - running_mean.to(x.dtype).reshape(shape)
    y = centered * ew.rsqrt(running_var.to(x.dtype).reshape(shape) + eps)
    return name_node(_affine(y, None if weight is None else weight.reshape(shape),
                             None if bias is None else bias.reshape(shape), input.dtype),
                     "NativeBatchNormBackward0")


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """`input` divided by its p-norm along `dim` (at least eps)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    result = input / denom
    return result if out is None else out.copy_(result)
