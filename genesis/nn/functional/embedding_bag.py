"""embedding_bag: sums, means or maxima of bags of embedding rows, without the (bags, rows)
intermediate a loop of embeddings would need per bag.

The bags (rows of a 2-D input, or 1-D input cut at `offsets`) are laid out as a (bags,
longest bag) matrix of positions in the input with a mask of those that hold an index (not
padding_idx, not past the bag's end); each index's row is looked up once and the rows are
reduced along the bag axis.
"""

import math
import warnings

import numpy as np

from ... import dtypes
from ...autograd.function import name_node
from ...ops import elementwise as ew
from ...ops.creation import tensor, zeros
from ...ops.legacy import error_type_name
from .sparse import _check_padding_idx, _renorm_rows, check_indices, embedding

_MODES = ("sum", "mean", "max")
_FAST_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)
_WEIGHT_DTYPES = _FAST_DTYPES + (dtypes.float64,)


def _check_shapes(input, weight, offsets, per_sample_weights):
    """torch's Python-level refusals of the operands' shapes, in its order."""
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2 and offsets is not None:
        raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                         "a mini-batch of fixed length sequences. However, found offsets of "
                         f"type {type(offsets)}")
    if input.ndim == 2 and input.shape[1] == 0:
        raise RuntimeError("step must be nonzero")  # torch's arange of the bags' offsets
    if input.ndim == 1 and offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if input.ndim == 1 and offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if input.ndim not in (1, 2):
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")


def _bag_bounds(input, offsets, include_last_offset):
    """(start, end) of each bag in the flattened input."""
    if input.ndim == 2:
        length = input.shape[1]
        return [(b * length, (b + 1) * length) for b in range(input.shape[0])]
    starts = [int(v) for v in offsets.tolist()]
    if starts and starts[0] != 0:
        kind = error_type_name(dtypes.promote_types(input.dtype, offsets.dtype),
                               offsets.device.type)
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {starts[0]}\n"
                           f"[ {kind}{{}} ]")
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


def _padding_row(padding_idx, num_embeddings):
    """`padding_idx` as a row number (None for none), refused in torch's kernel's words if no
    row has it."""
    if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                           f"-{num_embeddings} through {num_embeddings - 1}, but got "
                           f"{padding_idx}")
    return _check_padding_idx(padding_idx, num_embeddings)


def _read_indices(input, bounds):
    """The flat indices up to the last bag's end, or, where every bag is empty, one index 0 for
    the layout's placeholder position to read (masked out)."""
    end = max([end for _, end in bounds] + [0])
    if end == 0:
        return zeros(1, dtype=input.dtype, device=input.device)
    return input.reshape(-1)[:end]


def _check_range(input, num_embeddings, bounds, fast):
    """Indices outside [0, num_embeddings) refused as torch's CPU kernels refuse them (on other
    devices the lookup refuses them). Its `fast` kernel (sum and mean of float32 and half
    weights, no padding_idx) reads only the bags, in order, and names a position in the input;
    the others read every index."""
    flat = input.reshape(-1)
    if input.device.type != "cpu" or not bool(((flat < 0) | (flat >= num_embeddings)).any()):
        return
    values = flat.tolist()
    inside = [i for start, end in bounds for i in range(start, end)] if fast else \
        range(len(values))
    for i in inside:
        if not 0 <= values[i] < num_embeddings:
            if fast:
                raise RuntimeError(f"Index {i} of input takes value {values[i]} which is not in "
                                   f"the valid range [0, {num_embeddings})")
            raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but "
                               f"found idx to be {values[i]}")


def _check_weight(weight):
    """A weight of a type torch's kernel does not take (a floating one) refused in its words."""
    if weight.dtype not in _WEIGHT_DTYPES:
        kind = error_type_name(weight.dtype, weight.device.type)
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the "
                           f"following scalar types: Half, BFloat16, Float, Double; but got "
                           f"{kind} instead (while checking arguments for embedding_bag)")


def _check_sample_weights(weight, per_sample_weights):
    """per_sample_weights of another type than the weight's refused in torch's kernel's
    words."""
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        kind, other = (error_type_name(t.dtype, t.device.type)
                       for t in (weight, per_sample_weights))
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type {kind} does "
                           f"not equal {other} (while checking arguments for embedding_bag)")


def _checked_bags(input, weight, offsets, per_sample_weights, mode, padding_idx,
                  include_last_offset):
    """(padding_idx as a row number, the bags' bounds), after torch's kernel's checks in its
    order: padding_idx, the indices' dtype (promoted with the offsets'), the weight's, the
    offsets, per_sample_weights' dtype, the indices' range."""
    padding_idx = _padding_row(padding_idx, weight.shape[0])
    check_indices(input, "embedding_bag", dtypes.promote_types(
        input.dtype, input.dtype if offsets is None else offsets.dtype))
    _check_weight(weight)
    bounds = _bag_bounds(input, offsets, include_last_offset)
    _check_sample_weights(weight, per_sample_weights)
    _check_range(input, weight.shape[0], bounds, mode != "max" and padding_idx is None
                 and weight.dtype in _FAST_DTYPES)
    return padding_idx, bounds


def _argument_order(input, weight):
    """(input, weight), swapped with torch's warning when they come in the order of
    embedding_bag(weight, input), as torch still takes them (an int64 weight, a floating
    input)."""
    if weight.dtype is dtypes.int64 and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=3)
        return weight, input
    return input, weight


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """For each bag of indices, the sum, mean or max of its rows of `weight` (zeros for an empty
    bag); `per_sample_weights` scales each row ("sum" only); `padding_idx` rows are skipped."""
    input, weight = _argument_order(input, weight)
    _check_shapes(input, weight, offsets, per_sample_weights)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
            f"on GitHub.")
    padding_idx, bounds = _checked_bags(input, weight, offsets, per_sample_weights, mode,
                                        padding_idx, include_last_offset)
    positions, real = _layout(bounds, input.device)
    flat = _read_indices(input, bounds)
    indices = flat.index_select(0, positions.reshape(-1)).reshape(positions.shape)
    if padding_idx is not None:
        real = real & (indices != padding_idx)
    looked_up = embedding(flat, weight, None, None, norm_type, scale_grad_by_freq)
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
