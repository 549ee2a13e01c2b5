"""2-D convolutions on the GPU as implicit GEMMs: no im2col buffer, the input's windows are
gathered tile by tile straight from the input (1-D convolutions run as 2-D ones of height 1).

Forward ("conv2d_igemm"): out[n, k, oh, ow] = sum over (r, s, c) of
x[n, c, oh*stride - pad + r*dil, ow*stride - pad + s*dil] * w[k, c, r, s], a GEMM with
M = N*OH*OW rows, K_out columns and C*R*S as its inner dimension. A program computes a BM x BN
tile of (rows, out channels) and walks the inner dimension tap by tap (r, s) and BK channels at
a time, in one flat loop so that Triton pipelines the loads across taps; window positions that
fall into the padding are masked loads (zeros), never materialized.

Transposed ("conv_transpose2d_igemm"): the same kernel with TRANSPOSED, computing
out[n, c, ih, iw] = sum over (r, s, k) of x[n, k, oh, ow] * w[k, c, r, s] where
oh*stride - pad + r*dil = ih: ConvTranspose2d's forward and the input gradient of Conv2d. With a
stride, the output positions split into stride_h x stride_w phases (ih mod stride); every
position of a phase meets the same taps (those with (ih + pad - r*dil) divisible by the stride),
so a program works on one phase (grid axis 1) and loops over its valid taps only: no product
with structural zeros.

Weight gradient ("conv2d_igemm_weight_grad"): dw[k, c, r, s] = sum over (n, oh, ow) of
dy[n, k, oh, ow] * x[n, c, oh*stride - pad + r*dil, ...]: a GEMM per tap (grid axis 1) of
K_out x C with N*OH*OW as its inner dimension. That dimension is long and the result small, so
it is split over SPLITS programs (grid axis 2) that write float32 partial sums, added in a
fixed order by `_split_sum_kernel` and rounded once: deterministic, no atomics. The bias
gradient is a column sum (a reduction, at the caller).

Groups: grid axis 1 (forward, transposed) or 2 (weight gradient) also runs over groups.
Layouts: the kernels read their operands through strides, and the inputs they gather from
(x forward, the output gradient transposed, both for the weight gradient) are read along their
channels: channels-last inputs are read where they lie, others are first copied to
channels-last (one pass over the input), so that a tile's loads are 16-byte vectors that
Triton pipelines into shared memory (gathered along the spatial rows they would be scalar
loads). The output is channels-last when the input is, else contiguous NCHW: then a program's
rows are positions of one image (PER_IMAGE), contiguous in the output, so its stores are
vectors too (a strided transposed convolution, whose rows are phases, writes channels-last and
copies). The weight is repacked as (groups, R, S, C_in/g, C_out/g), out channels contiguous.
A 1x1 convolution of an NCHW input (stride 1, no padding, one group) needs no gather: its
forward and input gradient run as one batched matmul over the NCHW views (`_pointwise`),
with no copy to channels-last (ResNet's 56^2 1x1 layers, bf16 on an H200: 0.028-0.033 ms
against 0.054-0.060 with the copy).

Numerics: bfloat16/float16 operands go through tl.dot on tensor cores with a float32
accumulator, rounded once to the output type (bias added in float32 before). float32 runs TF32
tensor-core products when genesis.backends.cudnn.allow_tf32 is set (the default), else IEEE
float32, as PyTorch's cuDNN convolutions follow that flag, not the matmul one; it is read at
each call and is part of the plan keys, so a change takes effect at once.

Few channels (the RGB stem): the inner tile is at least 16 wide, so with 3 channels it would
idle 13 of 16 lanes; an undilated single-group forward then walks whole kernel rows, the (s, c)
pairs of which lie contiguous in a channels-last input (ROW_RUNS). The weight gradient then
takes the whole kernel's (r, s, c) as its columns (147 for the 7x7 stem, two 128-wide tiles),
reading each kernel row as such a run: one GEMM instead of 49 per-tap ones, each of which
reads the whole output gradient (on an H200, batch 32: 0.60 ms against 1.73 per tap; cuDNN's
0.16, as the 2-byte gathers of unaligned 21-element runs cost the rest). On Hopper that weight
gradient runs instead as the TMA kernel's over an unfolded copy of the input
(kernels/conv_few_channels.py).

Block sizes (`_tiles`): 128 x 128 x 64 (half types; BK 32 for TF32, 16 for IEEE float32) with
8 warps and 3 stages keeps (128 + 128) * 64 * 2 bytes * 3 = 96 KB of operands in flight per SM
(228 KB on Hopper) and reuses each loaded element 128 times; ptxas fits it in about 120
registers a thread, no spills. Out-channel tiles shrink to the channel count (64 for ResNet's
narrow layers, 4 warps then), BK to the channels per group (16 at least, as tl.dot needs), and
BM to 64 (then BN to 64) when bigger tiles would leave SMs idle. The rule depends on the shape
only, so a CUDA graph capture never tunes; `benchmarks/conv.py --tiles` times the others.
"""

