"""Convolutions on Hopper by TMA: implicit GEMMs whose input windows the Tensor Memory
Accelerator copies, the kernels kernels/conv.py runs on sm_90 where they apply (stride 1 or
2, no dilation, one group, 16-bit types, or float32 as TF32 products where
cudnn.allow_tf32 allows them; `forward_applies`, `phases_apply`, `weight_grad_applies`).

The idea
--------
A channels-last input is a 4-D array (N, H, W, C) with unit-stride channels. For filter tap
(r, s), the inputs that a block of BH x BW output pixels at (oh, ow) in each of BI images
multiplies are the (BI, BH, BW, BK) box of the input at (n, oh + r - pad_h, ow + s - pad_w, c):
one TMA copy. The parts of the box that fall outside the images (the padding, the ragged last
blocks, images past the batch) are filled with zeros by the copy itself, so the kernels have no
masks and no index arithmetic per element. In shared memory the box is a (BI * BH * BW, BK)
matrix (its rows of BK channels lie one after another, the same 128-byte swizzle as a 2-D
block), and the reshape to it is a view (Triton's memdesc reshape) when the box is wgmma's B
operand: so the kernels compute the transposed products, out^T = W @ window^T, whose B is the
window.

- Stride 2 (ResNet's downsampling 3x3 and 1x1 layers): the taps of a block of output pixels
  read every other input row and column, which no box of the input is. Viewed as (N, H/2, 2,
  W/2, 2C) (strides HWC, 2WC, WC, 2C, 1: the row phase a dim, the column phase a half of the
  channels), the pixels tap (r, s) reads are the (BI, BH, 1, BW, BK) box at half-row
  oh + floor((r - pad_h) / 2), row phase (r - pad_h) mod 2, and likewise for the columns:
  again one copy, zero-filled at the edges (`_input_descriptor`, `_window`). The view needs
  an even height and width and channel blocks that end at C. ResNet's 56^2 128 -> 128 3x3/2
  (H200, batch 32): forward 0.026 ms (cuDNN 0.022; the implicit GEMM 0.030), weight gradient
  0.033 (cuDNN 0.034; the implicit GEMM 0.103).
- Forward (`_conv_tma_kernel`): out[n, oh, ow, k] = sum over taps and channels of
  x[n, oh + r - pad_h, ow + s - pad_w, c] * w[k, c, r, s]. A program holds a (BN out channels)
  x (BI x BH x BW pixels) float32 accumulator and walks the R * S taps, BK channels at a time,
  loading the window box and the (BN, BK) block of the weight laid out channels-last (K rows
  of R * S * C: a view of a channels-last weight, else a copy). Channel blocks past C read
  zeros from the input, so weights of the next tap that a block overlaps multiply zeros. The
  epilogue adds the bias and stores the block by TMA, channels-last or NCHW (the accumulator
  is already (channels, pixels)).
- Transposed, stride 1 (ConvTranspose2d's forward, a convolution's input gradient): the same
  kernel with FLIP, reading tap R*S-1-t of the weight for tap t and padding R-1-pad: a
  convolution with the flipped kernel. The weight is then (C_in, C_out, R, S), laid out as C_in
  rows of R * S * C_out, and its (BK, BN) block is transposed in shared memory.
- Transposed, stride 2 (`_conv_phases_tma_kernel`: ConvTranspose2d's 2x2 and 4x4 upsamplers,
  a stride-2 convolution's input gradient): output pixel (2q + a, 2p + b) meets only the taps
  r = a + pad_h and s = b + pad_w (mod 2) of each of the four phases (a, b), each reading the
  input at (q + (a + pad_h - r) / 2, p + (b + pad_w - s) / 2): a stride-1 window again. A tile
  is one phase's (out channels) x (pixels) block, the four phases' tiles of a pixel block
  consecutive (for the 2x2 kernel that is one GEMM over (phase, out channel) columns), and
  the epilogue stores it through the output viewed as (N, OH/2, 2, OW/2, 2K), the row phase a
  dim and the column phase a half of the channels. An even kernel meets R/2 x S/2 taps in
  every phase, and its tiles' walks flatten into one pipelined loop; an odd one's phases meet
  different counts (a 3x3's 1, 2 or 4 taps), one launch for all of them keeping the SMs busy
  where one launch a phase left each short (ResNet's 56^2 3x3/2: 0.051 ms against the
  implicit GEMM's 0.044). U-Net's 2x2 upsamplers (H200, batch 8, bf16): 32^2 512 -> 256
  0.025 ms (cuDNN 0.026, the implicit GEMM 0.040), 128^2 128 -> 64 0.038 (cuDNN 0.059, the
  implicit GEMM 0.078).
- Weight gradient (`_conv_wgrad_tma_kernel`): dw[k, r, s, c] = sum over pixels of
  dy[n, oh, ow, k] * x[n, oh + r - pad_h, ow + s - pad_w, c]. A work unit is one (BM out
  channels) x (BN in channels) tile of one tap over one range of pixel blocks (split-K: the
  weight's tiles are few, the pixels many). Each step multiplies the (BI, BH, BW, BM) box of dy,
  transposed, by the shifted box of x. Pixels of dy's ragged blocks read as zeros, so they
  add nothing. Units store float32 partial sums; `_wgrad_sum_kernel` adds each element's
  partials in a fixed order and writes the weight's layout: deterministic, no atomics. It
  loads up to 16 splits at once, as a loop of one load a split waits on each in turn: ResNet's
  56^2 1x1 (61 splits of 2 tiles) sums in 0.004 ms, where it took 0.012 one split a load.
  Units of 64 x 64 tiles multiply each block of dy by the windows of three taps of a kernel row
  (ROW_TAPS): dy's block is then loaded, and moved from shared memory to registers, once for
  three products, not once each. U-Net's 256^2 64 -> 64 3x3 (H200, batch 8): 0.096 ms against
  0.142 a tap a unit (cuDNN 0.095). The dy
  operand is wgmma's A, which Triton loads from shared memory into registers for a reshaped
  box (only B takes the view). A unit's walk is as long as its split: Triton flattens a loop
  nest only where the inner loop's length is the same for every outer step, and walks made
  all as long (the last split's past the batch, read as zeros), flattened, ran slower on an
  H200 (ResNet's 56^2 3x3: 0.049 ms against 0.039; U-Net's 256^2 3x3: 0.186 against 0.148).

Both kernels are persistent (one program per SM, walking units NUM_SMS apart, the loop over
units flattened with the one over steps, as kernels/matmul_hopper.py's), so that each program
builds its TMA descriptors once (`tl.make_tensor_descriptor`, in Triton's global scratch).
Unit order keeps the programs that run together on the same input: out-channel tiles of one
pixel block (forward), the taps and channel tiles of one pixel range (weight gradient).

Block sizes (`forward_config`, `weight_grad_config`), measured on an H200 (bf16, batch 32
ResNet-50 and batch 8 U-Net 3x3 layers, each kernel alone against cuDNN's, `python
benchmarks/conv.py --tiles`): BK = 64 channels (128 bytes, one swizzle row); BN = 128 out
channels with 8 warps (two warpgroups of wgmma's 64 rows) or 64 with 4. The forward takes the
largest tile that still makes 0.7 tiles an SM, trying 256 x 128, 256 x 64, 128 x 128 and 128 x
64 (pixels x channels) in turn: U-Net 128^2 128 -> 128 runs 256 x 128 (0.069 ms against
0.081-0.087 with 128 pixels), ResNet 14^2 256 x 64 (0.0225 ms against 0.0246 with 128 x 128),
7^2 128 x 64 (0.0299 against 0.0386 with 128 x 128, whose 64 tiles leave half the SMs idle;
split in two halves of the taps, their float32 partials summed by a second launch, 0.0362;
at 14^2 the best split tile took 0.0384 against 0.0225, H200, 2026-11-28); as
many stages of (BN + pixels) x 128 bytes (up to 4) as fit in shared memory beside the staged
output tile: 3 for 256 x 128 in 16-bit types, which float32 skips (2 would fit). The weight
gradient steps 128 pixels at a time (U-Net 128^2: 0.080 ms against 0.102-0.111 with 64; 64
pixels of float32) in 3 stages (4 for tiles of 64 x 128 or less; 3 for 64 x 64 tiles of three
taps, whose stage holds dy's block and three windows), and `_splits` weighs a shorter walk
against the partials' traffic: ResNet 14^2 takes 3 splits (0.0331 ms, against 0.0367 with
the 7 that balancing the waves alone gave), 7^2 2 (0.053 against 0.061 with 4). `pixel_block`
picks the block's shape: the least padding, few images per box. Padding costs compute (TMA fills
it, wgmma multiplies it), and boxes of many short rows copy slowly: 16 7x7 images a box ran at
half the speed of 2. Rows of 8 pixels store slowly into an NCHW output (16 bytes each), so its
blocks are 32 or more pixels wide: ResNet's 56^2 64 -> 256 1x1 into NCHW took 0.054 ms against
0.105 with 8-pixel rows.

float32 (TF32 products) takes the same blocks in bytes: 32 channels a step, 64-pixel steps in
the weight gradient, so that a stage holds what a 16-bit one does; 256 x 128 tiles, which
would fit only two stages beside their output tile, are left out. ResNet's 56^2 64 -> 64 3x3
(H200, batch 32) runs forward 0.042 ms, input gradient 0.061 and weight gradient 0.160,
against cuDNN's TF32 0.044, 0.049 and 0.090 and the implicit GEMM's 0.105, 0.106 and 0.283.
"""

