"""Weight gradients of convolutions with few input channels (ResNet's RGB stem, a 1-channel
audio front end) on Hopper, by the TMA weight gradient of kernels/conv_hopper.py over an
unfolded copy of the input.

With 3 channels, neither of the general weight gradients fits: the TMA kernel needs 16 or more
channels, and the implicit GEMM gathers 2-byte elements of unaligned runs (the 7x7/2 stem,
batch 32, on an H200: 0.59 ms against cuDNN's 0.16). So the input is rewritten, once, into a
tensor whose channels are wide enough:

1. Space to depth by the stride (sh, sw): input row sh * a + bh, column sw * b + bw becomes
   pixel (a, b), channel (bh, bw, c). The convolution becomes one of stride 1 whose kernel is
   ceil(R / sh) x ceil(S / sw) taps of sh * sw * C channels (taps past R, S multiply into
   weight entries that do not exist and are dropped).
2. Each kernel row's taps unrolled into channels: pixel (a, b) holds the S' taps
   (b, b + 1, ..., b + S' - 1) of the row, channel ((t * sh + bh) * sw + bw) * C + c.

The result is a stride-1 convolution with an R' x 1 kernel over U = S' * sh * sw * C channels
(the stem: 4 x 1 taps over 48 channels, where there were 49 taps over 3), which the TMA weight
gradient runs as it runs any other; `_fold_sum_kernel` then adds its split partials and puts
each entry back at its (c, r, s). The unfolded input is U / C / sh / sw times the input per
output pixel: 40 MB for the stem at batch 32, written once and read by the R' taps.
"""

import numpy as np
import triton
import triton.language as tl

from ..array_ops import as_strided
from ..launch import Launch
from ..runtime.array import CUDAArray
from . import conv_hopper
from ._strided_indexing import cdiv, next_pow2, placeholder

# The unfolded channels' least count (a TMA row of the weight gradient's input) and most (one
# 128-wide channel tile of it, so that no tap is read twice).
_LEAST_CHANNELS, _MOST_CHANNELS = conv_hopper.MIN_IN_CHANNELS, 128
# Unfolded pixels a program of `_unfold_kernel` writes: 64 rows of up to 128 channels.
_UNFOLD_ROWS = 64
_SUM_BLOCK = 1024


