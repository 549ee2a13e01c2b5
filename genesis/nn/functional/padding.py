"""`pad`: constant padding (negative amounts crop) and reflect/replicate/circular padding."""

import numpy as np

from ... import dtypes
from ...autograd.function import Function
from ...ops import creation


def _pairs(pad, ndim):
    """(dim, before, after) for each padded dim; `pad` lists the last dim's pair first."""
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise ValueError(f"Padding length should be less than or equal to two times the input "
                         f"dimension but got padding length {len(pad)} and input of dimension "
                         f"{ndim}")
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


class ConstantPad(Function):
    """`x` surrounded by `value`; negative amounts remove elements instead."""

    @staticmethod
    def forward(ctx, x, pad, value):
        ctx.pad = pad
        shape = list(x.shape)
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        for dim, before, after in _pairs(pad, x.ndim):
            size = shape[dim]
            shape[dim] = size + before + after
            if shape[dim] < 0:
                raise RuntimeError(f"constant_pad_nd: The input size {size}, plus negative padding "
                                   f"{before} and {after} resulted in a negative output size, "
                                   f"which is invalid. Check dimension {dim} of your input.")
            src[dim] = slice(max(-before, 0), size - max(-after, 0))
            dst[dim] = slice(max(before, 0), shape[dim] - max(after, 0))
        out = creation.full(shape, value, dtype=x.dtype, device=x.device)
        if out.numel() and x.numel():
            out[tuple(dst)].copy_(x[tuple(src)])
        return out

    @staticmethod
    def backward(ctx, grad):
        return ConstantPad.apply(grad, tuple(-p for p in ctx.pad), 0), None, None


def _source_index(size, before, after, mode):
    """For each output position along a dim, the input position it copies (numpy int64)."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    if mode == "circular":
        return positions % size
    period = 2 * (size - 1)
    folded = np.abs(positions) % period if period else np.zeros_like(positions)
    return np.where(folded >= size, period - folded, folded)


def _index_pad(x, pad, mode):
    for dim, before, after in _pairs(pad, x.ndim):
        size = x.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"pad: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({before}, {after}) at dimension "
                               f"{dim} of input {list(x.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("pad: Padding value causes wrapping around more than once.")
        index = creation.tensor(_source_index(size, before, after, mode), dtype=dtypes.int64,
                                device=x.device)
        x = x.index_select(dim, index)
    return x


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)/2 dims: pad = (last_before, last_after, prev_before, ...)."""
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return ConstantPad.apply(input, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: unsupported padding mode '{mode}' (constant, reflect, "
                                  "replicate and circular are supported)")
    return _index_pad(input, pad, mode)
