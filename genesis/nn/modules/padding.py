"""Padding layers: constant (and zero), reflection, replication and circular, in 1, 2 and 3-D."""

from .. import functional as F
from ..functional._utils import ntuple
from .module import Module


class _PadNd(Module):
    """Pads the last `_spatial` dims by `padding` (an int, or (left, right, top, ...) pairs)."""

    _spatial = 0
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = ntuple(padding, 2 * self._spatial, "padding")

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant."""

    _spatial = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with a constant."""

    _spatial = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with a constant."""

    _spatial = 3


class _ZeroPad:
    """Mixin: a constant pad of zero, shown as its padding only (as torch's ZeroPad*)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pads the last two dims with zeros."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pads the last three dims with zeros."""


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection (edge not repeated)."""

    _spatial, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two dims with their reflection."""

    _spatial, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last three dims with their reflection."""

    _spatial, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _spatial, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two dims by repeating their edge values."""

    _spatial, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last three dims by repeating their edge values."""

    _spatial, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        n = self._spatial
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pads the last dim by wrapping around (periodic boundary)."""

    _spatial = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last two dims by wrapping around."""

    _spatial = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last three dims by wrapping around."""

    _spatial = 3
