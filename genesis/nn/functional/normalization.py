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
    """The trailing dims `normalized_shape` names, or torch's refusal of an input that does not end
    in it (rms_norm's words join the sizes to the '*', and refuse too few dims as a ValueError)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if op == "rms_norm" and len(shape) > input.ndim:
        raise ValueError(f"Input tensor must have at least {len(shape)} dimensions, but got "
                         f"{input.ndim}")
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        sizes = ", ".join(map(str, shape))
        raise RuntimeError(f"{op}: Given normalized_shape={list(shape)}, expected input with "
                           f"shape [*{sizes if op == 'rms_norm' else ', ' + sizes}], but got "
                           f"input of size{list(input.shape)}")
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


def _check_group_affine(input, weight, bias):
    """torch's refusal of a weight or bias that is not a vector of the input's channel count; its
    text for the bias shows the weight's shape ([0] without weight), as torch's does."""
    shown = [0] if weight is None else list(weight.shape)
    for name, vector in (("weight", weight), ("bias", bias)):
        if vector is not None and (vector.ndim != 1 or vector.shape[0] != input.shape[1]):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to the "
                               f"number of channels in input, but got {name} of shape {shown} "
                               f"and input of shape {list(input.shape)}")


@autocast_policy("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Standardize each group of channels of (N, C, *) input, then scale and shift per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {input.ndim}")
    if input.shape[1] % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _check_group_affine(input, weight, bias)
    n, per_group = input.shape[0], input.shape[1] // num_groups
    for size in input.shape[2:]:
        per_group *= size
    grouped = _upcast(input).reshape(n, num_groups, per_group)
    y = _standardize(grouped, (-1,), eps).reshape(input.shape)
    shape = _channel_shape(input)
    return name_node(_affine(y, None if weight is None else weight.reshape(shape),
                             None if bias is None else bias.reshape(shape), input.dtype),
                     "NativeGroupNormBackward0")


def check_per_channel(op, channels, training, copies=1, **vectors):
    """torch's refusals of batch norm's per-channel tensors, in its order: a running statistic
    missing in evaluation, or a tensor without one element per channel (instance norm's counted
    as the `copies`, one per sample, that torch's batch norm over the folded input sees)."""
    for name, vector in vectors.items():
        if vector is None and not training and name.startswith("running"):
            raise RuntimeError(f"{op}: {name} must be defined in evaluation mode")
        if vector is not None and vector.numel() != channels:
            raise RuntimeError(f"{op}: {name} should contain {channels * copies} elements not "
                               f"{vector.numel() * copies}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) by batch statistics (training) or running ones (eval).

    In training the running statistics, when given, move towards the batch mean and the unbiased
    batch variance by `momentum`; the gradient is batch_stats' stable form.
    """
    count = input.numel() // max(input.shape[1], 1) if input.ndim > 1 else 0
    if training and count <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{input.shape}")
    check_per_channel("batch_norm", input.shape[1] if input.ndim > 1 else 0, training,
                      running_mean=running_mean, running_var=running_var, weight=weight,
                      bias=bias)
    if training:
        y, _, _ = BatchNormTraining.apply(input, weight, bias, eps, running_mean, running_var,
                                          momentum)
        return name_node(y, "NativeBatchNormBackward0")
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
