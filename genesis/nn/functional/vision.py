"""Rearranging and sampling images: pixel_shuffle/unshuffle, channel_shuffle, affine_grid and
grid_sample.

The shuffles are reshapes and permutes. grid_sample computes source coordinates with genesis
ops (so the gradient reaches the grid through the interpolation weights) and reads the input
with one gather per tap, so the input's gradient is the gather's scatter-add.
"""

import itertools
import math

from ... import dtypes
from ...autograd.function import Function, name_node
from ...ops import creation, elementwise, linalg, ranges, shape_copies
from ...ops.autocast import autocast_policy
from ._utils import in_format_of, warn
from .conv import HALF_TYPES

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _shuffle_check(input, factor, op):
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive factor, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): channels become sub-pixel positions."""
    r = upscale_factor
    _shuffle_check(input, r, "pixel_shuffle")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    out = name_node(x.reshape(*lead, c // (r * r), h * r, w * r), "PixelShuffleBackward0")
    return in_format_of(input, out)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    _shuffle_check(input, r, "pixel_unshuffle")
    *lead, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    out = name_node(x.reshape(*lead, c * r * r, h // r, w // r), "PixelUnshuffleBackward0")
    return in_format_of(input, out)


def channel_shuffle(input, groups):
    """(N, C, *) with the channels of `groups` groups interleaved (ShuffleNet)."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return name_node(x.reshape(n, c, *rest), "ChannelShuffleBackward0")


native_channel_shuffle = channel_shuffle


def _align_corners_default(align_corners):
    if align_corners is None:
        warn("Default grid_sample and affine_grid behavior has changed to "
             "align_corners=False since 1.3.0. Please specify align_corners=True if "
             "the old behavior is desired. See the documentation of grid_sample for "
             "details.")
        return False
    return align_corners


def _base_coords(size, align_corners, like):
    """Normalised pixel centres along one dim, in [-1, 1]."""
    if size <= 1:
        return creation.zeros(size, dtype=like.dtype, device=like.device)
    line = ranges.linspace(-1, 1, size, dtype=like.dtype, device=like.device)
    return line if align_corners else line * ((size - 1) / size)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, *S, dims) of the affine maps `theta` (N, dims, dims+1) over `size`."""
    align_corners = _align_corners_default(align_corners)
    size = [int(s) for s in size]
    dims = len(size) - 2
    if dims not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (dims, dims + 1):
        expected = "Nx2x3" if dims == 2 else "Nx3x4"
        raise ValueError(f"Expected a batch of {dims}D affine matrices of shape {expected} for "
                         f"size {tuple(size)}. Got {list(theta.shape)}.")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta of batch size {size[0]}, got "
                           f"{theta.shape[0]}")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
             "when align_corners=True. This is not an intended use case of affine_grid. "
             "See the documentation of affine_grid for details.")
    axes = [_base_coords(s, align_corners, theta) for s in reversed(spatial)]
    columns = []
    for d, line in enumerate(axes):
        view = [1] * dims
        view[dims - 1 - d] = spatial[dims - 1 - d]
        columns.append(line.reshape(*view).expand(*spatial))
    columns.append(creation.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = shape_copies.stack(columns, -1).reshape(1, math.prod(spatial), dims + 1)
    grid = linalg.matmul(base, theta.transpose(1, 2))
    return name_node(grid.reshape(size[0], *spatial, dims), "AffineGridGeneratorBackward0")


def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel coordinates (corner pixel centres at +-1, or the image edges at +-1)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """`coord` folded back into [low, high] by repeated reflection at both ends."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = elementwise.fmod(coord, span)
    flips = elementwise.floor(coord / span)
    even = elementwise.remainder(flips, 2) == 0
    return elementwise.where(even, extra + low, span - extra + low)


def _pad_coord(coord, size, padding_mode, align_corners):
    """The coordinate after the padding rule: border clamps, reflection folds then clamps."""
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        coord = coord.clamp(0, size - 1)
    return coord


