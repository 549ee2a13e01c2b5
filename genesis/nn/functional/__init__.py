"""Functional forms of the layers and losses (`genesis.nn.functional`), named as in torch."""

from .activation import (elu, gelu, leaky_relu, log_softmax, logsigmoid, relu, sigmoid, silu,
                         softmax, softmin, softplus, tanh)
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .conv import conv1d, conv2d, fold, unfold
from .dropout import dropout, dropout1d, dropout2d
from .linear import bilinear, linear
from .loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy,
                   huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from .normalization import batch_norm, group_norm, layer_norm, normalize, rms_norm
from .padding import pad
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .sparse import embedding, one_hot

__all__ = [
    "elu", "gelu", "leaky_relu", "log_softmax", "logsigmoid", "relu", "sigmoid", "silu",
    "softmax", "softmin", "softplus", "tanh", "multi_head_attention_forward",
    "scaled_dot_product_attention", "conv1d", "conv2d", "fold", "unfold", "dropout", "dropout1d",
    "dropout2d", "bilinear", "linear", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "cross_entropy", "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss",
    "batch_norm", "group_norm", "layer_norm", "normalize", "rms_norm", "pad",
    "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "embedding", "one_hot"]
