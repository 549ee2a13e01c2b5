"""embedding_bag: sums, means or maxima of bags of embedding rows, without the (bags, rows)
intermediate a loop of embeddings would need per bag.

The bags (rows of a 2-D input, or 1-D input cut at `offsets`) are laid out as a (bags,
longest bag) matrix of positions in the input with a mask of those that hold an index (not
padding_idx, not past the bag's end); each index's row is looked up once and the rows are
reduced along the bag axis.
"""

import math

import numpy as np

from ...autograd.function import name_node
from ...ops import elementwise as ew
from ...ops.creation import tensor
from .sparse import _check_padding_idx, check_indices, embedding

_MODES = ("sum", "mean", "max")


def _bag_bounds(input, offsets, include_last_offset):
    """(start, end) of each bag in the flattened input."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        length = input.shape[1]
        return [(b * length, (b + 1) * length) for b in range(input.shape[0])]
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None or offsets.ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor but got "
                         f"{None if offsets is None else offsets.ndim}")
    starts = [int(v) for v in offsets.tolist()]
    if starts and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {starts[0]}")
    if starts and starts[-1] > input.shape[0]:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                           f"{input.shape[0]} but got offsets[-1] of {starts[-1]}")
    ends = starts[1:] + [input.shape[0]]
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    return list(zip(starts, ends))


def _layout(bounds, device):
    """(bags, longest) positions into the flat input and the mask of real positions."""
    longest = max([end - start for start, end in bounds] + [1])
    positions = np.zeros((len(bounds), longest), dtype=np.int64)
    real = np.zeros((len(bounds), longest), dtype=bool)
    for bag, (start, end) in enumerate(bounds):
        positions[bag, :end - start] = np.arange(start, end)
        real[bag, :end - start] = True
    return tensor(positions, device=device), tensor(real, device=device)


def _check_args(input, weight, mode, per_sample_weights):
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    check_indices(input, "embedding_bag")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding_bag: 'weight' must be 2-D, got shape "
                           f"{list(weight.shape)}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                f"on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: per_sample_weights ({list(per_sample_weights.shape)}"
                             f") must have the shape of input ({list(input.shape)})")
    if input.numel() and input.device.type == "cpu" and bool(
            ((input < 0) | (input >= weight.shape[0])).any()):
        raise IndexError(f"embedding_bag: index out of range in self (weight has "
                         f"{weight.shape[0]} rows)")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """For each bag of indices, the sum, mean or max of its rows of `weight` (zeros for an empty
    bag); `per_sample_weights` scales each row ("sum" only); `padding_idx` rows are skipped."""
    _check_args(input, weight, mode, per_sample_weights)
    padding_idx = _check_padding_idx(padding_idx, weight.shape[0])
    positions, real = _layout(_bag_bounds(input, offsets, include_last_offset), input.device)
    flat = input.reshape(-1)
    indices = flat.index_select(0, positions.reshape(-1)).reshape(positions.shape)
    if padding_idx is not None:
        real = real & (indices != padding_idx)
    looked_up = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    rows = looked_up.index_select(0, positions.reshape(-1)).reshape(
        tuple(positions.shape) + (weight.shape[1],))
    mask = real.unsqueeze(2)
    if mode == "max":
        best = ew.where(mask, rows, -math.inf).max(1)[0]
        return name_node(ew.where(real.any(1).unsqueeze(1), best, 0.0), "EmbeddingBagBackward0")
    if per_sample_weights is not None:
        scale = per_sample_weights.reshape(-1).index_select(0, positions.reshape(-1))
        rows = rows * scale.reshape(positions.shape).unsqueeze(2)
    total = ew.where(mask, rows, 0.0).sum(1)
    if mode != "sum":
        total = total / ew.clamp_min(real.sum(1, keepdim=True).to(total.dtype), 1)
    return name_node(total, "EmbeddingBagBackward0")