def _read(flat, spatial, indices):
    """Input values (N, C, *out) at integer positions `indices` (one (N, *out) tensor per dim,
    last spatial dim first); positions outside the input read zero."""
    n, c = flat.shape[:2]
    valid, position = None, None
    for d, index in enumerate(indices):
        size = spatial[len(spatial) - 1 - d]
        inside = (index >= 0) & (index < size)
        valid = inside if valid is None else valid & inside
        stride = math.prod(spatial[len(spatial) - d:])
        term = index.clamp(0, size - 1) * stride
        position = term if position is None else position + term
    out_shape = position.shape[1:]
    values = flat.gather(2, position.reshape(n, 1, -1).expand(n, c, position[0].numel()))
    values = values.reshape(n, c, *out_shape)
    return values * valid.unsqueeze(1).to(values.dtype)


def _linear_taps(flat, spatial, coords):
    """Bilinear/trilinear: the 2**dims corners around each point, weighted by distance."""
    floors = [elementwise.floor(c) for c in coords]
    out = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        weight, indices = None, []
        for c, f, bit in zip(coords, floors, corner):
            w = c - f if bit else f + 1 - c
            weight = w if weight is None else weight * w
            indices.append(f.to(dtypes.int64) + bit)
        term = _read(flat, spatial, indices) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _cubic_weights(t):
    """PyTorch's bicubic coefficients (A = -0.75) for the four taps around fraction t."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_taps(flat, spatial, coords, padding_mode, align_corners):
    """Bicubic: 4x4 taps around each point, each tap position padded by itself."""
    (x, y), (h, w) = coords, spatial
    fx, fy = elementwise.floor(x), elementwise.floor(y)
    wx, wy = _cubic_weights(x - fx), _cubic_weights(y - fy)
    out = None
    for i, j in itertools.product(range(4), range(4)):
        tx = _pad_coord(fx + (i - 1), w, padding_mode, align_corners)
        ty = _pad_coord(fy + (j - 1), h, padding_mode, align_corners)
        indices = [elementwise.trunc(tx).to(dtypes.int64), elementwise.trunc(ty).to(dtypes.int64)]
        term = _read(flat, spatial, indices) * (wx[i] * wy[j]).unsqueeze(1)
        out = term if out is None else out + term
    return out


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    dims = input.ndim - 2
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != dims:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {dims} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if mode == "bicubic" and dims != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"grid_sampler(): not implemented for {input.dtype} input")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, "
                           f"but got input {input.dtype} and grid {grid.dtype}")


class _ZeroGridGradient(Function):
    """Nearest sampling's values, with the grid as an input whose gradient is zero, as
    PyTorch's grid_sampler backward gives it (the grid's .grad is zeros, not None, and an
    optimizer steps it as such)."""

    @staticmethod
    def forward(ctx, values, grid):
        ctx.grid = tuple(grid.shape), grid.dtype, grid.device
        return values

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, device = ctx.grid
        return grad, creation.zeros(shape, dtype=dtype, device=device)


@autocast_policy("grid_sample")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample (N, C, *S) input at the normalised points `grid` (N, *out, dims; x first)."""
    _check_grid_sample(input, grid, mode, padding_mode)
    align_corners = _align_corners_default(align_corners)
    half = input.dtype in HALF_TYPES
    x, g = (input.float(), grid.float()) if half else (input, grid)
    spatial = tuple(x.shape[2:])
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    coords = [_unnormalize(g[..., d], spatial[len(spatial) - 1 - d], align_corners)
              for d in range(len(spatial))]
    if mode == "bicubic":
        out = _cubic_taps(flat, spatial, coords, padding_mode, align_corners)
    else:
        coords = [_pad_coord(c, spatial[len(spatial) - 1 - d], padding_mode, align_corners)
                  for d, c in enumerate(coords)]
        if mode == "nearest":
            out = _read(flat, spatial, [elementwise.round(c).to(dtypes.int64) for c in coords])
            if g.requires_grad:
                out = _ZeroGridGradient.apply(out, g)
        else:
            out = _linear_taps(flat, spatial, coords)
    return name_node(out.to(input.dtype) if half else out,
                     f"GridSampler{len(spatial)}DBackward0")
