"""Conv1d and Conv2d layers (cross-correlation, as torch), initialised as torch's."""

import math

from .. import functional as F
from .. import init
from ..functional._utils import ntuple
from ._utils import check_input, new_parameter, optional_parameter
from .module import Module


class _ConvNd(Module):
    """Shared by Conv1d/Conv2d: `_spatial` is the number of spatial dimensions."""

    _spatial = 0
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._spatial
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f"padding_mode {padding_mode!r} is not supported (only 'zeros')")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in ntuple(stride, n, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = ntuple(padding, n, "padding")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, n, "kernel_size")
        self.stride, self.padding = ntuple(stride, n, "stride"), padding
        self.dilation = ntuple(dilation, n, "dilation")
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = new_parameter(out_channels, in_channels // groups, *self.kernel_size,
                                    device=device, dtype=dtype)
        optional_parameter(self, "bias", bias, out_channels, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Kaiming-uniform weight (a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        n = self._spatial
        check_input(self, input.ndim in (n + 1, n + 2) and
                    input.shape[-n - 1] == self.in_channels,
                    f"{n + 1}D (unbatched) or {n + 2}D (batched) input with {self.in_channels} "
                    "channels", input)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding,
                              self.dilation, self.groups)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self._spatial:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._spatial:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L) input."""

    _spatial = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""

    _spatial = 2
    _fn = staticmethod(F.conv2d)
