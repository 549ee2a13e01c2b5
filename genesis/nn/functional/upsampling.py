"""Resampling (`interpolate`): nearest and nearest-exact by index, the linear and cubic modes
(with or without antialiasing) as one weight matrix per spatial dimension, area as adaptive
average pooling.

Linear, cubic and antialiased resampling are separable: the output along one dimension is a fixed
(out, in) matrix times the input along it, whose weights follow PyTorch's source-index arithmetic
(in float32 for float32 and half inputs, as PyTorch's kernels). The product is a matmul, or for
long dimensions a sum of a few weighted index_selects (`along`); the backward is autograd over
them and needs no kernel of its own.

On a device whose backend has interpolation kernels (CUDA), linear, bilinear and trilinear
resampling without antialiasing run through them instead (`_Linear`, whose backward is its
adjoint, and the other way round).
"""

import math

import numpy as np

from ... import dtypes
from ...autograd.function import Function, name_node
from ...dispatch import has_kernel
from ...ops import creation
from ...ops.autocast import autocast_policy
from ...ops.common import call, wrap
from ._utils import in_format_of, warn
from .conv import HALF_TYPES
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, along

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's bicubic coefficient (antialiasing uses PIL's -0.5)


def _scalar_type(x):
    """The numpy type PyTorch computes source indices in for `x`'s dtype."""
    return np.float64 if x.dtype is dtypes.float64 else np.float32


def _area_scale(size, out, align_corners, scale, ftype):
    """PyTorch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return ftype(size - 1) / ftype(out - 1) if out > 1 else ftype(0)
    return _nearest_scale(size, out, scale, ftype)


def _nearest_scale(size, out, scale, ftype):
    """PyTorch's compute_scales_value: 1/scale_factor when one was given, else size/out."""
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(size) / ftype(out)


def _nearest_index(size, out, scale, exact, shortcut):
    """The source index of every output position (nearest or nearest-exact); `shortcut` takes
    PyTorch's 2-D kernel's exact paths for equal and doubled sizes."""
    step = _nearest_scale(size, out, scale, np.float32)
    positions = np.arange(out)
    if exact:
        src = np.floor(((positions + 0.5) * np.float64(step)).astype(np.float32))
    elif shortcut and out == size:
        src = positions
    elif shortcut and out == 2 * size:
        src = positions // 2
    else:
        src = np.floor(positions.astype(np.float32) * step)
    return np.minimum(src.astype(np.int64), size - 1)


def _source_and_lambda(size, out, align_corners, scale, ftype, cubic):
    """Per output position: floor source index (guarded) and the fraction past it."""
    step = _area_scale(size, out, align_corners, scale, ftype)
    positions = np.arange(out, dtype=ftype)
    if align_corners:
        src = step * positions
    else:
        src = step * (positions + ftype(0.5)) - ftype(0.5)
        if not cubic:
            src = np.maximum(src, ftype(0))
    index = np.minimum(np.floor(src).astype(np.int64), size - 1)
    return index, np.clip(src - index.astype(ftype), ftype(0), ftype(1))


def _linear_matrix(size, out, align_corners, scale, ftype):
    """(out, size) weights of linear interpolation."""
    if out == size:
        return np.eye(size, dtype=ftype)
    index, lam = _source_and_lambda(size, out, align_corners, scale, ftype, cubic=False)
    matrix = np.zeros((out, size), dtype=ftype)
    rows = np.arange(out)
    np.add.at(matrix, (rows, index), ftype(1) - lam)
    np.add.at(matrix, (rows, np.minimum(index + 1, size - 1)), lam)
    return matrix


