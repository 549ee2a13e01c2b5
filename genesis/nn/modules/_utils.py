"""Helpers the layers share: parameter allocation and initialisation."""

from ...ops import creation
from .. import init
from ..parameter import Parameter


def new_parameter(*shape, device=None, dtype=None):
    """An uninitialised Parameter of `shape` (sizes, or one sequence of them); the layer's
    reset_parameters fills it. Made as torch's layers make theirs, by torch.empty((a, b)), so a
    size of another type gets the same error."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return Parameter(creation.empty(tuple(shape), device=device, dtype=dtype))


def optional_parameter(module, name, enabled, *shape, device=None, dtype=None):
    """Register `name` as a new Parameter of `shape` when `enabled`, else as None (as torch)."""
    param = new_parameter(*shape, device=device, dtype=dtype) if enabled else None
    module.register_parameter(name, param)


def reset_affine(module):
    """Weight ones and bias zeros, for whichever of the two a normalization layer has."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)