import math

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ... import cudnn
from ..array_ops import as_strided, contiguous
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from . import conv_few_channels, conv_hopper
from .copy import strided_copy
from .matmul import matmul_arrays
from ._strided_indexing import cdiv, next_pow2, placeholder

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
# Programs that fill an H100/H200 (132 SMs) about twice: below it, tiles shrink (forward) or the
# weight gradient's inner dimension splits further.
_TARGET_PROGRAMS = 264
# The weight gradient's split length never drops under this many (n, oh, ow) positions.
_MIN_SPLIT = 512
# Under this many channels per group (tl.dot's least inner tile), the forward's inner loop runs
# over whole kernel rows (ROW_RUNS): (s, c) pairs, the 7x7 stem's 21 in one 32-wide tile.
_MIN_RUN_CHANNELS = 16


@triton.jit
def _load_tile(ptr, rows, cols, row_mask, col_mask):
    """The (rows x cols) tile at ptr + rows[:, None] + cols[None, :], zero where masked."""
    return tl.load(ptr + rows[:, None] + cols[None, :],
                   mask=row_mask[:, None] & col_mask[None, :], other=0.0)


@triton.jit
def _first_tap(base, dil, stride, size):
    """The smallest tap r < stride with (base - r*dil) divisible by `stride` (`size` if none):
    the first tap that reaches an output phase of a transposed convolution."""
    first = size
    for t in range(stride):
        r = stride - 1 - t
        first = tl.where((base - r * dil) % stride == 0, r, first)
    return tl.minimum(first, size)


