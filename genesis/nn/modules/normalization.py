"""LayerNorm, RMSNorm and GroupNorm layers (weights ones, biases zeros, as torch), and the local
response norms."""

from .. import functional as F
from ._utils import optional_parameter, reset_affine
from .module import Module


class _TrailingNorm(Module):
    """LayerNorm and RMSNorm: normalize over the trailing `normalized_shape` dims."""

    def __init__(self, normalized_shape, eps, elementwise_affine, bias, device, dtype):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        factory = {"device": device, "dtype": dtype}
        optional_parameter(self, "weight", elementwise_affine, self.normalized_shape, **factory)
        if bias is not None:
            optional_parameter(self, "bias", elementwise_affine and bias, self.normalized_shape,
                               **factory)
        self.reset_parameters()

    def reset_parameters(self):
        reset_affine(self)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LayerNorm(_TrailingNorm):
    """Standardize over the trailing `normalized_shape` dims, with an optional affine map."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return super().extra_repr() + f", bias={self.bias is not None}"


class RMSNorm(_TrailingNorm):
    """x / sqrt(mean(x^2) + eps) over the trailing dims; eps None uses the dtype's epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, None, device, dtype)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)


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
        reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"

