"""Convolutions through im2col: `unfold` gathers sliding windows, a matmul applies the kernel.

`unfold` and `fold` are each other's backward, so conv1d/conv2d get their gradients (of any
order) from autograd over unfold, reshape and matmul. Both are built from strided views of the
input's storage, so one implementation serves every device.
"""

from ...autograd.function import Function
from ...ops import creation, linalg
from ...ops.autocast import autocast_policy
from ...ops.common import make_view
from ._utils import ntuple
from .padding import pad


def _out_size(size, kernel, dilation, padding, stride):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


class _Geometry:
    """Kernel size, dilation, padding and stride of a 2-D sliding window."""

    def __init__(self, kernel_size, dilation, padding, stride):
        self.kernel = ntuple(kernel_size, 2, "kernel_size")
        self.dilation = ntuple(dilation, 2, "dilation")
        self.padding = ntuple(padding, 2, "padding")
        self.stride = ntuple(stride, 2, "stride")

    def blocks(self, height, width):
        """The number of window positions along each spatial dimension."""
        return tuple(_out_size(size, *args) for size, args in
                     zip((height, width), zip(self.kernel, self.dilation, self.padding,
                                              self.stride)))

    def windows(self, x):
        """A (N, C, kh, kw, OH, OW) view of the windows over the 4-D tensor `x` (no padding)."""
        n, c, h, w = x.shape
        sn, sc, sh, sw = x.stride()
        (kh, kw), (dh, dw), (th, tw) = self.kernel, self.dilation, self.stride
        oh, ow = _out_size(h, kh, dh, 0, th), _out_size(w, kw, dw, 0, tw)
        return make_view(x, (n, c, kh, kw, oh, ow),
                         (sn, sc, dh * sh, dw * sw, th * sh, tw * sw), x.storage_offset())


def _padded(x, geometry):
    ph, pw = geometry.padding
    return pad(x, (pw, pw, ph, ph)) if ph or pw else x


class Unfold(Function):
    """(N, C, H, W) -> (N, C*kh*kw, L): each column holds one window, channels outermost."""

    @staticmethod
    def forward(ctx, x, geometry):
        ctx.geometry, ctx.size = geometry, tuple(x.shape[2:])
        windows = geometry.windows(_padded(x, geometry)).contiguous()
        n, c, kh, kw, oh, ow = windows.shape
        return windows.reshape(n, c * kh * kw, oh * ow)

    @staticmethod
    def backward(ctx, grad):
        return Fold.apply(grad, ctx.size, ctx.geometry), None


class Fold(Function):
    """(N, C*kh*kw, L) -> (N, C, H, W): sums each column back into its window (col2im)."""

    @staticmethod
    def forward(ctx, cols, size, geometry):
        ctx.geometry = geometry
        (kh, kw), (ph, pw) = geometry.kernel, geometry.padding
        oh, ow = geometry.blocks(*size)
        n, c = cols.shape[0], cols.shape[1] // (kh * kw)
        out = creation.zeros(n, c, size[0] + 2 * ph, size[1] + 2 * pw, dtype=cols.dtype,
                             device=cols.device)
        blocks = cols.reshape(n, c, kh, kw, oh, ow)
        windows = geometry.windows(out)
        for i in range(kh):
            for j in range(kw):
                windows[:, :, i, j].add_(blocks[:, :, i, j])
        return out[:, :, ph:ph + size[0], pw:pw + size[1]].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, ctx.geometry), None, None