import itertools

import numpy as np
import triton
import triton.language as tl

from ... import cudnn
from ..array_ops import as_strided, contiguous
from ..launch import Launch
from ..runtime.array import CUDAArray
from ._strided_indexing import cdiv, next_pow2, placeholder, stride_arg
from .matmul_hopper import grid_sms, is_hopper

_HALF = ("float16", "bfloat16")
# Shared memory an sm_90 block may take (227 KB), less a margin for the pipeline's barriers.
_SHARED_BYTES = 227 * 1024 - 2048
# The least channel counts: in, a 32-byte TMA row; out, wgmma's 64-row tile (forward) and A
# operand (weight gradient).
MIN_IN_CHANNELS, MIN_OUT_CHANNELS = 16, 64
# The weight gradient's split ranges hold at least this many pixel blocks.
MIN_SPLIT_STEPS = 4
# What `_splits` weighs, measured on an H200: the products one SM sustains in the weight
# gradient's steps (flop/s), and the rate at which the float32 partials go out and come back.
_SM_FLOPS, _PARTIALS_BANDWIDTH = 5e12, 3e12


@triton.jit
def _pixel_block(block, blocks_h, blocks_w, BI: tl.constexpr, BH: tl.constexpr,
                 BW: tl.constexpr):
    """(first image, first row, first column) of pixel block number `block`: BI x BH x BW
    pixels, row-major within BI images, then the next BI images."""
    per_images = blocks_h * blocks_w
    rest = block % per_images
    return (block // per_images) * BI, (rest // blocks_w) * BH, (rest % blocks_w) * BW


@triton.jit
def _input_descriptor(x_ptr, n_images, in_h, in_w, c_in, x_sn, x_sh, x_sw, BI: tl.constexpr,
                      BH: tl.constexpr, BW: tl.constexpr, BC: tl.constexpr,
                      STRIDE: tl.constexpr):
    """The TMA descriptor of the channels-last input's (BI, BH, BW, BC) windows. At STRIDE 2
    the input is viewed as (N, H/2, 2, W/2, 2C), its row and column phases made dims, so that
    the pixels a tap reads under a block of output pixels are again one box (`_window`)."""
    if STRIDE == 1:
        desc = tl.make_tensor_descriptor(x_ptr, [n_images, in_h, in_w, c_in],
                                         [x_sn, x_sh, x_sw, 1], [BI, BH, BW, BC])
    else:
        desc = tl.make_tensor_descriptor(x_ptr, [n_images, in_h // 2, 2, in_w // 2, 2 * c_in],
                                         [x_sn, 2 * x_sh, x_sh, 2 * x_sw, 1],
                                         [BI, BH, 1, BW, BC])
    return desc


@triton.jit
def _window(x_desc, n, oh, ow, dh, dw, c, c_in, BP: tl.constexpr, BC: tl.constexpr,
            STRIDE: tl.constexpr):
    """The (BP pixels, BC channels) window that tap offset (dh, dw) (r - pad_h, s - pad_w)
    reads under the output block at (n, oh, ow): input rows oh * STRIDE + dh on. At STRIDE 2
    that is half-row oh + floor(dh / 2) of row phase dh mod 2, the column phase picking a half
    of the 2C channels."""
    if STRIDE == 1:
        box = x_desc.load([n, oh + dh, ow + dw, c])
    else:
        box = x_desc.load([n, oh + (dh >> 1), dh & 1, ow + (dw >> 1), (dw & 1) * c_in + c])
    return box.reshape(BP, BC)


@triton.jit
def _with_bias(acc, bias_ptr, col, c_out, BN: tl.constexpr):
    """The (out channels, pixels) accumulator plus the bias of channels col.. col + BN, in
    float32, before the epilogue's one rounding."""
    k = col + tl.arange(0, BN)
    return acc + tl.load(bias_ptr + k, mask=k < c_out, other=0.0).to(tl.float32)[:, None]


@triton.jit
def _forward_tile(tile, blocks_h, blocks_w, blocks_n, BI: tl.constexpr, BH: tl.constexpr,
                  BW: tl.constexpr, BN: tl.constexpr):
    """(image, row, column, first out channel) of forward tile `tile`: out-channel blocks of
    one pixel block are consecutive tiles."""
    n, oh, ow = _pixel_block(tile // blocks_n, blocks_h, blocks_w, BI, BH, BW)
    return n, oh, ow, (tile % blocks_n) * BN


@triton.jit
def _conv_tma_kernel(
        # pointers: input (N, H, W, C) channels-last, weight as (rows, R * S * cols) (see
        # FLIP), bias (K) or None, output (N, K, OH, OW) channels-last or NCHW
        x_ptr, w_ptr, bias_ptr, out_ptr,
        # sizes; the input is read from (oh - pad_h, ow - pad_w) on
        n_images, in_h, in_w, c_in, out_h, out_w, c_out, pad_h, pad_w,
        # strides, in elements (the input's channels and the weight's columns are unit-stride)
        x_sn, x_sh, x_sw, w_stride, out_sn, out_sc, out_sh, out_sw,
        # meta-parameters
        KERNEL_H: tl.constexpr, KERNEL_W: tl.constexpr, STRIDE: tl.constexpr,
        FLIP: tl.constexpr, HAS_BIAS: tl.constexpr, OUT_NCHW: tl.constexpr, BI: tl.constexpr,
        BH: tl.constexpr, BW: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        NUM_SMS: tl.constexpr):
    """out = conv(x, w) + bias, tile after tile, by NUM_SMS persistent programs. The weight
    is w[k, r, s, c] (K rows of R * S * C), a convolution's weight laid out channels-last; with
    FLIP it is a transposed convolution's, w[c, r, s, k] (C rows of R * S * K), read at the
    flipped tap."""
    BM: tl.constexpr = BI * BH * BW
    TAPS: tl.constexpr = KERNEL_H * KERNEL_W
    x_desc = _input_descriptor(x_ptr, n_images, in_h, in_w, c_in, x_sn, x_sh, x_sw, BI, BH, BW,
                               BK, STRIDE)
    if FLIP:
        w_desc = tl.make_tensor_descriptor(w_ptr, [c_in, TAPS * c_out], [w_stride, 1], [BK, BN])
    else:
        w_desc = tl.make_tensor_descriptor(w_ptr, [c_out, TAPS * c_in], [w_stride, 1], [BN, BK])
    if OUT_NCHW:
        out_desc = tl.make_tensor_descriptor(out_ptr, [n_images, c_out, out_h, out_w],
                                             [out_sn, out_sc, out_sh, 1], [BI, BN, BH, BW])
    else:
        out_desc = tl.make_tensor_descriptor(out_ptr, [n_images, out_h, out_w, c_out],
                                             [out_sn, out_sh, out_sw, 1], [BI, BH, BW, BN])
    blocks_h = tl.cdiv(out_h, BH)
    blocks_w = tl.cdiv(out_w, BW)
    blocks_n = tl.cdiv(c_out, BN)
    tiles = tl.cdiv(n_images, BI) * blocks_h * blocks_w * blocks_n
    c_steps = tl.cdiv(c_in, BK)
    # The epilogue counts its own tiles: the flattened loop's pipeliner then carries no value
    # from a tile's first step to its last.
    tile_done = tl.program_id(0) - NUM_SMS
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
        n, oh, ow, col = _forward_tile(tile, blocks_h, blocks_w, blocks_n, BI, BH, BW, BN)
        acc = tl.zeros((BN, BM), tl.float32)
        for step in range(TAPS * c_steps):
            tap = step // c_steps
            c = (step % c_steps) * BK
            r, s = tap // KERNEL_W, tap % KERNEL_W
            window = _window(x_desc, n, oh, ow, r - pad_h, s - pad_w, c, c_in, BM, BK, STRIDE)
            if FLIP:  # w[c, flipped tap, k] for the (k, c) block
                weights = w_desc.load([c, (TAPS - 1 - tap) * c_out + col]).T
            else:
                weights = w_desc.load([col, tap * c_in + c])
            acc = tl.dot(weights, window.T, acc)
        tile_done += NUM_SMS
        n, oh, ow, col = _forward_tile(tile_done, blocks_h, blocks_w, blocks_n, BI, BH, BW, BN)
        if HAS_BIAS:
            acc = _with_bias(acc, bias_ptr, col, c_out, BN)
        y = acc.to(out_desc.dtype)
        if OUT_NCHW:
            y = tl.permute(y.reshape(BN, BI, BH, BW), (1, 0, 2, 3))
            out_desc.store([n, col, oh, ow], y)
        else:
            out_desc.store([n, oh, ow, col], y.T.reshape(BI, BH, BW, BN))


@triton.jit
def _phase_tile(tile, blocks_h, blocks_w, blocks_n, BI: tl.constexpr, BH: tl.constexpr,
                BW: tl.constexpr, BN: tl.constexpr):
    """(image, half-row, half-column, row phase, column phase, first out channel) of phase
    tile `tile`: the four phases' out-channel blocks of one pixel block are consecutive
    tiles, a GEMM's columns over (phase, out channel)."""
    n, q, p = _pixel_block(tile // (4 * blocks_n), blocks_h, blocks_w, BI, BH, BW)
    column = tile % (4 * blocks_n)
    phase = column // blocks_n
    return n, q, p, phase // 2, phase % 2, (column % blocks_n) * BN


@triton.jit
def _conv_phases_tma_kernel(
        # pointers: input (N, H, W, C) channels-last, weight w[c, r, s, k] as (C rows of
        # R * S * K), bias (K) or None, output (N, K, OH, OW) channels-last
        x_ptr, w_ptr, bias_ptr, out_ptr,
        # sizes and the transposed convolution's padding
        n_images, in_h, in_w, c_in, out_h, out_w, c_out, pad_h, pad_w,
        # strides, in elements (the input's channels and the weight's columns are unit-stride)
        x_sn, x_sh, x_sw, w_stride, out_sn, out_sh, out_sw,
        # meta-parameters
        KERNEL_H: tl.constexpr, KERNEL_W: tl.constexpr, HAS_BIAS: tl.constexpr,
        BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr, BN: tl.constexpr,
        BK: tl.constexpr, NUM_SMS: tl.constexpr):
    """out = conv_transpose(x, w, stride 2) + bias, tile after tile, by NUM_SMS persistent
    programs. Output pixel (2q + phase_h, 2p + phase_w) meets the taps r = phase_h + pad_h
    (mod 2), s likewise: out[n, 2q + phase_h, 2p + phase_w, k] = sum over them and the
    channels c of x[n, q + (phase_h + pad_h - r) / 2, p + (phase_w + pad_w - s) / 2, c] *
    w[c, r, s, k]. An even kernel meets KERNEL_H/2 x KERNEL_W/2 taps in every phase, a
    compile-time count that lets Triton flatten the tiles' walks into one pipelined loop; an
    odd one meets (R+1)/2 or (R-1)/2 rows of them (none: a 1x1 kernel's odd phases store
    zeros), each tile's walk its own loop."""
    BM: tl.constexpr = BI * BH * BW
    x_desc = _input_descriptor(x_ptr, n_images, in_h, in_w, c_in, x_sn, x_sh, x_sw, BI, BH, BW,
                               BK, 1)
    w_desc = tl.make_tensor_descriptor(w_ptr, [c_in, KERNEL_H * KERNEL_W * c_out],
                                       [w_stride, 1], [BK, BN])
    # the output as (N, OH/2, 2, OW/2, 2K): the row phase a dim, the column phase a half of
    # the channels
    out_desc = tl.make_tensor_descriptor(out_ptr,
                                         [n_images, out_h // 2, 2, out_w // 2, 2 * c_out],
                                         [out_sn, 2 * out_sh, out_sh, 2 * out_sw, 1],
                                         [BI, BH, 1, BW, BN])
    blocks_h = tl.cdiv(out_h // 2, BH)
    blocks_w = tl.cdiv(out_w // 2, BW)
    blocks_n = tl.cdiv(c_out, BN)
    tiles = tl.cdiv(n_images, BI) * blocks_h * blocks_w * 4 * blocks_n
    c_steps = tl.cdiv(c_in, BK)
    tile_done = tl.program_id(0) - NUM_SMS
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
        n, q, p, phase_h, phase_w, col = _phase_tile(tile, blocks_h, blocks_w, blocks_n, BI,
                                                     BH, BW, BN)
        first_r = (phase_h + pad_h) % 2
        first_s = (phase_w + pad_w) % 2
        if KERNEL_H % 2 == 0 and KERNEL_W % 2 == 0:
            taps_h = KERNEL_H // 2
            taps_w = KERNEL_W // 2
        else:
            taps_h = (KERNEL_H - first_r + 1) // 2
            taps_w = (KERNEL_W - first_s + 1) // 2
        acc = tl.zeros((BN, BM), tl.float32)
        for step in range(taps_h * taps_w * c_steps):
            tap = step // c_steps
            c = (step % c_steps) * BK
            r = first_r + 2 * (tap // taps_w)
            s = first_s + 2 * (tap % taps_w)
            window = _window(x_desc, n, q, p, (phase_h + pad_h - r) >> 1,
                             (phase_w + pad_w - s) >> 1, c, c_in, BM, BK, 1)
            weights = w_desc.load([c, (r * KERNEL_W + s) * c_out + col]).T
            acc = tl.dot(weights, window.T, acc)
        tile_done += NUM_SMS
        n, q, p, phase_h, phase_w, col = _phase_tile(tile_done, blocks_h, blocks_w, blocks_n,
                                                     BI, BH, BW, BN)
        if HAS_BIAS:
            acc = _with_bias(acc, bias_ptr, col, c_out, BN)
        y = acc.to(out_desc.dtype).T.reshape(BI, BH, 1, BW, BN)
        out_desc.store([n, q, phase_h, p, phase_w * c_out + col], y)


@triton.jit
def _wgrad_unit(unit, tiles_m, tiles_n, GROUPS: tl.constexpr):
    """(split, tap group, out-channel tile, in-channel tile) of weight-gradient unit `unit`:
    the tiles of one split are consecutive units."""
    tiles = tiles_m * tiles_n * GROUPS
    tile = unit % tiles
    return unit // tiles, tile % GROUPS, tile // (GROUPS * tiles_n), (tile // GROUPS) % tiles_n


@triton.jit
def _conv_wgrad_tma_kernel(
        # pointers: output gradient (N, OH, OW, K) and input (N, H, W, C), channels-last; float32
        # partial sums (splits, R * S, K, C)
        dy_ptr, x_ptr, part_ptr,
        # sizes; the input is read from (oh - pad_h, ow - pad_w) on; each split sums
        # split_blocks pixel blocks
        n_images, out_h, out_w, c_out, in_h, in_w, c_in, pad_h, pad_w, splits, split_blocks,
        # strides, in elements (channels are unit-stride)
        dy_sn, dy_sh, dy_sw, x_sn, x_sh, x_sw,
        # meta-parameters: ROW_TAPS (1 to 3) neighbouring taps of a kernel row a unit
        KERNEL_H: tl.constexpr, KERNEL_W: tl.constexpr, STRIDE: tl.constexpr,
        ROW_TAPS: tl.constexpr, BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, NUM_SMS: tl.constexpr):
    """The partial sums of dw[k, r, s, c] over each split's pixel blocks, unit after unit, by
    NUM_SMS persistent programs. A unit multiplies each block of dy by the windows of ROW_TAPS
    taps (r, s), (r, s + 1), ...: dy's block is loaded, and moved to registers, once for
    them."""
    BP: tl.constexpr = BI * BH * BW
    TAPS: tl.constexpr = KERNEL_H * KERNEL_W
    GROUPS_W: tl.constexpr = (KERNEL_W + ROW_TAPS - 1) // ROW_TAPS
    dy_desc = tl.make_tensor_descriptor(dy_ptr, [n_images, out_h, out_w, c_out],
                                        [dy_sn, dy_sh, dy_sw, 1], [BI, BH, BW, BM])
    x_desc = _input_descriptor(x_ptr, n_images, in_h, in_w, c_in, x_sn, x_sh, x_sw, BI, BH, BW,
                               BN, STRIDE)
    part_desc = tl.make_tensor_descriptor(part_ptr, [splits * TAPS, c_out, c_in],
                                          [c_out * c_in, c_in, 1], [1, BM, BN])
    blocks_h = tl.cdiv(out_h, BH)
    blocks_w = tl.cdiv(out_w, BW)
    blocks = tl.cdiv(n_images, BI) * blocks_h * blocks_w
    tiles_m = tl.cdiv(c_out, BM)
    tiles_n = tl.cdiv(c_in, BN)
    units = tiles_m * tiles_n * KERNEL_H * GROUPS_W * splits
    unit_done = tl.program_id(0) - NUM_SMS
    for unit in tl.range(tl.program_id(0), units, NUM_SMS, flatten=True):
        split, group, pid_m, pid_n = _wgrad_unit(unit, tiles_m, tiles_n, KERNEL_H * GROUPS_W)
        first = split * split_blocks
        dh, dw = group // GROUPS_W - pad_h, (group % GROUPS_W) * ROW_TAPS - pad_w
        acc = tl.zeros((BM, BN), tl.float32)
        acc_1 = tl.zeros((BM, BN), tl.float32)
        acc_2 = tl.zeros((BM, BN), tl.float32)
        for block in range(first, tl.minimum(first + split_blocks, blocks)):
            n, oh, ow = _pixel_block(block, blocks_h, blocks_w, BI, BH, BW)
            grad = dy_desc.load([n, oh, ow, pid_m * BM]).reshape(BP, BM).T
            c = pid_n * BN
            acc = tl.dot(grad, _window(x_desc, n, oh, ow, dh, dw, c, c_in, BP, BN, STRIDE), acc)
            if ROW_TAPS > 1:
                acc_1 = tl.dot(grad, _window(x_desc, n, oh, ow, dh, dw + 1, c, c_in, BP, BN,
                                             STRIDE), acc_1)
            if ROW_TAPS > 2:
                acc_2 = tl.dot(grad, _window(x_desc, n, oh, ow, dh, dw + 2, c, c_in, BP, BN,
                                             STRIDE), acc_2)
        unit_done += NUM_SMS
        split, group, pid_m, pid_n = _wgrad_unit(unit_done, tiles_m, tiles_n,
                                                 KERNEL_H * GROUPS_W)
        s = (group % GROUPS_W) * ROW_TAPS
        row = split * TAPS + (group // GROUPS_W) * KERNEL_W + s
        part_desc.store([row, pid_m * BM, pid_n * BN], acc.reshape(1, BM, BN))
        if ROW_TAPS > 1:
            if s + 1 < KERNEL_W:
                part_desc.store([row + 1, pid_m * BM, pid_n * BN], acc_1.reshape(1, BM, BN))
        if ROW_TAPS > 2:
            if s + 2 < KERNEL_W:
                part_desc.store([row + 2, pid_m * BM, pid_n * BN], acc_2.reshape(1, BM, BN))


@triton.jit
def sum_splits(ptr, offsets, mask, splits, split_stride, BLOCK_S: tl.constexpr,
               BLOCK: tl.constexpr):
    """The float32 sum over `splits` of the BLOCK values at ptr + split * split_stride +
    offsets (zero where not `mask`), in a fixed order: BLOCK_S splits a load, as a loop of one
    load a split waits on each in turn. The weight gradients' float32 partials, summed."""
    acc = tl.zeros((BLOCK,), tl.float32)
    for first in range(0, splits, BLOCK_S):
        split = first + tl.arange(0, BLOCK_S)
        part = tl.load(ptr + (split.to(tl.int64) * split_stride)[:, None] + offsets[None, :],
                       mask=(split < splits)[:, None] & mask[None, :], other=0.0)
        acc += tl.sum(part, axis=0)
    return acc


def split_block(splits):
    """BLOCK_S of `sum_splits`: up to 16 splits a load."""
    return min(16, next_pow2(splits))


@triton.jit
def _wgrad_sum_kernel(
        # pointers: float32 partials (splits, R * S, K, C), the weight gradient (K, C, R, S)
        part_ptr, out_ptr,
        # sizes
        c_out, c_in, splits,
        # strides, in elements, of the weight gradient
        out_sk, out_sc, out_sr, out_ss,
        # meta-parameters
        KERNEL_W: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr):
    """dw[k, c, r, s] = the sum of the partials (`sum_splits`), rounded once: BLOCK_C
    channels of one tap and out channel (grid axis 0, taps outermost: consecutive programs
    read consecutive rows)."""
    tap, k = tl.program_id(0) // c_out, tl.program_id(0) % c_out
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    row = part_ptr + (tap * c_out + k).to(tl.int64) * c_in
    per_split = tl.num_programs(0).to(tl.int64) * c_in  # R * S * K * C
    acc = sum_splits(row, c, c < c_in, splits, per_split, BLOCK_S, BLOCK_C)
    r, s = tap // KERNEL_W, tap % KERNEL_W
    tl.store(out_ptr + k * out_sk + r * out_sr + s * out_ss + c * out_sc,
             acc.to(out_ptr.dtype.element_ty), mask=c < c_in)


def sum_blocks(splits, rows, c_in, programs=2 * 132):
    """(BLOCK_S, BLOCK_C) of the sum of float32 partials over `splits` of `rows` x `c_in`:
    `split_block`'s splits a load, and channel blocks of about 4096 elements, halved (to 32)
    while the grid has fewer than `programs` (two an SM)."""
    block_s = split_block(splits)
    block_c = min(next_pow2(c_in), 4096 // block_s)
    while block_c > 32 and rows * cdiv(c_in, block_c) < programs:
        block_c //= 2
    return block_s, block_c


def tma_strides(arr, unit_dim):
    """Whether `arr` has a unit stride along `unit_dim`, its other strides multiples of 16
    bytes, and a 16-byte-aligned address: what a TMA descriptor over it needs."""
    strides = arr.element_strides()
    item = arr.dtype.itemsize
    return (strides[unit_dim] == 1 and arr.ptr % 16 == 0
            and all(s * item % 16 == 0 and s > 0
                    for d, s in enumerate(strides) if d != unit_dim))


def dtype_applies(x):
    """A 16-bit type, or float32 where cudnn.allow_tf32 lets its products round to TF32
    (wgmma's float32 products)."""
    return x.dtype.name in _HALF or x.dtype.name == "float32" and cudnn.allow_tf32


def _geometry_applies(x, conv, c_in, c_out, transposed=False):
    """The shared conditions: an sm_90 GPU, a 16-bit type or TF32, stride 1 (or 2,
    `_phases_apply`, not transposed), no dilation, one group, channel counts wgmma and TMA take
    (16 or more in, 64 or more out, multiples of 8)."""
    strided = conv.stride == (2, 2) and not transposed and _phases_apply(x)
    return (dtype_applies(x) and (conv.stride == (1, 1) or strided)
            and conv.dilation == (1, 1) and conv.groups == 1 and c_in >= MIN_IN_CHANNELS
            and c_out >= MIN_OUT_CHANNELS and c_in % 8 == 0 and c_out % 8 == 0
            and is_hopper(x.device))


def _phases_apply(x):
    """Whether the stride-2 view of the input, (N, H/2, 2, W/2, 2C), exists and keeps the
    column phases apart: an even height and width, dense pixels, and channel blocks (BK, BN:
    up to 128) that end where a phase's channels do."""
    _, c, h, w = x.shape
    return (h % 2 == 0 and w % 2 == 0 and x.element_strides()[3] == c
            and c % min(128, next_pow2(c)) == 0)


def forward_applies(x, weight, out, conv, transposed=False):
    """Whether `_conv_tma_kernel` computes this (transposed) convolution of channels-last `x`
    into `out` (channels-last, or NCHW) with `weight` (either kind's), laid out as TMA reads
    and writes them."""
    return (_geometry_applies(x, conv, x.shape[1], out.shape[1], transposed)
            and weight.ptr % 16 == 0 and tma_strides(x, 1)
            and (tma_strides(out, 1) or tma_strides(out, 3)))


def phases_apply(x, weight, out, conv):
    """Whether `_conv_phases_tma_kernel` computes this stride-2 transposed convolution of
    channels-last `x`: one group, no dilation, and an output whose phases TMA can store:
    channels-last, dense pixels, an even height and width, and out channels a multiple of the
    channel blocks."""
    _, c_out, out_h, out_w = out.shape
    c_in = x.shape[1]
    return (dtype_applies(x) and conv.stride == (2, 2) and conv.dilation == (1, 1)
            and conv.groups == 1 and c_in >= MIN_IN_CHANNELS and c_in % 8 == 0
            and c_out % MIN_OUT_CHANNELS == 0 and out_h % 2 == 0 and out_w % 2 == 0
            and out.element_strides()[3] == c_out and weight.ptr % 16 == 0
            and tma_strides(x, 1) and tma_strides(out, 1) and is_hopper(x.device))


def weight_grad_applies(dy, x, conv):
    """Whether `_conv_wgrad_tma_kernel` computes this weight gradient (dy and x channels-last)."""
    return (_geometry_applies(x, conv, x.shape[1], dy.shape[1])
            and tma_strides(dy, 1) and tma_strides(x, 1))


def packed_weight(weight):
    """A (rows, C_out/C_in, R, S) weight as (rows, R, S, cols), what the forward kernel reads:
    a view of a channels-last weight, else a copy."""
    s0, s1, s2, s3 = weight.element_strides()
    rows, cols, kernel_h, kernel_w = weight.shape
    view = as_strided(weight, (rows, kernel_h, kernel_w, cols), (s0, s2, s3, s1), 0)
    return view if view.is_contiguous() else contiguous(view)


def pixel_block(images, height, width, area, least_width=8):
    """(BI, BH, BW) of `area` pixels (a power of two; BW `least_width` or more) that cover the
    images with the least padding, counting 6% more for each doubling of BI: TMA copies a box
    row by row, and boxes of many short rows (a row of 16 7x7 images) copy slowly. Ties go to
    the squarest block, whose neighbouring windows share the most rows."""
    shapes = []
    for bi, bh in itertools.product(_powers(area // least_width), repeat=2):
        bw = area // (bi * bh)
        if bw >= least_width:
            covered = cdiv(images, bi) * bi * cdiv(height, bh) * bh * cdiv(width, bw) * bw
            cost = covered * (1 + 0.06 * (bi.bit_length() - 1))
            shapes.append((cost, abs(bh.bit_length() - bw.bit_length()), (bi, bh, bw)))
    return min(shapes)[2]


def _powers(most):
    """1, 2, 4, ... up to `most`."""
    return [1 << i for i in range(most.bit_length())]


def forward_config(images, out_h, out_w, c_in, c_out, sms, itemsize=2, nchw=False,
                   phases=False):
    """{BI, BH, BW, BN, BK, num_warps, num_stages} of the forward kernel on `sms` SMs for
    elements of `itemsize` bytes: the largest tile, more pixels before more channels, that
    still makes 0.7 tiles an SM (see the module docstring) and fits three stages; the most
    stages (up to 4) that fit in shared memory beside the staged output tile. An NCHW output
    is stored in rows of BW pixels: 32 or more of them, as rows of 16 bytes store slowly. An
    output stored by its four `phases` (out_h x out_w pixels each) takes channel blocks that
    end where its channels do."""
    bk = min(128 // itemsize, next_pow2(c_in))  # one 128-byte swizzle row of channels
    shapes = [(area, bn, pipeline_stages((area + bn) * bk * itemsize, area * bn * itemsize))
              for area in (256, 128) for bn in (128, 64)
              if bn <= max(64, c_out) and not (phases and c_out % bn)]
    shapes = [shape for shape in shapes if shape[2] >= 3]
    for area, bn, stages in shapes:
        bi, bh, bw = pixel_block(images, out_h, out_w, area, 32 if nchw else 8)
        blocks = cdiv(images, bi) * cdiv(out_h, bh) * cdiv(out_w, bw)
        if blocks * cdiv(c_out, bn) * (4 if phases else 1) >= 0.7 * sms:
            break
    return dict(BI=bi, BH=bh, BW=bw, BN=bn, BK=bk, num_warps=8 if bn == 128 else 4,
                num_stages=stages)


def pipeline_stages(stage_bytes, staged_bytes=0):
    """The pipeline stages of `stage_bytes` each (up to 4) that fit in shared memory beside
    `staged_bytes` more."""
    return min(4, (_SHARED_BYTES - staged_bytes) // stage_bytes)


def weight_grad_config(images, out_h, out_w, c_out, c_in, itemsize=2, kernel_w=1):
    """{BI, BH, BW, BM, BN, ROW_TAPS, num_warps, num_stages} of the weight gradient for
    elements of `itemsize` bytes: 256-byte pixel steps (128 pixels of a 16-bit type), channel
    tiles up to 128 x 128, the most stages that fit in shared memory (the partial tile reuses
    theirs). Tiles of 64 x 64 take a kernel row's taps three at a time where the row has a
    multiple of three: their accumulators fit the registers of 4 warps."""
    area = 256 // itemsize
    bi, bh, bw = pixel_block(images, out_h, out_w, area)
    bm = 128 if c_out >= 128 else 64
    bn = min(128, next_pow2(c_in))
    row_taps = 3 if bm * bn <= 64 * 64 and kernel_w % 3 == 0 else 1
    return dict(BI=bi, BH=bh, BW=bw, BM=bm, BN=bn, ROW_TAPS=row_taps,
                num_warps=8 if bm == 128 else 4,
                num_stages=pipeline_stages(area * (bm + row_taps * bn) * itemsize))


def _splits(tiles, blocks, sms, step_flops, tile_bytes):
    """Splits of the weight gradient's pixel blocks that finish soonest on `sms` persistent
    programs, each range MIN_SPLIT_STEPS blocks or more: a split shortens each unit's walk over
    the blocks (`step_flops` a block) but adds a float32 partial tile (`tile_bytes`) written
    and read again. Ties go to fewer splits."""
    most = max(1, min(64, blocks // MIN_SPLIT_STEPS))

    def seconds(splits):
        walk = cdiv(tiles * splits, sms) * cdiv(blocks, splits) * step_flops / _SM_FLOPS
        return walk + 2 * splits * tiles * tile_bytes / _PARTIALS_BANDWIDTH
    return min(range(1, most + 1), key=seconds)


class ForwardPlan:
    """The forward kernel's launch for operands laid out as these: `run(stream, x, w, bias,
    out)` computes out = conv(x, w) + bias (see `forward_applies`), `w` the (transposed)
    convolution's weight packed (`packed_weight`). `pad` is where the window starts before
    each output pixel: (R-1-padding) for a transposed convolution, with `flip`; `stride` 1 or
    2 (not transposed)."""

    def __init__(self, x, weight, bias, out, pad, flip, stride=1, target=None):
        n, c_in, in_h, in_w = x.shape
        _, cols, kernel_h, kernel_w = weight.shape
        c_out, out_h, out_w = out.shape[1:]
        sms = grid_sms(out.device, target)
        out_strides = out.element_strides()
        config = forward_config(n, out_h, out_w, c_in, c_out, sms, x.dtype.itemsize,
                                out_strides[1] != 1)
        bi, bh, bw, bn = config["BI"], config["BH"], config["BW"], config["BN"]
        tiles = cdiv(n, bi) * cdiv(out_h, bh) * cdiv(out_w, bw) * cdiv(c_out, bn)
        meta = dict(KERNEL_H=kernel_h, KERNEL_W=kernel_w, STRIDE=stride, FLIP=flip,
                    HAS_BIAS=bias is not None, OUT_NCHW=out_strides[1] != 1, BI=bi, BH=bh,
                    BW=bw, BN=bn, BK=config["BK"], NUM_SMS=sms)
        self.launch = Launch(_conv_tma_kernel, (min(sms, tiles),), meta, config["num_warps"],
                             config["num_stages"], device=out.device, target=target)
        xs = x.element_strides()
        self.args = ((n, in_h, in_w, c_in, out_h, out_w, c_out) + tuple(pad)
                     + (xs[0], xs[2], xs[3], kernel_h * kernel_w * cols)
                     + tuple(stride_arg(s, (1,)) for s in out_strides))

    def run(self, stream, x, w, bias, out):
        self.launch(stream,
                    # pointers
                    x, w, bias, out,
                    # sizes, strides
                    *self.args)


class PhasePlan:
    """The launch of a stride-2 transposed convolution with an even kernel (ConvTranspose2d's
    2x2 and 4x4 upsamplers): `run(stream, x, w, bias, out)` computes out = conv_transpose(x,
    w) + bias (see `phases_apply`), `w` the weight packed (`packed_weight`) as C_in rows. Each
    output phase meets its own taps only (every other one along each axis), so no product
    multiplies the zeros a dilated input would hold."""

    def __init__(self, x, weight, bias, out, padding, target=None):
        n, c_in, in_h, in_w = x.shape
        _, _, kernel_h, kernel_w = weight.shape
        c_out, out_h, out_w = out.shape[1:]
        sms = grid_sms(out.device, target)
        config = forward_config(n, out_h // 2, out_w // 2, c_in, c_out, sms,
                                x.dtype.itemsize, phases=True)
        bi, bh, bw, bn = config["BI"], config["BH"], config["BW"], config["BN"]
        tiles = cdiv(n, bi) * cdiv(out_h // 2, bh) * cdiv(out_w // 2, bw) * 4 * cdiv(c_out, bn)
        meta = dict(KERNEL_H=kernel_h, KERNEL_W=kernel_w, HAS_BIAS=bias is not None, BI=bi,
                    BH=bh, BW=bw, BN=bn, BK=config["BK"], NUM_SMS=sms)
        self.launch = Launch(_conv_phases_tma_kernel, (min(sms, tiles),), meta,
                             config["num_warps"], config["num_stages"], device=out.device,
                             target=target)
        xs, outs = x.element_strides(), out.element_strides()
        self.args = ((n, in_h, in_w, c_in, out_h, out_w, c_out) + tuple(padding)
                     + (xs[0], xs[2], xs[3], kernel_h * kernel_w * c_out, outs[0], outs[2],
                        outs[3]))

    def run(self, stream, x, w, bias, out):
        self.launch(stream,
                    # pointers
                    x, w, bias, out,
                    # sizes, strides
                    *self.args)


class WeightGradPlan:
    """The weight gradient's two launches and its float32 workspace's shape: `run(stream, dy,
    x, out)` writes the gradient of the weight into `out` (K, C, R, S) from the channels-last
    output gradient `dy` and input `x` (see `weight_grad_applies`) of a convolution of
    `stride` 1 or 2; `partial_sums(stream, dy, x)` runs the first launch alone (the float32
    partials, for kernels/conv_few_channels.py's fold of an unfolded input)."""

    def __init__(self, dy, x, out, pad, stride=1, target=None):
        n, c_out, out_h, out_w = dy.shape
        _, c_in, in_h, in_w = x.shape
        kernel_h, kernel_w = out.shape[2:]
        config = weight_grad_config(n, out_h, out_w, c_out, c_in, x.dtype.itemsize, kernel_w)
        bi, bh, bw = config["BI"], config["BH"], config["BW"]
        bm, bn, row_taps = config["BM"], config["BN"], config["ROW_TAPS"]
        blocks = cdiv(n, bi) * cdiv(out_h, bh) * cdiv(out_w, bw)
        tiles = cdiv(c_out, bm) * cdiv(c_in, bn) * kernel_h * cdiv(kernel_w, row_taps)
        sms = grid_sms(dy.device, target)
        splits = _splits(tiles, blocks, sms, 2 * bm * bn * bi * bh * bw * row_taps,
                         4 * bm * bn * row_taps)
        split_blocks = cdiv(blocks, splits)
        splits = cdiv(blocks, split_blocks)
        self.target, self.device = target, dy.device
        self.partials = (splits, kernel_h * kernel_w, c_out, c_in)
        meta = dict(KERNEL_H=kernel_h, KERNEL_W=kernel_w, STRIDE=stride, ROW_TAPS=row_taps,
                    BI=bi, BH=bh, BW=bw, BM=bm, BN=bn, NUM_SMS=sms)
        self.units = Launch(_conv_wgrad_tma_kernel, (min(sms, tiles * splits),), meta,
                            config["num_warps"], config["num_stages"], device=dy.device,
                            target=target)
        ds, xs = dy.element_strides(), x.element_strides()
        self.unit_args = ((n, out_h, out_w, c_out, in_h, in_w, c_in) + tuple(pad)
                          + (splits, split_blocks, ds[0], ds[2], ds[3], xs[0], xs[2], xs[3]))
        taps = kernel_h * kernel_w
        block_s, block_c = sum_blocks(splits, taps * c_out, c_in)
        self.sum = Launch(_wgrad_sum_kernel, (taps * c_out, cdiv(c_in, block_c)),
                          dict(KERNEL_W=kernel_w, BLOCK_S=block_s, BLOCK_C=block_c), 4,
                          device=dy.device, target=target)
        self.sum_args = (c_out, c_in, splits) + tuple(out.element_strides())

    def workspace(self, stream):
        if self.target is not None:
            return placeholder(self.partials, np.float32)
        return CUDAArray.empty(self.partials, np.float32, self.device, stream)

    def partial_sums(self, stream, dy, x):
        """The float32 partial sums (splits, R * S, K, C) of the weight gradient."""
        part = self.workspace(stream)
        self.units(stream,
                   # pointers
                   dy, x, part,
                   # sizes, strides
                   *self.unit_args)
        return part

    def run(self, stream, dy, x, out):
        part = self.partial_sums(stream, dy, x)
        self.sum(stream,
                 # pointers
                 part, out,
                 # sizes, strides
                 *self.sum_args)

