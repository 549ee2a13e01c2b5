"""Functional forms of the layers and losses (`genesis.nn.functional`), named as in torch."""

from .activation import (
                         elu,
                         gelu,
                         leaky_relu,
                         log_softmax,
                         logsigmoid,
                         relu,
                         sigmoid,
                         silu,
                         softmax,
                         softmin,
                         softplus,
                         tanh,
)
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .conv import conv1d, conv2d, fold, unfold
from .dropout import dropout, dropout1d, dropout2d
from .linear import bilinear, linear
from .loss import (
                         binary_cross_entropy,
                         binary_cross_entropy_with_logits,
                         cross_entropy,
                         huber_loss,
                         kl_div,
                         l1_loss,
                         mse_loss,
                         nll_loss,
                         smooth_l1_loss,
)
from .normalization import batch_norm, group_norm, layer_norm, normalize, rms_norm
from .padding import pad
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .sparse import embedding, one_hot

__all__ = [
                         "adaptive_avg_pool2d",
                         "avg_pool2d",
                         "batch_norm",
                         "bilinear",
                         "binary_cross_entropy",
                         "binary_cross_entropy_with_logits",
                         "conv1d",
                         "conv2d",
                         "cross_entropy",
                         "dropout",
                         "dropout1d",
                         "dropout2d",
                         "elu",
                         "embedding",
                         "fold",
                         "gelu",
                         "group_norm",
                         "huber_loss",
                         "kl_div",
                         "l1_loss",
                         "layer_norm",
                         "leaky_relu",
                         "linear",
                         "log_softmax",
                         "logsigmoid",
                         "max_pool2d",
                         "mse_loss",
                         "multi_head_attention_forward",
                         "nll_loss",
                         "normalize",
                         "one_hot",
                         "pad",
                         "relu",
                         "rms_norm",
                         "scaled_dot_product_attention",
                         "sigmoid",
                         "silu",
                         "smooth_l1_loss",
                         "softmax",
                         "softmin",
                         "softplus",
                         "tanh",
                         "unfold",
]
