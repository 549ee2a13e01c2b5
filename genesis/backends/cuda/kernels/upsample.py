"""Linear, bilinear and trilinear interpolation on the GPU, forward and backward.

Source positions follow PyTorch's area_pixel_compute_source_index: along a dim with `scale`
input pixels per output pixel (the caller computes it, PyTorch's area_pixel_compute_scale),
output o reads src = scale * o (align_corners) or max(scale * (o + 0.5) - 0.5, 0), between
i0 = min(floor(src), size - 1) and i1 = min(i0 + 1, size - 1) with weights 1 - l and
l = src - i0, in float32 (float64 for float64 inputs) as PyTorch computes them; half types load
into float32 and round once.

Forward ("upsample_linear_fwd"): a lane per output element, 2, 4 or 8 taps, combined dim by
dim as PyTorch's kernels do (h0 * (w0 * x00 + w1 * x01) + h1 * (...)).

Backward ("upsample_linear_bwd"): a gather, deterministic with no atomics. A lane per input
element visits, along each dim, the outputs that can read it: those o with i0(o) in {i - 1, i},
a run of at most ceil(2 / scale) outputs starting near (i - 1 + off) / scale - off (off 0.5, or
0 with align_corners), or at output 0 where that is negative; the run is widened by one on each
side against rounding and each candidate is checked with the forward's own i0, i1 and weights.
Its gradient is the sum of the candidates' output gradients times their weights, in a fixed
order, in float32 for half types.
TAPS_* (constexpr) is that run's length, ceil(2 / scale) + 2: 6 for a 2x upsampling.

1-D and 2-D arrays run as 3-D ones with size-1 leading dims whose interpolation DIMS skips.
Inputs are read through strides; results are dense, channels-last when the input's (the
output gradient's) channels are its unit-stride dim, else contiguous.

Tiles: 512 elements a program, 4 warps, as pooling (kernels/pool.py).
"""

import math

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from . import _spatial
from ._spatial import position
from ._strided_indexing import cdiv, next_pow2, program_range

BLOCK = 512
_WARPS = 4


@triton.jit
def _source(o, scale, size, ALIGN: tl.constexpr, CT: tl.constexpr):
    """(i0, i1, l) of output positions `o` along a dim: input positions and the weight of i1."""
    if ALIGN:
        src = scale * o.to(CT)
    else:
        src = tl.maximum(scale * (o.to(CT) + 0.5) - 0.5, 0.0)
    i0 = tl.minimum(src.to(o.dtype), size - 1)
    lam = tl.minimum(tl.maximum(src - i0.to(CT), 0.0), 1.0)
    return i0, tl.minimum(i0 + 1, size - 1), lam


@triton.jit
def _row(ptr, w0, w1, x_sw, lw, mask, CT: tl.constexpr):
    """(1 - lw) * x[w0] + lw * x[w1] along the last dim from `ptr`."""
    a = tl.load(ptr + w0 * x_sw, mask=mask, other=0.0).to(CT)
    b = tl.load(ptr + w1 * x_sw, mask=mask, other=0.0).to(CT)
    return (1.0 - lw) * a + lw * b


@triton.jit
def _plane(ptr, h0, h1, x_sh, lh, w0, w1, x_sw, lw, mask, DIMS: tl.constexpr, CT: tl.constexpr):
    """The (bi)linear value over the last one or two dims from `ptr`."""
    if DIMS == 1:
        v = _row(ptr, w0, w1, x_sw, lw, mask, CT)
    else:
        v = ((1.0 - lh) * _row(ptr + h0 * x_sh, w0, w1, x_sw, lw, mask, CT)
             + lh * _row(ptr + h1 * x_sh, w0, w1, x_sw, lw, mask, CT))
    return v


