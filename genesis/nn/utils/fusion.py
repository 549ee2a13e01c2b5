"""Fold an eval-mode BatchNorm into the convolution or linear layer before it.

BatchNorm in eval mode is the affine map y = (x - mean) * s + beta with s = gamma / sqrt(var +
eps), per channel. Applied after a layer computing W x + b, it equals one layer with weight
W * s (scaled per output channel) and bias (b - mean) * s + beta: one op fewer at inference.
"""

import copy

from ...ops.creation import ones_like, zeros_like
from ...ops.elementwise import rsqrt
from ..parameter import Parameter


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def _fold(weight, bias, bn_rm, bn_rv, bn_eps, bn_w, bn_b, scale_shape):
    """(W * s reshaped to `scale_shape`, (b - mean) * s + beta) as Parameters of the layer's
    dtypes; a missing bias, gamma or beta counts as 0, 1, 0."""
    bias_dtype = weight.dtype if bias is None else bias.dtype
    bias = zeros_like(bn_rm) if bias is None else bias
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * rsqrt(bn_rv + bn_eps)
    fused_weight = (weight * scale.reshape(scale_shape)).to(dtype=weight.dtype)
    fused_bias = ((bias - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return (Parameter(fused_weight, weight.requires_grad),
            Parameter(fused_bias, bias.requires_grad))


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused convolution's (weight, bias); `transpose` for ConvTranspose weights, whose
    output channels are dimension 1."""
    spatial = [1] * (conv_w.ndim - 2)
    shape = [1, -1] + spatial if transpose else [-1, 1] + spatial
    return _fold(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, shape)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A new convolution computing bn(conv(x)) of the two eval-mode modules."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias,
                                                    transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused linear layer's (weight, bias)."""
    return _fold(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, [-1, 1])


def fuse_linear_bn_eval(linear, bn):
    """A new linear layer computing bn(linear(x)) of the two eval-mode modules; BatchNorm's
    features must match the layer's outputs (or be 1)."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             f"bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                      bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
