"""Weight gradients of convolutions with few input channels (ResNet's RGB stem, a 1-channel
audio front end) on Hopper, by the TMA weight gradient of kernels/conv_hopper.py over an
unfolded copy of the input.

With 3 channels, neither of the general weight gradients fits: the TMA kernel needs 16 or more
channels, and the implicit GEMM gathers 2-byte elements of unaligned runs (the 7x7/2 stem,
batch 32, on an H200: 0.59 ms against cuDNN's 0.16). So the input is rewritten, once, into a
tensor whose channels are wide enough. Output pixel (a, b) of a convolution of stride
(sh, sw) meets, in input row sh * a + r - pad_h, the run of S * C elements from column
sw * b - pad_w on (channels-last). Grouping the kernel's rows by r mod sh, the unfolded input
holds at pixel (a, b) the sh runs of rows sh * a + bh - pad_h (bh < sh), each S' * sw pixels
long, S' = ceil(S / sw): U = sh * S' * sw * C channels, of which weight entry (c, r, s) meets
channel (r mod sh) * S' * sw * C + s * C + c at pixel (a + r // sh, b). That is a stride-1
convolution with an R' x 1 kernel, R' = ceil(R / sh), over U channels (the stem: 4 x 1 taps
over 48 channels, where there were 49 taps over 3), which the TMA weight gradient runs as any
other; `_fold_sum_kernel` adds its split partials and puts each entry back at its (c, r, s)
(entries of r or s past the kernel are products no weight has, and are dropped). The unfolded
input is about S' times the input: 40 MB for the stem at batch 32, written once and read by
the R' taps. On an H200 (bf16, batch 32) the stem's weight gradient
takes 0.089 ms: unfolding 0.026, the product 0.053, the fold 0.004; cuDNN's 0.163. The unfold
kernel's divisors are compile-time constants: with them at run time it took 0.12 ms.
"""

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
# Unfolded pixels a program of `_unfold_kernel` writes: 64 of a row, of up to 128 channels.
_UNFOLD_PIXELS = 64
# Weight entries a program of `_fold_sum_kernel` adds up: 128, 16 splits at a time.
_FOLD_BLOCK = 128


@triton.jit
def _unfold_kernel(
        # pointers: the input (N, C, H, W), any strides; the unfolded input (N, A, OW, U),
        # dense channels-last
        x_ptr, out_ptr,
        # sizes: the unfolded input's columns OW, the input's height and width
        cols, in_h, in_w,
        # geometry: the padding before the first row and column
        pad_h, pad_w,
        # strides, in elements
        x_sn, x_sc, x_sh, x_sw,
        # meta-parameters: the input's channels, the elements of a run (S' * PHASE_W * C) and
        # the channels written (U), the stride, the pixels and channels of a program's block
        C_IN: tl.constexpr, RUN: tl.constexpr, CHANNELS: tl.constexpr,
        PHASE_H: tl.constexpr, PHASE_W: tl.constexpr, BLOCK_P: tl.constexpr,
        BLOCK_U: tl.constexpr):
    """out[n, a, b, bh * RUN + j * C + c] = x[n, c, PHASE_H * a + bh - pad_h,
    PHASE_W * b - pad_w + j], zero outside the input and past the runs: BLOCK_P pixels of
    unfolded row a (grid axis 1) of image n (axis 2)."""
    a, n = tl.program_id(1), tl.program_id(2)
    b = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    u = tl.arange(0, BLOCK_U)
    bh, j, c = u // RUN, (u % RUN) // C_IN, u % C_IN  # constant divisors: no division
    ih = a * PHASE_H + bh - pad_h
    iw = b[:, None] * PHASE_W + (j - pad_w)[None, :]
    pixel = b < cols
    row_inside = (u < PHASE_H * RUN) & (ih >= 0) & (ih < in_h)
    inside = (pixel[:, None] & row_inside[None, :]) & (iw >= 0) & (iw < in_w)
    image = x_ptr + n.to(tl.int64) * x_sn
    value = tl.load(image + (c * x_sc + ih * x_sh)[None, :] + iw * x_sw, mask=inside,
                    other=0.0)
    row = out_ptr + ((n.to(tl.int64) * tl.num_programs(1) + a) * cols) * CHANNELS
    tl.store(row + b[:, None] * CHANNELS + u[None, :], value,
             mask=pixel[:, None] & (u < CHANNELS)[None, :])


