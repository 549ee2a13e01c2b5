"""`pad`: constant padding (negative amounts crop) and reflect/replicate/circular padding."""

import numpy as np

from ... import dtypes, memory_formats
from ...autograd.function import Function, name_node
from ...ops import creation
from ._utils import in_format_of, laid_out


def _pairs(pad, ndim):
    """(dim, before, after) for each padded dim; `pad` lists the last dim's pair first."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{ndim}")
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


class ConstantPadNd(Function):
    """`x` surrounded by `value`; negative amounts remove elements instead."""

    @staticmethod
    def forward(ctx, x, pad, value):
        ctx.pad = pad
        shape = list(x.shape)
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        for dim, before, after in _pairs(pad, x.ndim):
            size = shape[dim]
            if size - max(-before, 0) - max(-after, 0) < 0:  # torch crops by narrow()ing first
                raise RuntimeError("narrow(): length must be non-negative.")
            shape[dim] = size + before + after
            src[dim] = slice(max(-before, 0), size - max(-after, 0))
            dst[dim] = slice(max(before, 0), shape[dim] - max(after, 0))
        out = creation.full(shape, value, dtype=x.dtype, device=x.device)
        if out.numel() and x.numel():
            out[tuple(dst)].copy_(x[tuple(src)])
        return out

    @staticmethod
    def backward(ctx, grad):
        return ConstantPadNd.apply(grad, tuple(-p for p in ctx.pad), 0), None, None


def _source_index(size, before, after, mode):
    """For each output position along a dim, the input position it copies (numpy int64)."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    if mode == "circular":  # negative amounts crop first; the rest wraps around what is left
        low, high = max(-before, 0), size - max(-after, 0)
        return low + (np.arange(-max(before, 0), high - low + max(after, 0)) % (high - low))
    period = 2 * (size - 1)
    folded = np.abs(positions) % period if period else np.zeros_like(positions)
    return np.where(folded >= size, period - folded, folded)


def _check_dims(x, pad, mode):
    """PyTorch's rule: non-constant modes pad the last 1-3 dims of an input with one or two
    more dims (batch and channels, or channels only), and (but for circular padding, whose
    torch form has no such check) no empty non-batch dims."""
    pairs = len(pad) // 2
    if not 1 <= pairs <= 3 or x.ndim not in (pairs + 1, pairs + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular" and 0 in x.shape[-pairs - 1:]:
        raise RuntimeError(f"Expected {pairs + 1}D or {pairs + 2}D (batch mode) tensor with "
                           f"possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {list(x.shape)}")


def _check_amounts(x, pairs, mode):
    """Reflect padding as long as its dim, or circular padding longer, refused as torch's
    kernels do, last dim first, naming the input's shape and torch's argument number (#4 for
    the last dim's pair, #6 for the one before, ...); and, as torch's 1-D reflect and replicate
    kernels, negative padding that leaves no element."""
    for i, (dim, before, after) in enumerate(pairs):
        size = x.shape[dim]
        if mode == "reflect" and max(before, after) >= size:
            raise RuntimeError(f"Argument #{2 * i + 4}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({before}, "
                               f"{after}) at dimension {dim} of input {list(x.shape)}")
        if mode == "circular" and max(before, after) > size:
            raise RuntimeError("pad: Padding value causes wrapping around more than once.")
        if mode != "circular" and len(pairs) == 1 and size + before + after < 1:
            raise RuntimeError(f"input (W: {size}) is too small. Calculated output W: "
                               f"{size + before + after}")


def _index_pad(x, pad, mode):
    pairs = _pairs(pad, x.ndim)
    _check_dims(x, pad, mode)
    _check_amounts(x, pairs, mode)
    for dim, before, after in pairs:
        size = x.shape[dim]
        index = creation.tensor(_source_index(size, before, after, mode), dtype=dtypes.int64,
                                device=x.device)
        x = x.index_select(dim, index)
    return x


# PyTorch's node names by mode and padded dims; its circular padding ends in a slice write.
_PAD_NODES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0",
              "circular": "CopySlices"}


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)/2 dims: pad = (last_before, last_after, prev_before, ...); the
    result laid out as the input (channels-last in, channels-last out) except in circular mode,
    whose result is contiguous, as PyTorch's."""
    out = _padded(input, pad, mode, value)
    if mode == "circular":
        return laid_out(out, memory_formats.contiguous_format)
    return in_format_of(input, out)


def _padded(input, pad, mode, value):
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return ConstantPadNd.apply(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if input.dtype in (dtypes.float16, dtypes.bfloat16):  # the backward's sums round once
        out = _index_pad(input.float(), pad, mode).to(input.dtype)
    else:
        out = _index_pad(input, pad, mode)
    return name_node(out, _PAD_NODES[mode].format(len(pad) // 2))

