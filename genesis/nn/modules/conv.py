"""Convolution layers (cross-correlation, as torch) and their transposes, initialised as torch's."""

import math

from .. import functional as F
from .. import init
from ..functional._utils import ntuple
from ..functional.conv import same_padding
from ._utils import new_parameter, optional_parameter
from .module import Module

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared by the convolutions: `_spatial` is the number of spatial dimensions."""

    _spatial = 0
    _fn = None
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 output_padding=0):
        super().__init__()
        n = self._spatial
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, n, "kernel_size")
        self.stride = ntuple(stride, n, "stride")
        self.dilation = ntuple(dilation, n, "dilation")
        self.padding = self._checked_padding(padding)
        self.output_padding = ntuple(output_padding, n, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        self._reversed_padding_repeated_twice = self._reversed_padding()
        shape = ((in_channels, out_channels // groups) if self.transposed else
                 (out_channels, in_channels // groups))
        self.weight = new_parameter(*shape, *self.kernel_size, device=device, dtype=dtype)
        optional_parameter(self, "bias", bias, out_channels, device=device, dtype=dtype)
        self.reset_parameters()

    def _checked_padding(self, padding):
        if not isinstance(padding, str):
            return ntuple(padding, self._spatial, "padding")
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        return padding

    def _reversed_padding(self):
        """The (low, high) pairs for F.pad, last dim first, that `padding` stands for."""
        if self.padding == "valid":
            pairs = [(0, 0)] * self._spatial
        elif self.padding == "same":
            pairs = same_padding(self.kernel_size, self.dilation)
        else:
            pairs = [(p, p) for p in self.padding]
        return tuple(p for pair in reversed(pairs) for p in pair)

    def reset_parameters(self):
        """Kaiming-uniform weight (a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = self._spatial
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        fn = type(self)._fn
        if self.padding_mode == "zeros":
            return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)
        padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return fn(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) or (C, L) input."""

    _spatial = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""

    _spatial = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _spatial = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (PyTorch's rule and errors)."""
        if output_size is None:
            return self.output_padding
        n = self._spatial
        leading = 2 if input.ndim == n + 2 else 1
        size = list(output_size)
        if len(size) == leading + n:
            size = size[leading:]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have "
                             f"{n} or {leading + n} elements (got {len(output_size)})")
        low = [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, s, p, d, k in
               zip(input.shape[leading:], self.stride, self.padding, self.dilation,
                   self.kernel_size)]
        high = [m + s - 1 for m, s in zip(low, self.stride)]
        if any(not lo <= s <= hi for s, lo, hi in zip(size, low, high)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                             f"{low} to {high} (for an input of {list(input.shape[leading:])})")
        return tuple(s - lo for s, lo in zip(size, low))

    def forward(self, input, output_size=None):
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding,
                              self._output_padding(input, output_size), self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L) or (C, L) input."""

    _spatial = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W) or (C, H, W) input."""

    _spatial = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _spatial = 3
    _fn = staticmethod(F.conv_transpose3d)
