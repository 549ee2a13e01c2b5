"""Lay out only the convolution weights of a model in a memory format (channels_last for NHWC
kernels), leaving every other parameter as it is, unlike `Module.to(memory_format=...)`."""

from ...autograd.grad_mode import no_grad
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Re-lay the weight of every Conv2d and ConvTranspose2d in `module` (recursively) in
    `memory_format`; returns `module`."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Re-lay the weight of every Conv3d and ConvTranspose3d in `module` (recursively) in
    `memory_format`; returns `module`."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
