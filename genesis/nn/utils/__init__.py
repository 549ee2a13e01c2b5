"""Training utilities: gradient clipping and flattening parameters into a vector."""

from .clip_grad import (
           clip_grad_norm_,
           clip_grad_value_,
           clip_grads_with_norm_,
           get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import parametrizations, parametrize
from .weight_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "parametrizations", "parametrize",
           "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]