@triton.jit
def _fold_sum_kernel(
        # pointers: float32 partials (splits, R', K, U) of the unfolded weight gradient; the
        # weight gradient (K, C, R, S)
        part_ptr, out_ptr,
        # sizes: out channels, splits
        c_out, splits,
        # strides, in elements, of the weight gradient
        out_sk, out_sc, out_sr, out_ss,
        # meta-parameters: in channels, the elements of a run and the unfolded channels, the
        # kernel's size, the unfolded taps and the stride's rows
        C_IN: tl.constexpr, RUN: tl.constexpr, CHANNELS: tl.constexpr,
        KERNEL_H: tl.constexpr, KERNEL_W: tl.constexpr, TAPS: tl.constexpr,
        PHASE_H: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK: tl.constexpr):
    """dw[k, c, r, s] = the sum over splits (`conv_hopper.sum_splits`) of the partial of
    unfolded tap r // PHASE_H, channel (r % PHASE_H) * RUN + s * C + c, rounded once."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < c_out * C_IN * KERNEL_H * KERNEL_W
    s = i % KERNEL_W
    r = (i // KERNEL_W) % KERNEL_H
    c = (i // (KERNEL_W * KERNEL_H)) % C_IN
    k = i // (KERNEL_W * KERNEL_H * C_IN)
    source = ((r // PHASE_H) * c_out + k) * CHANNELS + (r % PHASE_H) * RUN + s * C_IN + c
    acc = conv_hopper.sum_splits(part_ptr, source, mask, splits, TAPS * c_out * CHANNELS,
                                 BLOCK_S, BLOCK)
    tl.store(out_ptr + k * out_sk + c * out_sc + r * out_sr + s * out_ss,
             acc.to(out_ptr.dtype.element_ty), mask=mask)


def unfolded_channels(c_in, kernel_w, stride):
    """(elements of a run, channels written) of the unfolded input: PHASE_H runs of
    ceil(S / sw) * sw pixels of C channels, written as a multiple of 8 (a 16-byte TMA row) and
    at least 16."""
    phase_h, phase_w = stride
    run = cdiv(kernel_w, phase_w) * phase_w * c_in
    return run, max(_LEAST_CHANNELS, cdiv(phase_h * run, 8) * 8)


def weight_grad_applies(dy, x, weight_shape, conv):
    """Whether this weight gradient runs unfolded: too few input channels for the TMA kernel
    (`conv_hopper.weight_grad_applies`), out channels it takes, one group, no dilation, and
    unfolded channels that fit one of its 128-wide tiles."""
    c_out, c_in, _, kernel_w = weight_shape
    _, channels = unfolded_channels(c_in, kernel_w, conv.stride)
    return (conv_hopper.dtype_applies(x) and c_in < conv_hopper.MIN_IN_CHANNELS
            and c_out >= conv_hopper.MIN_OUT_CHANNELS and c_out % 8 == 0
            and conv.groups == 1 and conv.dilation == (1, 1) and channels <= _MOST_CHANNELS
            and conv_hopper.tma_strides(dy, 1) and conv_hopper.is_hopper(x.device))


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
        run, channels = unfolded_channels(c_in, kernel_w, conv.stride)
        rows = out_h + taps - 1
        self.unfolded_shape = (n, channels, rows, out_w)
        self.unfolded_strides = (rows * out_w * channels, 1, out_w * channels, channels)
        self.device, self.dtype, self.target = dy.device, x.dtype, target
        unfolded = placeholder(self.unfolded_shape, x.dtype, self.unfolded_strides)
        self.grad = conv_hopper.WeightGradPlan(
            dy, unfolded, placeholder((c_out, channels, taps, 1), x.dtype), (0, 0), 1, target)
        self.unfold = Launch(_unfold_kernel, (cdiv(out_w, _UNFOLD_PIXELS), rows, n),
                             dict(C_IN=c_in, RUN=run, CHANNELS=channels, PHASE_H=phase_h,
                                  PHASE_W=phase_w, BLOCK_P=_UNFOLD_PIXELS,
                                  BLOCK_U=next_pow2(channels)),
                             4, device=self.device, target=target)
        self.unfold_args = ((out_w, in_h, in_w) + tuple(conv.padding)
                            + tuple(x.element_strides()))
        splits = self.grad.partials[0]
        self.fold = Launch(_fold_sum_kernel, (cdiv(out.size, _FOLD_BLOCK),),
                           dict(C_IN=c_in, RUN=run, CHANNELS=channels, KERNEL_H=kernel_h,
                                KERNEL_W=kernel_w, TAPS=taps, PHASE_H=phase_h,
                                BLOCK_S=conv_hopper.split_block(splits), BLOCK=_FOLD_BLOCK),
                           4, device=self.device, target=target)
        self.fold_args = (c_out, splits) + tuple(out.element_strides())

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
