"""Training utilities: gradient clipping, flattening parameters into a vector, packed sequences,
pruning, parametrizations (weight and spectral norm, orthogonal weights), folding BatchNorm into
the layer before it, convolution weights' memory format, and stateless.functional_call.

The parametrization modules build on `genesis.nn.modules`, which itself uses `rnn`'s packed
sequences, so they are imported on first use rather than with this package.
"""

import importlib

from . import fusion, prune, rnn, stateless
from .clip_grad import (
           clip_grad_norm,
           clip_grad_norm_,
           clip_grad_value_,
           clip_grads_with_norm_,
           get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)

_LAZY = {"convert_conv2d_weight_memory_format": ("memory_format",
                                                 "convert_conv2d_weight_memory_format"),
         "convert_conv3d_weight_memory_format": ("memory_format",
                                                 "convert_conv3d_weight_memory_format"),
         "parametrizations": ("parametrizations", None), "parametrize": ("parametrize", None),
         "remove_spectral_norm": ("weight_hooks", "remove_spectral_norm"),
         "remove_weight_norm": ("weight_hooks", "remove_weight_norm"),
         "spectral_norm": ("weight_hooks", "spectral_norm"),
         "weight_norm": ("weight_hooks", "weight_norm")}

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion",
           "prune", "rnn", "stateless", *_LAZY]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'genesis.nn.utils' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    loaded = importlib.import_module(f"genesis.nn.utils.{module}")
    return loaded if attribute is None else getattr(loaded, attribute)