def _cubic(x, a):
    """Keys' cubic convolution kernel with parameter `a`, for |x| < 2."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _cubic_matrix(size, out, align_corners, scale, ftype):
    """(out, size) weights of cubic interpolation; taps past the edges clamp to them."""
    index, lam = _source_and_lambda(size, out, align_corners, scale, ftype, cubic=True)
    matrix = np.zeros((out, size), dtype=ftype)
    rows = np.arange(out)
    for tap in range(4):
        weight = _cubic((lam - (tap - 1)).astype(ftype), ftype(_CUBIC_A)).astype(ftype)
        np.add.at(matrix, (rows, np.clip(index - 1 + tap, 0, size - 1)), weight)
    return matrix


def _antialias_matrix(size, out, align_corners, scale, ftype, cubic):
    """(out, size) weights of the antialiased (PIL-style) filter, stretched by the
    downsampling factor and normalised per output position."""
    step = _area_scale(size, out, align_corners, scale, ftype)
    taps = 4 if cubic else 2
    support = ftype(taps * 0.5) * (step if step >= 1 else ftype(1))
    inv = ftype(1) / step if step >= 1 else ftype(1)
    matrix = np.zeros((out, size), dtype=ftype)
    for i in range(out):
        center = step * ftype(i + 0.5)
        low = max(int(center - support + ftype(0.5)), 0)
        high = min(int(center + support + ftype(0.5)), size)
        x = ((np.arange(low, high, dtype=ftype) - center + ftype(0.5)) * inv).astype(ftype)
        weights = (_cubic(x, ftype(-0.5)) if cubic else np.maximum(1 - np.abs(x), 0))
        weights = weights.astype(ftype)
        total = weights.sum(dtype=ftype)
        matrix[i, low:high] = weights / total if total != 0 else weights
    return matrix


def _resample_matrix(mode, size, out, align_corners, scale, ftype, antialias):
    if antialias:
        return _antialias_matrix(size, out, align_corners, scale, ftype, mode == "bicubic")
    if mode == "bicubic":
        return _cubic_matrix(size, out, align_corners, scale, ftype)
    return _linear_matrix(size, out, align_corners, scale, ftype)


def _output_and_scales(input, size, scale_factor, recompute_scale_factor, mode):
    """PyTorch's rules: exactly one of size and scale_factor; the output size; the scales the
    kernels see (None where they recompute them from the sizes)."""
    dims = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * dims
        if len(sizes) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(input.shape[2:])} "
                             f"and output size of {size}. Please provide input tensor in (N, C, "
                             "d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return [int(s) for s in sizes], [None] * dims
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else \
        [scale_factor] * dims
    if len(scales) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(input.shape[2:])} and scale_factor of shape {scale_factor}. "
                         "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         "scale_factor in (s1, s2, ...,sK) format.")
    sizes = [math.floor(float(s) * f) for s, f in zip(input.shape[2:], scales)]
    if recompute_scale_factor or mode == "area":
        return sizes, [None] * dims
    return sizes, [float(f) for f in scales]


def _check_mode(input, mode, align_corners, antialias):
    known = mode in _MODE_DIMS or mode in ("nearest", "area", "nearest-exact")
    if not known or input.ndim not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and "
                         "requires a 4-D tensor as input")
    if mode not in ("nearest", "nearest-exact") and not input.dtype.is_floating_point:
        raise NotImplementedError(f"interpolate: mode '{mode}' is not implemented for "
                                  f"{input.dtype} input (nearest and nearest-exact are)")
    needed = _MODE_DIMS.get(mode)
    if needed is not None and input.ndim != needed + 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{needed + 2}D input")


def _nearest(x, sizes, scales, exact):
    for d, (out, scale) in enumerate(zip(sizes, scales)):
        index = _nearest_index(x.shape[2 + d], out, scale, exact, x.ndim == 4)
        x = x.index_select(2 + d, creation.tensor(index, dtype=dtypes.int64, device=x.device))
    return x


def _separable(x, mode, sizes, scales, align_corners, antialias, ftype):
    for d, (out, scale) in enumerate(zip(sizes, scales)):
        matrix = _resample_matrix(mode, x.shape[2 + d], out, align_corners, scale, ftype,
                                  antialias)
        x = along(x, 2 + d, matrix)
    return x


class _Linear(Function):
    """Linear interpolation of the spatial dims to `size` through the backend's kernels, or
    with `adjoint` its input gradient (from an output gradient to the input's size `size`):
    each is the other's backward. `scales`: input pixels per output pixel along each dim."""

    @staticmethod
    def forward(ctx, x, size, scales, align_corners, adjoint):
        ctx.args = (tuple(x.shape[2:]), scales, align_corners, not adjoint)
        op = "upsample_linear_bwd" if adjoint else "upsample_linear_fwd"
        return wrap(call(op, x, tuple(size), scales, align_corners, device=x.device), x.device)

    @staticmethod
    def backward(ctx, grad):
        return _Linear.apply(grad, *ctx.args), None, None, None, None


def _linear_kernels(x, mode, antialias):
    """True when the backend's interpolation kernels take this resampling."""
    return (mode in ("linear", "bilinear", "trilinear") and not antialias and x.numel() > 0
            and has_kernel("upsample_linear_fwd", x.device.type))


def _linear(x, sizes, scales, align_corners):
    ftype = _scalar_type(x)
    steps = tuple(float(_area_scale(size, out, align_corners, scale, ftype))
                  for size, out, scale in zip(x.shape[2:], sizes, scales))
    return _Linear.apply(x, sizes, steps, align_corners, False)


_AREA = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}


@autocast_policy("interpolate")
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dimensions of (N, C, *S) input to `size` or by `scale_factor`."""
    _check_mode(input, mode, align_corners, antialias)
    sizes, scales = _output_and_scales(input, size, scale_factor, recompute_scale_factor, mode)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"interpolate: input and output sizes should be greater than 0, but "
                           f"got input {list(input.shape[2:])} and output {sizes}")
    if _linear_kernels(input, mode, antialias):
        out = _linear(input, sizes, scales, bool(align_corners))
    else:
        x = input.float() if input.dtype in HALF_TYPES else input  # sums round once, at the end
        if mode in ("nearest", "nearest-exact"):
            out = _nearest(x, sizes, scales, mode == "nearest-exact")
        elif mode == "area":
            out = _AREA[x.ndim](x, sizes)
        else:
            out = _separable(x, mode, sizes, scales, bool(align_corners), antialias,
                             _scalar_type(input))
        out = out.to(input.dtype)
    if mode == "area":  # named as the adaptive pool it is (and laid out by it)
        return out
    return in_format_of(input, name_node(out, _upsample_node(mode, input.ndim - 2, antialias)))


def _upsample_node(mode, dims, antialias):
    """PyTorch's node name for resampling `dims` spatial dims, e.g. UpsampleBilinear2DBackward0."""
    kind = "".join(part.title() for part in mode.split("-"))
    return f"Upsample{kind}{dims}D{'Aa' if antialias else ''}Backward0"


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate with mode='nearest'."""
    warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
         "instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate with mode='bilinear' and align_corners=True."""
    warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
         "instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