@triton.jit
def _unfold_kernel(
        # pointers: the input (N, C, H, W), any strides; the unfolded input (N, A, OW, U),
        # dense channels-last
        x_ptr, out_ptr,
        # sizes: unfolded pixels N * A * OW, rows A, columns OW; the input's height, width and
        # channels; channels used (S' * PHASE_H * PHASE_W * C) and written (U)
        pixels, rows, cols, in_h, in_w, c_in, used, channels,
        # geometry: the padding before the first row and column
        pad_h, pad_w,
        # strides, in elements
        x_sn, x_sc, x_sh, x_sw,
        # meta-parameters: the stride, pixels and channels a program writes
        PHASE_H: tl.constexpr, PHASE_W: tl.constexpr, BLOCK_P: tl.constexpr,
        BLOCK_U: tl.constexpr):
    """out[n, a, b, ((t * PHASE_H + bh) * PHASE_W + bw) * C + c] =
    x[n, c, PHASE_H * a + bh - pad_h, PHASE_W * (b + t) + bw - pad_w], zero outside the input
    and past the used channels."""
    p = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    u = tl.arange(0, BLOCK_U)
    n, a, b = p // (rows * cols), (p // cols) % rows, p % cols
    c, bw = u % c_in, (u // c_in) % PHASE_W
    bh, t = (u // (c_in * PHASE_W)) % PHASE_H, u // (c_in * PHASE_W * PHASE_H)
    ih = a[:, None] * PHASE_H + (bh - pad_h)[None, :]
    iw = (b[:, None] + t[None, :]) * PHASE_W + (bw - pad_w)[None, :]
    pixel = p < pixels
    inside = ((pixel[:, None] & (u < used)[None, :]) & (ih >= 0) & (ih < in_h)
              & (iw >= 0) & (iw < in_w))
    value = tl.load(x_ptr + (n * x_sn)[:, None] + (c * x_sc)[None, :] + ih * x_sh + iw * x_sw,
                    mask=inside, other=0.0)
    tl.store(out_ptr + p[:, None] * channels + u[None, :], value,
             mask=pixel[:, None] & (u < channels)[None, :])


@triton.jit
def _fold_sum_kernel(
        # pointers: float32 partials (splits, R', K, U) of the unfolded weight gradient; the
        # weight gradient (K, C, R, S)
        part_ptr, out_ptr,
        # sizes: out and in channels, unfolded channels, the kernel's height and width, splits
        c_out, c_in, channels, kernel_h, kernel_w, splits,
        # strides, in elements, of the weight gradient
        out_sk, out_sc, out_sr, out_ss,
        # meta-parameters
        TAPS: tl.constexpr, PHASE_H: tl.constexpr, PHASE_W: tl.constexpr,
        BLOCK: tl.constexpr):
    """dw[k, c, r, s] = the sum over splits of the partial of unfolded tap r // PHASE_H,
    channel ((s // PHASE_W * PHASE_H + r % PHASE_H) * PHASE_W + s % PHASE_W) * C + c, added
    in split order, rounded once."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < c_out * c_in * kernel_h * kernel_w
    s = i % kernel_w
    r = (i // kernel_w) % kernel_h
    c = (i // (kernel_w * kernel_h)) % c_in
    k = i // (kernel_w * kernel_h * c_in)
    u = ((s // PHASE_W * PHASE_H + r % PHASE_H) * PHASE_W + s % PHASE_W) * c_in + c
    source = ((r // PHASE_H) * c_out + k) * channels + u
    acc = tl.zeros((BLOCK,), tl.float32)
    for split in range(splits):
        acc += tl.load(part_ptr + split * (TAPS * c_out * channels) + source, mask=mask,
                       other=0.0)
    tl.store(out_ptr + k * out_sk + c * out_sc + r * out_sr + s * out_ss,
             acc.to(out_ptr.dtype.element_ty), mask=mask)


def unfolded_channels(c_in, kernel_w, stride):
    """(channels used, channels written) of the unfolded input: the S' taps of a kernel row
    times the stride's phases times C, written as a multiple of 8 (a 16-byte TMA row) and at
    least 16."""
    phase_h, phase_w = stride
    used = cdiv(kernel_w, phase_w) * phase_h * phase_w * c_in
    return used, max(_LEAST_CHANNELS, cdiv(used, 8) * 8)


def weight_grad_applies(dy, x, weight_shape, conv):
    """Whether this weight gradient runs unfolded: too few input channels for the TMA kernel
    (`conv_hopper.weight_grad_applies`), out channels it takes, one group, no dilation, and
    unfolded channels that fit one of its 128-wide tiles."""
    c_out, c_in, _, kernel_w = weight_shape
    _, channels = unfolded_channels(c_in, kernel_w, conv.stride)
    return (conv_hopper._dtype_applies(x) and c_in < conv_hopper.MIN_IN_CHANNELS
            and c_out >= conv_hopper.MIN_OUT_CHANNELS and c_out % 8 == 0
            and conv.groups == 1 and conv.dilation == (1, 1) and channels <= _MOST_CHANNELS
            and conv_hopper._tma_strides(dy, 1) and conv_hopper.is_hopper(x.device))


class WeightGradPlan:
    """The three launches of a few-channel weight gradient: `run(stream, dy, x, out)` unfolds
    `x` into a workspace, runs the TMA weight gradient of `dy` (channels-last) over it, and
    folds the partials into `out` (K, C, R, S)."""

    def __init__(self, dy, x, out, conv, target=None):
        n, c_out, out_h, out_w = dy.shape
        _, c_in, in_h, in_w = x.shape
        kernel_h, kernel_w = out.shape[2:]
        phase_h, phase_w = conv.stride
        taps = cdiv(kernel_h, phase_h)
        used, channels = unfolded_channels(c_in, kernel_w, conv.stride)
        rows = out_h + taps - 1
        self.unfolded_shape = (n, channels, rows, out_w)
        self.unfolded_strides = (rows * out_w * channels, 1, out_w * channels, channels)
        self.device, self.dtype, self.target = dy.device, x.dtype, target
        unfolded = placeholder(self.unfolded_shape, x.dtype, self.unfolded_strides)
        self.grad = conv_hopper.WeightGradPlan(
            dy, unfolded, placeholder((c_out, channels, taps, 1), x.dtype), (0, 0), 1, target)
        pixels = n * rows * out_w
        self.unfold = Launch(_unfold_kernel, (cdiv(pixels, _UNFOLD_ROWS),),
                             dict(PHASE_H=phase_h, PHASE_W=phase_w, BLOCK_P=_UNFOLD_ROWS,
                                  BLOCK_U=next_pow2(channels)),
                             4, device=self.device, target=target)
        self.unfold_args = ((pixels, rows, out_w, in_h, in_w, c_in, used, channels)
                            + tuple(conv.padding) + tuple(x.element_strides()))
        self.fold = Launch(_fold_sum_kernel, (cdiv(out.size, _SUM_BLOCK),),
                           dict(TAPS=taps, PHASE_H=phase_h, PHASE_W=phase_w, BLOCK=_SUM_BLOCK),
                           4, device=self.device, target=target)
        self.fold_args = ((c_out, c_in, channels, kernel_h, kernel_w, self.grad.partials[0])
                          + tuple(out.element_strides()))

    def workspace(self, stream):
        """The unfolded input: a placeholder when only compiling."""
        if self.target is not None:
            return placeholder(self.unfolded_shape, self.dtype, self.unfolded_strides)
        n, channels, rows, cols = self.unfolded_shape
        dense = CUDAArray.empty((n, rows, cols, channels), self.dtype, self.device, stream)
        return as_strided(dense, self.unfolded_shape, self.unfolded_strides, 0)

    def run(self, stream, dy, x, out):
        unfolded = self.workspace(stream)
        self.unfold(stream,
                    # pointers
                    x, unfolded,
                    # sizes, geometry, strides
                    *self.unfold_args)
        part = self.grad.partial_sums(stream, dy, unfolded)
        self.fold(stream,
                  # pointers
                  part, out,
                  # sizes, strides
                  *self.fold_args)