@triton.jit
def _conv_kernel(
        # pointers: input (N, C_in, H, W), packed weight (G, R, S, C_in/G, C_out/G), bias
        # (C_out) or None, output (N, C_out, OH, OW)
        x_ptr, w_ptr, bias_ptr, out_ptr,
        # sizes: images, the output positions of a phase (row_h x row_w per image), the input's
        # and the output's height and width, channels per group in and out, the kernel's size
        n_images, row_h, row_w, in_h, in_w, out_h, out_w, c_in, c_out, kernel_h, kernel_w,
        # geometry; taps of a phase step by tap_step (stride / gcd(stride, dil), TRANSPOSED)
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, tap_step_h, tap_step_w,
        # strides, in elements
        x_sn, x_sc, x_sh, x_sw, w_sg, w_sr, w_ss, w_sci, w_sco,
        out_sn, out_sc, out_sh, out_sw,
        # meta-parameters
        TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, PER_IMAGE: tl.constexpr,
        ROW_RUNS: tl.constexpr, PRECISION: tl.constexpr, INDEX64: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One BM x BN tile of (output positions, out channels) of one group (and phase). Rows
    run over all images (channels-last output: stores along the channels), or with PER_IMAGE
    over one image's positions, which are then the NCHW output's contiguous offsets. With
    ROW_RUNS (few channels), the inner loop runs over a kernel row's (s, c) pairs at once: one
    contiguous run of the channels-last input (undilated, one group)."""
    tiles_n = tl.cdiv(c_out, BN)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    if TRANSPOSED:
        phases = stride_h * stride_w
        group = tl.program_id(1) // phases
        phase_h = (tl.program_id(1) % phases) // stride_w
        phase_w = tl.program_id(1) % stride_w
    else:
        group = tl.program_id(1)
    positions = row_h * row_w
    if PER_IMAGE:
        tiles_m = tl.cdiv(positions, BM)
        n = pid_m // tiles_m
        p = (pid_m % tiles_m) * BM + tl.arange(0, BM)
        row_mask = p < positions
        if INDEX64:
            n = n.to(tl.int64)
    else:
        rm = pid_m * BM + tl.arange(0, BM)
        if INDEX64:
            rm = rm.to(tl.int64)
        n = rm // positions
        p = rm % positions
        row_mask = rm < n_images * positions
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    i = p // row_w
    j = p % row_w
    # where each row is stored, and the first source position of its window
    if TRANSPOSED:
        oh = phase_h + i * stride_h
        ow = phase_w + j * stride_w
        src_h, src_w = i, j
        first_h = _first_tap(phase_h + pad_h, dil_h, stride_h, kernel_h)
        first_w = _first_tap(phase_w + pad_w, dil_w, stride_w, kernel_w)
    else:
        oh, ow = i, j
        src_h = i * stride_h - pad_h
        src_w = j * stride_w - pad_w
        first_h, first_w = 0, 0
        tap_step_h, tap_step_w = 1, 1
    row_mask = row_mask & (oh < out_h) & (ow < out_w)
    if ROW_RUNS:
        taps_w = 1
        k_run = kernel_w * c_in
    else:
        taps_w = tl.cdiv(kernel_w - first_w, tap_step_w)
        k_run = c_in
    taps = tl.cdiv(kernel_h - first_h, tap_step_h) * taps_w
    c_blocks = tl.cdiv(k_run, BK)
    x_group = x_ptr + group * c_in * x_sc
    x_image = n * x_sn
    w_group = w_ptr + group * w_sg
    n_mask = rn < c_out
    acc = tl.zeros((BM, BN), tl.float32)
    for it in range(taps * c_blocks):
        tap = it // c_blocks
        c = (it % c_blocks) * BK + rk
        r = first_h + (tap // taps_w) * tap_step_h
        s = first_w + (tap % taps_w) * tap_step_w
        if TRANSPOSED:
            h = src_h + (phase_h + pad_h - r * dil_h) // stride_h
            w = src_w + (phase_w + pad_w - s * dil_w) // stride_w
        else:
            h = src_h + r * dil_h
            w = src_w + s * dil_w
        c_mask = c < k_run
        if ROW_RUNS:
            w = w[:, None] + (c // c_in)[None, :]
            run = x_image + h * x_sh + src_w * x_sw
            in_bounds = (row_mask & (h >= 0) & (h < in_h))[:, None] & (w >= 0) & (w < in_w)
            a = tl.load(x_group + run[:, None] + c[None, :] * x_sc,
                        mask=in_bounds & c_mask[None, :], other=0.0)
        else:
            in_bounds = row_mask & (h >= 0) & (h < in_h) & (w >= 0) & (w < in_w)
            a = _load_tile(x_group, x_image + h * x_sh + w * x_sw, c * x_sc, in_bounds, c_mask)
        b = tl.load(w_group + r * w_sr + s * w_ss + c[:, None] * w_sci + rn[None, :] * w_sco,
                    mask=c_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    channel = group * c_out + rn
    if HAS_BIAS:
        acc += tl.load(bias_ptr + channel, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    if PER_IMAGE:
        out_rows = n * out_sn + p * out_sw
    else:
        out_rows = n * out_sn + oh * out_sh + ow * out_sw
    _store_tile(out_ptr, out_rows, channel * out_sc, row_mask, n_mask, acc)


@triton.jit
def _store_tile(ptr, rows, cols, row_mask, col_mask, value):
    """Store the (rows x cols) tile `value` at ptr + rows[:, None] + cols[None, :], rounded
    to the output type."""
    tl.store(ptr + rows[:, None] + cols[None, :], value.to(ptr.dtype.element_ty),
             mask=row_mask[:, None] & col_mask[None, :])


@triton.jit
def _conv_wgrad_kernel(
        # pointers: output gradient (N, C_out, OH, OW), input (N, C_in, H, W), result: the
        # weight gradient (C_out, C_in/G, R, S), or float32 partials (SPLITS, ...) of it
        dy_ptr, x_ptr, out_ptr,
        # sizes: (n, oh, ow) positions and the split's share of them, output and input height
        # and width, channels per group out and in, the kernel's size, splits
        n_red, split_len, out_h, out_w, in_h, in_w, c_out, c_in, kernel_h, kernel_w, splits,
        # geometry
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
        # strides, in elements
        dy_sn, dy_sc, dy_sh, dy_sw, x_sn, x_sc, x_sh, x_sw,
        out_split, out_sk, out_sc, out_sr, out_ss,
        # meta-parameters
        ROW_RUNS: tl.constexpr, PRECISION: tl.constexpr, INDEX64: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One BM x BN tile of (out channels, in channels) of one tap, group and split. With
    ROW_RUNS (few channels) the columns are the whole kernel's (r, s, c), flattened: each
    kernel row's (s, c) pairs are one contiguous run of the channels-last input (undilated
    along the width, one group), and the program's grid axis 1 has one tap."""
    tiles_n = tl.cdiv(kernel_h * kernel_w * c_in if ROW_RUNS else c_in, BN)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    group = tl.program_id(2) // splits
    split = tl.program_id(2) % splits
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_mask = rm < c_out
    if ROW_RUNS:
        run = rn % (kernel_w * c_in)  # s * c_in + c: the offset in the kernel row's run
        r = rn // (kernel_w * c_in)
        s = run // c_in
        c = run % c_in
        n_mask = rn < kernel_h * kernel_w * c_in
        x_cols = r * (dil_h * x_sh) + run
    else:
        r = tl.program_id(1) // kernel_w
        s = tl.program_id(1) % kernel_w
        c = rn
        n_mask = rn < c_in
        x_cols = (group * c_in + rn) * x_sc
    if INDEX64:
        start = split.to(tl.int64) * split_len
    else:
        start = split * split_len
    end = tl.minimum(start + split_len, n_red)
    dy_channels = (group * c_out + rm) * dy_sc
    acc = tl.zeros((BM, BN), tl.float32)
    for q0 in range(start, end, BK):
        q = q0 + rk
        n = q // (out_h * out_w)
        oh = (q // out_w) % out_h
        ow = q % out_w
        q_mask = q < end
        a = _load_tile(dy_ptr, dy_channels, n * dy_sn + oh * dy_sh + ow * dy_sw, m_mask, q_mask)
        # the window's corner, then each column's input position
        h = oh * stride_h - pad_h
        w = ow * stride_w - pad_w
        if ROW_RUNS:
            hh = h[:, None] + (r * dil_h)[None, :]
            ww = w[:, None] + s[None, :]
            in_bounds = ((q_mask[:, None] & n_mask[None, :]) & (hh >= 0) & (hh < in_h)
                         & (ww >= 0) & (ww < in_w))
            b = tl.load(x_ptr + (n * x_sn + h * x_sh + w * x_sw)[:, None] + x_cols[None, :],
                        mask=in_bounds, other=0.0)
        else:
            h = h + r * dil_h
            w = w + s * dil_w
            in_bounds = q_mask & (h >= 0) & (h < in_h) & (w >= 0) & (w < in_w)
            b = _load_tile(x_ptr, n * x_sn + h * x_sh + w * x_sw, x_cols, in_bounds, n_mask)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    _store_tile(out_ptr + split * out_split, (group * c_out + rm) * out_sk,
                c * out_sc + r * out_sr + s * out_ss, m_mask, n_mask, acc)


@triton.jit
def _split_sum_kernel(
        # pointers: float32 partials (splits, n), the result (n)
        part_ptr, out_ptr,
        # sizes
        n, splits,
        # meta-parameters
        BLOCK_S: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = sum over splits of part[split, i] (`conv_hopper.sum_splits`), rounded once."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    acc = conv_hopper.sum_splits(part_ptr, i, mask, splits, n, BLOCK_S, BLOCK)
    tl.store(out_ptr + i, acc.to(out_ptr.dtype.element_ty), mask=mask)


class Conv:
    """A 2-D convolution's geometry: (h, w) stride, padding and dilation, and groups."""

    __slots__ = ("stride", "padding", "dilation", "groups")

    def __init__(self, stride, padding, dilation, groups):
        self.stride, self.padding = tuple(stride), tuple(padding)
        self.dilation, self.groups = tuple(dilation), groups

    def key(self):
        return self.stride, self.padding, self.dilation, self.groups


def _precision(dtype):
    """tl.dot's precision: tensor cores for half types, for float32 only with cudnn.allow_tf32."""
    return "tf32" if dtype in _HALF or cudnn.allow_tf32 else "ieee"


def _max_bk(dtype):
    """The inner tile: 64 half-type elements (128 bytes), 32 for TF32, 16 for IEEE float32."""
    return 64 if dtype in _HALF else 32 if cudnn.allow_tf32 else 16


def _tiles(rows, c_out, c_in, dtype, programs):
    """(BM, BN, BK, num_warps, num_stages) of the forward and transposed kernels for `rows`
    output positions, `c_out` and `c_in` channels per group and `programs` groups x phases
    (see the module docstring)."""
    bn = min(128, max(16, next_pow2(c_out)))
    bk = min(_max_bk(dtype), max(16, next_pow2(c_in)))
    bm = 128
    if cdiv(rows, bm) * cdiv(c_out, bn) * programs < _TARGET_PROGRAMS:
        bm = 64
        if bn > 64 and cdiv(rows, bm) * cdiv(c_out, bn) * programs < _TARGET_PROGRAMS:
            bn = 64
    warps = 8 if bm * bn >= 128 * 128 else 4
    return bm, bn, bk, warps, 3


def _wgrad_tiles(c_out, c_in, dtype):
    """(BM, BN, BK, num_warps, num_stages) of the weight gradient: channel tiles up to 128 x
    128, the inner dimension as the forward's."""
    bm = min(128, max(16, next_pow2(c_out)))
    bn = min(128, max(16, next_pow2(c_in)))
    warps = 8 if bm * bn >= 128 * 128 else 4
    return bm, bn, _max_bk(dtype), warps, 3


def _splits(programs, n_red, bk):
    """(splits, positions per split) of the weight gradient's inner dimension: as many splits
    as keep all programs within _TARGET_PROGRAMS, the ones that run at once (two 128 x 128
    tiles per SM), none shorter than _MIN_SPLIT positions. Rounding up instead would start a
    second wave for the few programs past it, all as long as the first: U-Net's 3x3 weight
    gradient has 9 taps, and 30 splits give 270 programs where 29 give 261."""
    splits = max(1, min(_TARGET_PROGRAMS // programs, n_red // _MIN_SPLIT))
    split_len = cdiv(cdiv(n_red, splits), bk) * bk
    return cdiv(n_red, split_len), split_len


def _index_type(*arrays):
    """i64 when an offset into one of `arrays` may pass 2**31 (with a tile's slack), else i32."""
    for a in arrays:
        if a is not None and sum((n - 1) * abs(s) for n, s in
                                 zip(a.shape, a.element_strides())) >= 2 ** 31 - 2 ** 20:
            return "i64"
    return "i32"


def _stride_args(arr):
    """`arr`'s element strides as launch arguments, 0 and 1 compiled in (a unit stride gives
    vector loads)."""
    return tuple(Const(s) if s in (0, 1) else s for s in arr.element_strides())


def _channels_fast(arr):
    """True when `arr`'s channels (dim 1) are its unit-stride dim: a channels-last layout."""
    return arr.shape[1] > 1 and arr.element_strides()[1] == 1


def _conv_plan(x, w, bias, out, conv, transposed, target=None):
    """(launch, the sizes, geometry and strides _conv_launch passes) for input `x`, packed
    weight `w` (G, R, S, C_in/G, C_out/G) and output `out` laid out as these are."""
    n, _, in_h, in_w = x.shape
    groups, kernel_h, kernel_w, c_in, c_out = w.shape
    out_h, out_w = out.shape[2:]
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = conv.stride, conv.padding, \
        conv.dilation
    phases = stride_h * stride_w if transposed else 1
    row_h, row_w = (cdiv(out_h, stride_h), cdiv(out_w, stride_w)) if transposed else (out_h, out_w)
    n_rows = n * row_h * row_w
    row_runs = (not transposed and groups == 1 and dil_w == 1 and 1 < kernel_w
                and c_in < _MIN_RUN_CHANNELS and x.element_strides()[1] == 1
                and x.element_strides()[3] == c_in)
    bm, bn, bk, warps, stages = _tiles(n_rows, c_out, kernel_w * c_in if row_runs else c_in,
                                       x.dtype, groups * phases)
    per_image = phases == 1 and not _channels_fast(out)
    tiles_m = n * cdiv(row_h * row_w, bm) if per_image else cdiv(n_rows, bm)
    ity = _index_type(x, out)
    meta = dict(TRANSPOSED=transposed, HAS_BIAS=bias is not None, PER_IMAGE=per_image,
                ROW_RUNS=row_runs, PRECISION=_precision(x.dtype), INDEX64=ity == "i64", BM=bm,
                BN=bn, BK=bk)
    grid = (tiles_m * cdiv(c_out, bn), groups * phases)
    launch = Launch(_conv_kernel, grid, meta, warps, stages, int_type=ity, device=out.device,
                    target=target)
    tap_steps = (stride_h // math.gcd(stride_h, dil_h), stride_w // math.gcd(stride_w, dil_w))
    sizes = (n, row_h, row_w, in_h, in_w, out_h, out_w, c_in, c_out, kernel_h, kernel_w)
    geometry = (stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, *tap_steps)
    strides = (_stride_args(x), _stride_args(w), _stride_args(out))
    return launch, (sizes, geometry, strides)


def _conv_launch(launch, dims, stream, x, w, bias, out):
    """The call of _conv_kernel; `dims` as _conv_plan makes them."""
    sizes, geometry, (x_strides, w_strides, out_strides) = dims
    launch(stream,
           # pointers
           x, w, bias, out,
           # sizes
           *sizes,
           # geometry
           *geometry,
           # strides
           *x_strides, *w_strides, *out_strides)


def _wgrad_columns(x, conv, weight_shape):
    """(ROW_RUNS, the columns of the weight gradient's GEMM, its taps on grid axis 1). The
    columns are the whole kernel's (r, s, c) where channels are few (the RGB stem's 3 would
    idle 13 of a tile's 16 columns, and each of its 49 taps would read the whole output
    gradient again), with one group, no dilation along the width, and a dense channels-last
    input whose kernel rows are contiguous runs; else a tap's channels."""
    c_in, taps = weight_shape[1], weight_shape[2] * weight_shape[3]
    _, x_sc, _, x_sw = x.element_strides()
    row_runs = (c_in < _MIN_RUN_CHANNELS and conv.groups == 1 and conv.dilation[1] == 1
                and taps > 1 and (c_in == 1 or x_sc == 1) and x_sw == c_in)
    return (True, taps * c_in, 1) if row_runs else (False, c_in, taps)


def _wgrad_splits(dy, x, conv, weight_shape):
    """(splits, positions per split) of the implicit weight gradient (`_splits`)."""
    groups = conv.groups
    _, cols, taps = _wgrad_columns(x, conv, weight_shape)
    bm, bn, bk, _, _ = _wgrad_tiles(weight_shape[0] // groups, cols, x.dtype)
    programs = cdiv(weight_shape[0] // groups, bm) * cdiv(cols, bn) * taps * groups
    return _splits(programs, dy.shape[0] * dy.shape[2] * dy.shape[3], bk)


def _wgrad_plan(dy, x, out, conv, kernel_size, splits, split_len, target=None):
    """(launch, the sizes, geometry and strides _wgrad_launch passes): the weight gradient of
    output gradient `dy` and input `x` into `out` ((splits,) + the weight's shape)."""
    n, c_total, out_h, out_w = dy.shape
    in_h, in_w = x.shape[2:]
    kernel_h, kernel_w = kernel_size
    groups = conv.groups
    c_out, c_in = c_total // groups, x.shape[1] // groups
    row_runs, cols, taps = _wgrad_columns(x, conv, out.shape[1:])
    bm, bn, bk, warps, stages = _wgrad_tiles(c_out, cols, x.dtype)
    ity = _index_type(dy, x, out)
    meta = dict(ROW_RUNS=row_runs, PRECISION=_precision(x.dtype), INDEX64=ity == "i64", BM=bm,
                BN=bn, BK=bk)
    grid = (cdiv(c_out, bm) * cdiv(cols, bn), taps, groups * splits)
    launch = Launch(_conv_wgrad_kernel, grid, meta, warps, stages, int_type=ity,
                    device=out.device, target=target)
    sizes = (n * out_h * out_w, split_len, out_h, out_w, in_h, in_w, c_out, c_in, kernel_h,
             kernel_w, splits)
    geometry = conv.stride + conv.padding + conv.dilation
    return launch, (sizes, geometry, (_stride_args(dy), _stride_args(x), _stride_args(out)))


def _wgrad_launch(launch, dims, stream, dy, x, out):
    """The call of _conv_wgrad_kernel; `dims` as _wgrad_plan makes them."""
    sizes, geometry, (dy_strides, x_strides, out_strides) = dims
    launch(stream,
           # pointers
           dy, x, out,
           # sizes
           *sizes,
           # geometry
           *geometry,
           # strides
           *dy_strides, *x_strides, *out_strides)


def _sum_plan(n, splits, device, target=None):
    """The Launch of _split_sum_kernel: blocks of about 4096 partials."""
    block_s = conv_hopper.split_block(splits)
    block = 4096 // block_s
    return Launch(_split_sum_kernel, (cdiv(n, block),), dict(BLOCK_S=block_s, BLOCK=block), 4,
                  device=device, target=target)


def _sum_launch(launch, stream, part, out, n, splits):
    """The call of _split_sum_kernel."""
    launch(stream,
           # pointers
           part, out,
           # sizes
           n, splits)


def _packed_weight(weight, groups, transposed):
    """`weight` as (G, R, S, C_in/G, C_out/G), out channels contiguous (a copy unless it is
    laid out so already). A convolution's weight is (C_out, C_in/G, R, S), a transposed
    one's (C_in, C_out/G, R, S)."""
    s0, s1, s2, s3 = weight.element_strides()
    rows = weight.shape[0] // groups
    kernel = weight.shape[2:]
    if transposed:
        shape, strides = (groups, *kernel, rows, weight.shape[1]), (rows * s0, s2, s3, s0, s1)
    else:
        shape, strides = (groups, *kernel, weight.shape[1], rows), (rows * s0, s2, s3, s1, s0)
    view = as_strided(weight, shape, strides, 0)
    return view if view.is_contiguous() else contiguous(view)


def _channels_last(arr, stream):
    """`arr` itself when its channels are contiguous (or single), else a channels-last copy:
    the kernels read tiles along the channels, 16 bytes at a time."""
    if arr.shape[1] == 1 or _channels_fast(arr):
        return arr
    out = _empty_output(arr.shape, arr.dtype, True, arr.device, stream)
    strided_copy(out, arr, stream)
    return out


def _empty_output(shape, dtype, channels_last, device, stream):
    """An (N, C, H, W) array, channels-last when `channels_last`, else contiguous."""
    if not channels_last:
        return CUDAArray.empty(shape, dtype, device, stream)
    n, c, h, w = shape
    flat = CUDAArray.empty((n, h, w, c), dtype, device, stream)
    return as_strided(flat, shape, (h * w * c, 1, w * c, c), 0)


_conv_plans = LaunchCache()
_wgrad_plans = LaunchCache()


def _build_conv(x, weight, bias, out, conv, transposed):
    """The `run(stream, x, weight, bias, out)` of this (transposed) convolution: a Hopper TMA
    kernel where one applies, else the implicit GEMM; each packs the weight as it reads it."""
    if transposed and conv_hopper.phases_apply(x, weight, out, conv):
        plan = conv_hopper.PhasePlan(x, weight, bias, out, conv.padding)
    elif conv_hopper.forward_applies(x, weight, out, conv, transposed):
        start = conv.padding
        if transposed:  # a convolution with the flipped kernel, its window starting R-1-pad early
            start = tuple(k - 1 - p for k, p in zip(weight.shape[2:], conv.padding))
        plan = conv_hopper.ForwardPlan(x, weight, bias, out, start, transposed, conv.stride[0])
    else:
        w = _packed_weight(weight, conv.groups, transposed)
        launch, dims = _conv_plan(x, w, bias, out, conv, transposed)
        return lambda stream, x, weight, bias, out: _conv_launch(
            launch, dims, stream, x, _packed_weight(weight, conv.groups, transposed), bias, out)
    return lambda stream, x, weight, bias, out: plan.run(
        stream, x, conv_hopper.packed_weight(weight), bias, out)


def _pointwise_applies(x, weight, conv, out_size):
    """Whether this (transposed) convolution is a 1x1 product over an NCHW input (stride 1, no
    padding, one group, the full output): per image, out (C_out, HW) = W (C_out, C) @ x (C, HW),
    which `_pointwise` runs as one batched matmul, reading and writing NCHW where it lies."""
    _, _, x_sh, x_sw = x.element_strides()
    return (weight.shape[2:] == (1, 1) and conv.stride == (1, 1) and conv.padding == (0, 0)
            and conv.groups == 1 and tuple(out_size) == x.shape[2:] and not _channels_fast(x)
            and x_sw == 1 and x_sh == x.shape[3])


def _pointwise(x, weight, bias, transposed, out):
    """out = the 1x1 convolution of NCHW `x` (see `_pointwise_applies`) as the batched product
    out^T (N, HW, C_out) = x^T (N, HW, C) @ W^T (+ bias along C_out), over transposed views of
    x, W and the NCHW `out`: no copy to channels-last. `transposed`: W is (C, C_out), a
    transposed convolution's (the input gradient of a convolution)."""
    n, c_in, h, w = x.shape
    c_out = out.shape[1]
    x_sn, x_sc = x.element_strides()[:2]
    w_s0, w_s1 = weight.element_strides()[:2]
    a = as_strided(x, (n, h * w, c_in), (x_sn, 1, x_sc), 0)
    b = as_strided(weight, (c_in, c_out), (w_s0, w_s1) if transposed else (w_s1, w_s0), 0)
    c = as_strided(out, (n, h * w, c_out), (c_out * h * w, 1, h * w), 0)
    matmul_arrays(a, b, bias, out=c, allow_tf32=cudnn.allow_tf32)
    return out


def _run_conv(x, weight, bias, conv, transposed, out_size):
    """The (transposed) convolution into an output laid out as `x` (channels-last or NCHW).
    An NCHW output of a strided transposed convolution, whose rows are phases, not runs of
    the output, is written channels-last and copied."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    if bias is not None and bias.element_strides() != (1,):
        bias = contiguous(bias)
    c_out = weight.shape[1] * conv.groups if transposed else weight.shape[0]
    shape = (x.shape[0], c_out, *out_size)
    channels_last = _channels_fast(x)
    by_rows = not channels_last and transposed and conv.stride != (1, 1)
    out = _empty_output(shape, x.dtype, channels_last or by_rows, device, stream)
    if _pointwise_applies(x, weight, conv, out_size):
        return _pointwise(x, weight, bias, transposed, out)
    key = (x.shape, x.strides, weight.shape, weight.strides, x.dtype, x.ptr % 16 == 0,
           weight.ptr % 16 == 0, None if bias is None else bias.ptr % 16 == 0, conv.key(),
           transposed, out_size, cudnn.allow_tf32, device)
    x = _channels_last(x, stream)
    run = _conv_plans.get_or_build(
        key, lambda: _build_conv(x, weight, bias, out, conv, transposed))
    run(stream, x, weight, bias, out)
    if by_rows:
        nchw = CUDAArray.empty(shape, x.dtype, device, stream)
        strided_copy(nchw, out, stream)
        return nchw
    return out


def _out_size(size, kernel, conv):
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, p, d, st in
                 zip(size, kernel, conv.padding, conv.dilation, conv.stride))


@register("conv2d_igemm", "cuda")
def conv2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size=None):
    """The convolution of (N, C, H, W) `x` with (C_out, C/groups, R, S) `weight` (+ bias),
    symmetric zero padding; `out_size` (H, W) may cut the output short of its full size."""
    conv = Conv(stride, padding, dilation, groups)
    full = _out_size(x.shape[2:], weight.shape[2:], conv)
    return _run_conv(x, weight, bias, conv, False, tuple(out_size or full))


@register("conv_transpose2d_igemm", "cuda")
def conv_transpose2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size):
    """The transposed convolution of (N, C_in, H, W) `x` with (C_in, C_out/groups, R, S)
    `weight` (+ bias) into an (N, C_out, *out_size) result: ConvTranspose2d's forward, and the
    input gradient of a convolution of that weight."""
    return _run_conv(x, weight, bias, Conv(stride, padding, dilation, groups), True,
                     tuple(out_size))


def _build_weight_grad(grad, x, out, conv):
    """The `run(stream, grad, x, out)` of this weight gradient: the Hopper TMA kernel where it
    applies (over an unfolded input where channels are few), else the implicit GEMM (split
    into float32 partials where its tiles are few)."""
    weight_shape = out.shape
    if conv_hopper.weight_grad_applies(grad, x, conv):
        return conv_hopper.WeightGradPlan(grad, x, out, conv.padding, conv.stride[0]).run
    if conv_few_channels.weight_grad_applies(grad, x, weight_shape, conv):
        return conv_few_channels.WeightGradPlan(grad, x, out, conv).run
    splits, split_len = _wgrad_splits(grad, x, conv, weight_shape)
    part = out if splits == 1 else _partials(splits, out, None)
    launch, dims = _wgrad_plan(grad, x, _as_splits(part, splits), conv, weight_shape[2:], splits,
                               split_len)
    total = _sum_plan(out.size, splits, out.device) if splits > 1 else None

    def run(stream, grad, x, out):
        if total is None:
            _wgrad_launch(launch, dims, stream, grad, x, _as_splits(out, 1))
            return
        part = _partials(splits, out, stream)
        _wgrad_launch(launch, dims, stream, grad, x, part)
        _sum_launch(total, stream, part, out, out.size, splits)

    return run


@register("conv2d_igemm_weight_grad", "cuda")
def conv2d_igemm_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups,
                             channels_last=False):
    """The gradient of the convolution's (C_out, C/groups, R, S) weight, from its input `x`
    and output gradient `grad`; laid out channels-last when `channels_last` (as the weight is:
    its .grad then needs no copy into the weight's layout)."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    conv = Conv(stride, padding, dilation, groups)
    out = _empty_output(tuple(weight_shape), x.dtype, channels_last, device, stream)
    key = (x.shape, x.strides, grad.shape, grad.strides, out.shape, out.strides, x.dtype,
           x.ptr % 16 == 0, grad.ptr % 16 == 0, conv.key(), cudnn.allow_tf32, device)
    x, grad = _channels_last(x, stream), _channels_last(grad, stream)
    run = _wgrad_plans.get_or_build(key, lambda: _build_weight_grad(grad, x, out, conv))
    run(stream, grad, x, out)
    return out


def _partials(splits, out, stream):
    """float32 partial sums (splits,) + out's shape, each split laid out as `out` (row-major
    or channels-last), so that `_split_sum_kernel` adds them element by element in memory
    order; a placeholder without a `stream` (the plan's)."""
    def empty(shape):
        if stream is None:
            return placeholder(shape, np.float32)
        return CUDAArray.empty(shape, np.float32, out.device, stream)

    if out.is_contiguous():
        return empty((splits,) + out.shape)
    k, c, r, s = out.shape
    return as_strided(empty((splits, k, r, s, c)), (splits,) + out.shape,
                      (k * r * s * c, r * s * c, 1, s * c, c), 0)


def _as_splits(part, splits):
    """The weight gradient's destination with a leading splits dim (of stride 0 when the
    kernel writes the result directly)."""
    if splits > 1:
        return part
    return as_strided(part, (1,) + part.shape, (0,) + part.element_strides(), 0)