@triton.jit
def _linear_kernel(
        # pointers: input (N, C, D, H, W), the dense result (N, C, OD, OH, OW)
        x_ptr, out_ptr,
        # sizes: output elements, channels, the input's and the output's spatial sizes
        n_out, channels, in_d, in_h, in_w, out_d, out_h, out_w,
        # input pixels per output pixel along each dim
        scale_d, scale_h, scale_w,
        # strides of the input, in elements
        x_sn, x_sc, x_sd, x_sh, x_sw,
        # meta-parameters: interpolated dims (the last 1, 2 or 3), align_corners, the result's
        # layout, compute type
        DIMS: tl.constexpr, ALIGN: tl.constexpr, CHANNELS_LAST: tl.constexpr,
        CT: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Output elements pid*BLOCK.. of the interpolation."""
    o = program_range(BLOCK, INDEX64)
    mask = o < n_out
    n, c, od, oh, ow = position(o, channels, out_d, out_h, out_w, CHANNELS_LAST)
    base = x_ptr + n * x_sn + c * x_sc
    w0, w1, lw = _source(ow, scale_w, in_w, ALIGN, CT)
    h0, h1, lh = _source(oh, scale_h, in_h, ALIGN, CT)
    if DIMS == 3:
        d0, d1, ld = _source(od, scale_d, in_d, ALIGN, CT)
        v = ((1.0 - ld) * _plane(base + d0 * x_sd, h0, h1, x_sh, lh, w0, w1, x_sw, lw, mask,
                                 DIMS, CT)
             + ld * _plane(base + d1 * x_sd, h0, h1, x_sh, lh, w0, w1, x_sw, lw, mask, DIMS,
                           CT))
    else:
        v = _plane(base + od * x_sd, h0, h1, x_sh, lh, w0, w1, x_sw, lw, mask, DIMS, CT)
    tl.store(out_ptr + o, v.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _reader(first, t, i, scale, size, out_size, ALIGN: tl.constexpr, CT: tl.constexpr):
    """Candidate t of the outputs reading input position `i` along a dim: (the output,
    whether it reads i, the weight it gives i)."""
    o = first + t
    i0, i1, lam = _source(o, scale, size, ALIGN, CT)
    reads = (o >= 0) & (o < out_size) & ((i0 == i) | (i1 == i))
    weight = tl.where(i0 == i, 1.0 - lam, 0.0) + tl.where(i1 == i, lam, 0.0)
    return o, reads, weight


@triton.jit
def _first_reader(i, inv_scale, ALIGN: tl.constexpr, CT: tl.constexpr):
    """The first candidate output reading input position `i`: one before the smallest o with
    src(o) >= i - 1, and never before -1 (for i = 0 that o is negative: a run starting there
    would spend its candidates on outputs that do not exist and miss real ones)."""
    if ALIGN:
        a = (i - 1).to(CT) * inv_scale
    else:
        a = ((i - 1).to(CT) + 0.5) * inv_scale - 0.5
    return tl.maximum(tl.ceil(a).to(i.dtype) - 1, -1)


@triton.jit
def _tile_rows(rows, channels, in_d, in_h, in_w, CHANNELS_LAST: tl.constexpr):
    """(n, c, d, h, w) of a backward tile's rows: (n, d, h, w) positions with CHANNELS_LAST
    (c is 0: the columns are the channels), else (n, c, d, h) image rows (w is 0: the columns
    are the width)."""
    if CHANNELS_LAST:
        n, c, d, h, w = position(rows * channels, channels, in_d, in_h, in_w, True)
    else:
        n, c, d, h, w = position(rows * in_w, channels, in_d, in_h, in_w, False)
    return n, c, d, h, w


@triton.jit
def _linear_backward_kernel(
        # pointers: output gradient (N, C, OD, OH, OW), the dense input gradient
        grad_ptr, out_ptr,
        # sizes: the tile's rows and columns (see _tile_rows), channels, the input's and the
        # output's spatial sizes
        n_rows, n_cols, channels, in_d, in_h, in_w, out_d, out_h, out_w,
        # input pixels per output pixel along each dim and their reciprocals (0 for scale 0)
        scale_d, scale_h, scale_w, inv_d, inv_h, inv_w,
        # strides of the output gradient, in elements
        g_sn, g_sc, g_sd, g_sh, g_sw,
        # meta-parameters: interpolated dims, align_corners, candidates per dim, the result's
        # layout, compute type, the tile
        DIMS: tl.constexpr, ALIGN: tl.constexpr, TAPS_D: tl.constexpr, TAPS_H: tl.constexpr,
        TAPS_W: tl.constexpr, CHANNELS_LAST: tl.constexpr, CT: tl.constexpr,
        INDEX64: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """A BM x BN tile of the input gradient: the weighted sum of the output gradients of the
    outputs that read each element. The candidates along d and h (and w, channels-last) are
    worked out once per row, along w (NCHW) once per column."""
    rows = program_range(BM, INDEX64)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    n, c, i_d, i_h, i_w = _tile_rows(rows, channels, in_d, in_h, in_w, CHANNELS_LAST)
    if CHANNELS_LAST:
        row_base = n * g_sn
        col_off = cols * g_sc
    else:
        row_base = n * g_sn + c * g_sc
        i_w = cols
    first_w = _first_reader(i_w, inv_w, ALIGN, CT)
    first_h = _first_reader(i_h, inv_h, ALIGN, CT)
    first_d = _first_reader(i_d, inv_d, ALIGN, CT)
    acc = tl.zeros((BM, BN), CT)
    for td in range(TAPS_D):
        if DIMS == 3:
            od, ok_d, wd = _reader(first_d, td, i_d, scale_d, in_d, out_d, ALIGN, CT)
        else:
            od, ok_d, wd = i_d, row_mask, tl.full((BM,), 1.0, CT)
        ok_d = ok_d & row_mask
        for th in range(TAPS_H):
            if DIMS >= 2:
                oh, ok_h, wh = _reader(first_h, th, i_h, scale_h, in_h, out_h, ALIGN, CT)
                wh = wd * wh
            else:
                oh, ok_h, wh = i_h, ok_d, wd
            ok_h = ok_h & ok_d
            base = row_base + od * g_sd + oh * g_sh
            for tw in range(TAPS_W):
                ow, ok_w, ww = _reader(first_w, tw, i_w, scale_w, in_w, out_w, ALIGN, CT)
                if CHANNELS_LAST:
                    ok = (ok_h & ok_w)[:, None] & col_mask[None, :]
                    offsets = (base + ow * g_sw)[:, None] + col_off[None, :]
                    weight = (wh * ww)[:, None]
                else:
                    ok = ok_h[:, None] & (ok_w & col_mask)[None, :]
                    offsets = base[:, None] + (ow * g_sw)[None, :]
                    weight = wh[:, None] * ww[None, :]
                g = tl.load(grad_ptr + offsets, mask=ok, other=0.0)
                acc += weight * g.to(CT)
    out = out_ptr + rows[:, None] * n_cols + cols[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=row_mask[:, None] & col_mask[None, :])


def _compute_type(dtype):
    return tl.float64 if dtype == np.float64 else tl.float32


def _scalar_types(dtype, names):
    """The launch types of the scale arguments: float64 for float64 data, else float32."""
    return {name: "fp64" if dtype == np.float64 else "fp32" for name in names}


def taps(scale, out_size):
    """Candidate outputs per input position along a dim (see the module docstring)."""
    if scale == 0:
        return min(3, out_size + 2)
    return min(math.ceil(2.0 / scale) + 2, out_size + 2)


def _forward_plan(x, out, dims, align, last, target=None):
    ity = _spatial.index_width(x, out)
    meta = dict(DIMS=dims, ALIGN=align, CHANNELS_LAST=last, CT=_compute_type(out.dtype),
                INDEX64=ity == "i64", BLOCK=BLOCK)
    return Launch(_linear_kernel, (cdiv(out.size, BLOCK),), meta, _WARPS, int_type=ity,
                  types=_scalar_types(out.dtype, ("scale_d", "scale_h", "scale_w")),
                  device=out.device, target=target)


def _backward_tile(out, last):
    """(rows, columns, BM, BN) of the backward's tiles over the dense input gradient `out`:
    positions x channels (channels-last), or image rows x width; the columns up to 64 wide,
    rows to make 512-element tiles."""
    n, c, d, h, w = out.shape
    rows, cols = (n * d * h * w, c) if last else (n * c * d * h, w)
    bn = min(64, next_pow2(cols))
    return rows, cols, max(1, BLOCK // bn), bn


def _backward_plan(grad, out, dims, align, last, scales, target=None):
    ity = _spatial.index_width(grad, out)
    counts = [taps(s, n) for s, n in zip(scales, grad.shape[2:])]
    counts = [1] * (3 - dims) + counts[3 - dims:]
    rows, cols, bm, bn = _backward_tile(out, last)
    meta = dict(DIMS=dims, ALIGN=align, TAPS_D=counts[0], TAPS_H=counts[1], TAPS_W=counts[2],
                CHANNELS_LAST=last, CT=_compute_type(out.dtype), INDEX64=ity == "i64", BM=bm,
                BN=bn)
    names = ("scale_d", "scale_h", "scale_w", "inv_d", "inv_h", "inv_w")
    return Launch(_linear_backward_kernel, (cdiv(rows, bm), cdiv(cols, bn)), meta, _WARPS,
                  int_type=ity, types=_scalar_types(out.dtype, names), device=out.device,
                  target=target)


def _forward_launch(launch, stream, x, out, scales):
    """The call of _linear_kernel on 3-D views `x` and `out`."""
    launch(stream,
           # pointers
           x, out,
           # sizes
           out.size, x.shape[1], *x.shape[2:], *out.shape[2:],
           # scales
           *scales,
           # strides
           *x.element_strides())


def _backward_launch(launch, stream, grad, out, scales):
    """The call of _linear_backward_kernel on 3-D views `grad` and `out`."""
    launch(stream,
           # pointers
           grad, out,
           # sizes
           *_backward_tile(out, launch.meta["CHANNELS_LAST"])[:2], out.shape[1], *out.shape[2:],
           *grad.shape[2:],
           # scales and their reciprocals
           *scales, *(1.0 / s if s else 0.0 for s in scales),
           # strides
           *grad.element_strides())


_plans = LaunchCache()


def _key(*arrays):
    return tuple((a.shape, a.strides, a.dtype, a.ptr % 16 == 0) for a in arrays)


def _scales(scales):
    """The 1 to 3 scales as 3 floats (1.0 for the size-1 leading dims)."""
    return tuple(float(s) for s in _spatial.padded(scales, 1.0))


@register("upsample_linear_fwd", "cuda")
def upsample_linear_fwd(x, out_size, scales, align_corners):
    """Linear interpolation of (N, C, *S) `x` (1 to 3 spatial dims) to (N, C, *out_size);
    `scales`: input pixels per output pixel along each dim (PyTorch's
    area_pixel_compute_scale, rounded to the compute type)."""
    device = x.device
    out, stream, last = _spatial.result((*x.shape[:2], *out_size), x.dtype, x)
    if out.size:
        dims, scales = len(out_size), _scales(scales)
        x3, out3 = _spatial.as_3d(x), _spatial.as_3d(out)
        launch = _plans.get_or_build(
            ("fwd", _key(x3, out3), dims, bool(align_corners), device),
            lambda: _forward_plan(x3, out3, dims, bool(align_corners), last))
        _forward_launch(launch, stream, x3, out3, scales)
    return out


@register("upsample_linear_bwd", "cuda")
def upsample_linear_bwd(grad, in_size, scales, align_corners):
    """The input gradient (N, C, *in_size) of linear interpolation from the output gradient,
    laid out as `grad` (channels-last or contiguous)."""
    device = grad.device
    out, stream, last = _spatial.result((*grad.shape[:2], *in_size), grad.dtype, grad)
    if out.size:
        dims, scales = len(in_size), _scales(scales)
        grad3, out3 = _spatial.as_3d(grad), _spatial.as_3d(out)
        launch = _plans.get_or_build(
            ("bwd", _key(grad3, out3), dims, bool(align_corners), scales, device),
            lambda: _backward_plan(grad3, out3, dims, bool(align_corners), last, scales))
        _backward_launch(launch, stream, grad3, out3, scales)
    return out
