"""LayerNorm, RMSNorm and GroupNorm layers (weights ones, biases zeros, as torch)."""

from .. import functional as F, init
from ._utils import check_input, optional_parameter
from .module import Module


def _shape_tuple(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _trailing_shape_ok(input, shape):
    return input.ndim >= len(shape) and tuple(input.shape[input.ndim - len(shape):]) == shape


def _expected_trailing(shape):
    return f"input of shape [*, {', '.join(map(str, shape))}]"


class LayerNorm(Module):
    """Standardize over the trailing `normalized_shape` dims, with an optional affine map."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        optional_parameter(self, "weight", elementwise_affine, self.normalized_shape,
                           device=device, dtype=dtype)
        optional_parameter(self, "bias", elementwise_affine and bias, self.normalized_shape,
                           device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        check_input(self, _trailing_shape_ok(input, self.normalized_shape),
                    _expected_trailing(self.normalized_shape), input)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing dims; eps None uses the dtype's epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        optional_parameter(self, "weight", elementwise_affine, self.normalized_shape,
                           device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        check_input(self, _trailing_shape_ok(input, self.normalized_shape),
                    _expected_trailing(self.normalized_shape), input)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Standardize groups of channels of (N, C, *) input; per-channel affine map."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        optional_parameter(self, "weight", affine, num_channels, device=device, dtype=dtype)
        optional_parameter(self, "bias", affine and bias, num_channels, device=device,
                           dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        check_input(self, input.ndim >= 2 and input.shape[1] == self.num_channels,
                    f"input of shape [N, {self.num_channels}, *]", input)
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