def _batched(input, op, spatial):
    """`input` with a batch dimension (added for unbatched input) and whether one was added."""
    if input.ndim == spatial + 1:
        return input.unsqueeze(0), True
    if input.ndim == spatial + 2:
        return input, False
    raise RuntimeError(f"{op}: Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) "
                       f"input, but got input of size: {list(input.shape)}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) tensor as columns (im2col)."""
    x, unbatched = _batched(input, "unfold", 2)
    geometry = _Geometry(kernel_size, dilation, padding, stride)
    _check_blocks(geometry, x.shape[2:], "unfold")
    out = Unfold.apply(x, geometry)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns of sliding blocks back into a (N, C, H, W) tensor (col2im)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input with possibly "
                           f"0 batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    geometry = _Geometry(kernel_size, dilation, padding, stride)
    size = ntuple(output_size, 2, "output_size")
    kh, kw = geometry.kernel
    oh, ow = geometry.blocks(*size)
    if cols.shape[1] % (kh * kw) or cols.shape[2] != oh * ow:
        raise RuntimeError(f"fold: expected input of shape [N, C * {kh * kw}, {oh * ow}] for "
                           f"output_size {list(size)}, kernel_size {[kh, kw]}, got "
                           f"{list(input.shape)}")
    out = Fold.apply(cols, size, geometry)
    return out.squeeze(0) if input.ndim == 2 else out


def _check_blocks(geometry, size, op):
    padded = [s + 2 * p for s, p in zip(size, geometry.padding)]
    effective = [d * (k - 1) + 1 for k, d in zip(geometry.kernel, geometry.dilation)]
    if any(p < e for p, e in zip(padded, effective)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, effective))}). Kernel size can't be greater "
                           "than actual input size")


def _same_padding(kernel, dilation, stride, op):
    """(low, high) padding per dimension that keeps the output size with padding='same'."""
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return [(t // 2, t - t // 2) for t in totals]


def _resolve_padding(x, padding, kernel, dilation, stride, op):
    """Symmetric padding for the window geometry; 'same' pads the high side of `x` if needed."""
    if padding == "valid":
        return x, (0, 0)
    if padding != "same":
        if isinstance(padding, str):
            raise ValueError(f"{op}: Invalid padding string '{padding}', should be one of "
                             "'valid', 'same'")
        return x, ntuple(padding, 2, "padding")
    pairs = _same_padding(kernel, dilation, stride, op)
    extra = [high - low for low, high in pairs]
    if any(extra):
        x = pad(x, (0, extra[1], 0, extra[0]))
    return x, tuple(low for low, _ in pairs)


def _conv2d(x, weight, bias, stride, padding, dilation, groups, op):
    """conv2d of a batched 4-D `x` with a 4-D weight."""
    n, c = x.shape[:2]
    out_c, c_per_group, kh, kw = weight.shape
    if groups < 1 or out_c % groups:
        raise RuntimeError(f"{op}: non-positive groups, or out_channels ({out_c}) not divisible "
                           f"by groups ({groups})")
    if c != c_per_group * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {c_per_group * groups} "
                           f"channels, but got {c} channels instead")
    stride, dilation = ntuple(stride, 2, "stride"), ntuple(dilation, 2, "dilation")
    x, padding = _resolve_padding(x, padding, (kh, kw), dilation, stride, op)
    geometry = _Geometry((kh, kw), dilation, padding, stride)
    _check_blocks(geometry, x.shape[2:], op)
    oh, ow = geometry.blocks(*x.shape[2:])
    cols = Unfold.apply(x, geometry)
    k = c_per_group * kh * kw
    if groups == 1:
        out = linalg.matmul(weight.reshape(out_c, k), cols)
    else:
        cols = cols.reshape(n, groups, k, oh * ow)
        out = linalg.matmul(weight.reshape(groups, out_c // groups, k), cols)
    out = out.reshape(n, out_c, oh, ow)
    return out if bias is None else out + bias.reshape(1, out_c, 1, 1)


@autocast_policy("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) input."""
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-D weight, got shape {list(weight.shape)}")
    x, unbatched = _batched(input, "conv2d", 2)
    out = _conv2d(x, weight, bias, stride, padding, dilation, groups, "conv2d")
    return out.squeeze(0) if unbatched else out


@autocast_policy("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) or (C, L) input, as a conv2d over a height of one."""
    if weight.ndim != 3:
        raise RuntimeError(f"conv1d: expected a 3-D weight, got shape {list(weight.shape)}")
    x, unbatched = _batched(input, "conv1d", 1)
    if not isinstance(padding, str):
        padding = (0, ntuple(padding, 1, "padding")[0])
    out = _conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, ntuple(stride, 1, "stride")[0]),
                  padding, (1, ntuple(dilation, 1, "dilation")[0]), groups, "conv1d")
    out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out
