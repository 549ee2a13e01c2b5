"""2-D convolutions on numpy, built from the kernel taps' views.

A convolution sums, over the kernel taps (r, s), the weight slice W[:, :, r, s] times the input
pixels that tap reads: a strided view of the padded input, shifted by (r, s) times the dilation.
The forward gathers those views into one matrix per group (im2col) and makes one large matmul;
the weight gradient multiplies the output gradient by the same matrix; the transposed
convolution (also the input gradient) makes every tap's product in one matmul and adds each
back into the strided view of the output it belongs to. Samples and pixels share the matmul
columns, so each product is one large BLAS call, and no gradient goes through a graph of strided
views. These are the CPU's forms of the CUDA backend's implicit-GEMM kernels (same names and
arguments, and the output laid out as the input: channels-last or not); half types compute in
float32 and round once.
"""

import numpy as np

from ...dispatch import register
from .elementwise import float32_for_half


def _channels_fast(x):
    """True when `x`'s channels (dim 1) are its unit-stride dim: a channels-last layout."""
    return x.shape[1] > 1 and x.strides[1] == x.itemsize


def _laid_out_as(out, x):
    """`out` (N, C, H, W), channels-last when `x` is and contiguous otherwise, as the CUDA
    kernels lay out their output (a transposed convolution's is a view of a padded buffer)."""
    if not _channels_fast(x):
        return np.ascontiguousarray(out)
    return np.ascontiguousarray(out.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _out_size(size, kernel, stride, padding, dilation):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))


def _padded(x, padding):
    (ph, pw) = padding
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else x


def _tap(x, r, s, size, stride, dilation):
    """The (..., H_out, W_out) view of the padded `x` that kernel tap (r, s) reads."""
    (ho, wo), (sh, sw), (dh, dw) = size, stride, dilation
    return x[..., r * dh:r * dh + (ho - 1) * sh + 1:sh, s * dw:s * dw + (wo - 1) * sw + 1:sw]


def _grouped(x, groups):
    """(N, C, H, W) as (N, groups, C/groups, H, W)."""
    n, c = x.shape[:2]
    return x.reshape(n, groups, c // groups, *x.shape[2:])


def _by_group(a, groups):
    """(N, C, H, W) as (groups, C/groups, N * H * W): one matrix per group, samples and pixels
    along the columns, so that each group's product is a single large matmul."""
    n, c, h, w = a.shape
    return a.reshape(n, groups, c // groups, h * w).transpose(1, 2, 0, 3).reshape(
        groups, c // groups, n * h * w)


def _from_groups(a, n, size):
    """(groups, C/groups, N * H * W) back to (N, C, H, W)."""
    groups, c = a.shape[:2]
    return a.reshape(groups, c, n, *size).transpose(2, 0, 1, 3, 4).reshape(n, groups * c, *size)


def _columns(x, kernel, size, stride, padding, dilation, groups):
    """The input pixels every tap reads for every output position, as one (groups,
    C/g * R * S, N * H_out * W_out) matrix per group (im2col, rows in the weight's order)."""
    xg = _grouped(_padded(x, padding), groups)
    n, c_g = x.shape[0], x.shape[1] // groups
    cols = np.empty((groups, c_g, *kernel, n, *size), x.dtype)
    for r in range(kernel[0]):
        for s in range(kernel[1]):
            cols[:, :, r, s] = _tap(xg, r, s, size, stride, dilation).transpose(1, 2, 0, 3, 4)
    return cols.reshape(groups, c_g * kernel[0] * kernel[1], n * size[0] * size[1])


@register("conv2d_igemm", "cpu")
@float32_for_half
def conv2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size=None):
    """The convolution of (N, C, H, W) `x` with (C_out, C/groups, R, S) `weight` (+ bias);
    `out_size` (H, W) may cut the output short of its full size."""
    size = tuple(out_size or _out_size(x.shape[2:], weight.shape[2:], stride, padding, dilation))
    cols = _columns(x, weight.shape[2:], size, stride, padding, dilation, groups)
    out = _from_groups(weight.reshape(groups, weight.shape[0] // groups, -1) @ cols, x.shape[0],
                       size)
    return _laid_out_as(out if bias is None else out + bias.reshape(1, -1, 1, 1), x)


@register("conv_transpose2d_igemm", "cpu")
@float32_for_half
def conv_transpose2d_igemm(x, weight, bias, stride, padding, dilation, groups, out_size):
    """The transposed convolution of (N, C_in, H, W) `x` with (C_in, C_out/groups, R, S)
    `weight` (+ bias) into an (N, C_out, *out_size) result: one matmul gives every tap's
    product, and each is added into the strided view of the padded output that the forward
    convolution would have read there."""
    c_in, c_out_g, taps_r, taps_s = weight.shape
    n, _, h, w = x.shape
    (ph, pw), (dh, dw), (sh, sw) = padding, dilation, stride
    extent = (max(out_size[0] + 2 * ph, (h - 1) * sh + (taps_r - 1) * dh + 1),
              max(out_size[1] + 2 * pw, (w - 1) * sw + (taps_s - 1) * dw + 1))
    wg = weight.reshape(groups, c_in // groups, c_out_g * taps_r * taps_s).transpose(0, 2, 1)
    products = (wg @ _by_group(x, groups)).reshape(groups, c_out_g, taps_r, taps_s, n, h, w)
    out = np.zeros((groups, c_out_g, n, *extent), products.dtype)
    for r in range(taps_r):
        for s in range(taps_s):
            _tap(out, r, s, (h, w), stride, dilation)[...] += products[:, :, r, s]
    out = out[..., ph:ph + out_size[0], pw:pw + out_size[1]].transpose(2, 0, 1, 3, 4)
    out = out.reshape(n, groups * c_out_g, *out_size)
    return _laid_out_as(out if bias is None else out + bias.reshape(1, -1, 1, 1), x)


@register("conv2d_igemm_weight_grad", "cpu")
@float32_for_half
def conv2d_igemm_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups,
                             channels_last=False):
    """The gradient of the convolution's (C_out, C/groups, R, S) weight from its input `x` and
    output gradient `grad`: grad times the taps' views of the padded input, summed over samples
    and output pixels; channels-last when `channels_last`, as the CUDA kernels lay it out."""
    cols = _columns(x, weight_shape[2:], grad.shape[2:], stride, padding, dilation, groups)
    dw = (_by_group(grad, groups) @ cols.transpose(0, 2, 1)).reshape(weight_shape)
    return np.ascontiguousarray(dw.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) \
        if channels_last else dw
