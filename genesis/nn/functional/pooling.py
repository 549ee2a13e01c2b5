"""2-D pooling: max and average over sliding windows, and adaptive average pooling.

Windows come from `Unfold` over the input padded with the pooling's neutral value (-inf for max,
0 for average), so the gradients come from autograd over max/sum, unfold and pad.
"""

import math

import numpy as np

from ...ops import creation, linalg
from ._utils import ntuple
from .conv import Unfold, _batched, _Geometry
from .padding import pad as pad_fn


def _pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output size, including its ceil_mode rule (last window starts inside)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


class _Pool:
    """The window geometry of one pooling call over a batched (N, C, H, W) input."""

    def __init__(self, x, kernel_size, stride, padding, dilation, ceil_mode, op):
        self.kernel = ntuple(kernel_size, 2, "kernel_size")
        self.stride = ntuple(stride if stride not in (None, ()) else kernel_size, 2, "stride")
        self.padding = ntuple(padding, 2, "padding")
        self.dilation = ntuple(dilation, 2, "dilation")
        self.size = tuple(x.shape[2:])
        self.out = tuple(_pooled_size(*args, ceil_mode) for args in
                         zip(self.size, self.kernel, self.stride, self.padding, self.dilation))
        if any(o < 1 for o in self.out):
            raise RuntimeError(f"{op}: Given input size: ({x.shape[1]}x{self.size[0]}x"
                               f"{self.size[1]}). Calculated output size: ({x.shape[1]}x"
                               f"{self.out[0]}x{self.out[1]}). Output size is too small")

    def high_padding(self):
        """Padding after the input so the last window (ceil_mode) fits exactly."""
        return tuple((o - 1) * s + d * (k - 1) + 1 - p - n for o, s, d, k, p, n in
                     zip(self.out, self.stride, self.dilation, self.kernel, self.padding,
                         self.size))

    def windows(self, x, value):
        """(N, C, kh*kw, OH, OW): every window's elements, the padding filled with `value`."""
        (ph, pw), (qh, qw) = self.padding, self.high_padding()
        padded = pad_fn(x, (pw, qw, ph, qh), value=value)
        cols = Unfold.apply(padded, _Geometry(self.kernel, self.dilation, 0, self.stride))
        n, c = x.shape[:2]
        return cols.reshape(n, c, self.kernel[0] * self.kernel[1], *self.out)


def _check_half_kernel(pool, op, effective):
    for p, k, d in zip(pool.padding, pool.kernel, pool.dilation):
        limit = (d * (k - 1) + 1) if effective else k
        if p < 0 or p > limit // 2:
            raise RuntimeError(f"{op}: pad should be at most half of "
                               f"{'effective ' if effective else ''}kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")


def _unbatch(out, unbatched):
    return out.squeeze(0) if unbatched else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window; `return_indices` also gives flat positions in H*W."""
    x, unbatched = _batched(input, "max_pool2d", 2)
    pool = _Pool(x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    _check_half_kernel(pool, "max_pool2d", effective=True)
    values, argmax = pool.windows(x, -math.inf).max(2)
    if not return_indices:
        return _unbatch(values, unbatched)
    return _unbatch(values, unbatched), _unbatch(_flat_indices(pool, argmax), unbatched)


def _flat_indices(pool, argmax):
    """Window-local argmax (N, C, OH, OW) -> position h * W + w in the unpadded input."""
    kw = pool.kernel[1]
    (dh, dw), (sh, sw), (ph, pw) = pool.dilation, pool.stride, pool.padding
    oh, ow = pool.out
    row0 = creation.arange(oh, device=argmax.device).reshape(oh, 1) * sh - ph
    col0 = creation.arange(ow, device=argmax.device).reshape(1, ow) * sw - pw
    rows = row0 + (argmax // kw) * dh
    cols = col0 + (argmax % kw) * dw
    return rows * pool.size[1] + cols


def _window_counts(size, out, kernel, stride, padding, count_include_pad):
    """Elements each window averages over along one dim (PyTorch's avg_pool divisor rule)."""
    counts = []
    for o in range(out):
        start = o * stride - padding
        end = min(start + kernel, size + padding)
        if not count_include_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return np.array(counts, dtype=np.float64)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean over each window (zero padding counted unless count_include_pad=False)."""
    x, unbatched = _batched(input, "avg_pool2d", 2)
    pool = _Pool(x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    _check_half_kernel(pool, "avg_pool2d", effective=False)
    sums = pool.windows(x, 0.0).sum(2)
    if divisor_override:
        return _unbatch(sums / divisor_override, unbatched)
    rows, cols = (_window_counts(*args, count_include_pad) for args in
                  zip(pool.size, pool.out, pool.kernel, pool.stride, pool.padding))
    divisor = creation.tensor(np.outer(rows, cols), dtype=x.dtype, device=x.device)
    return _unbatch(sums / divisor, unbatched)


def _adaptive_matrix(size, out, like):
    """(out, size) matrix averaging windows [floor(i*size/out), ceil((i+1)*size/out))."""
    matrix = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return creation.tensor(matrix, dtype=like.dtype, device=like.device)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (None keeps that input dimension)."""
    x, unbatched = _batched(input, "adaptive_avg_pool2d", 2)
    sizes = ntuple(output_size, 2, "output_size")
    oh, ow = (s if o is None else o for s, o in zip(x.shape[2:], sizes))
    if any(s == 0 for s in x.shape[2:]):
        raise RuntimeError(f"adaptive_avg_pool2d: Expected input to have non-zero size for "
                           f"non-batch dimensions, but input has sizes {list(input.shape)}")
    pooled = linalg.matmul(_adaptive_matrix(x.shape[2], oh, x), x)
    pooled = linalg.matmul(pooled, _adaptive_matrix(x.shape[3], ow, x).t())
    return _unbatch(pooled, unbatched)
