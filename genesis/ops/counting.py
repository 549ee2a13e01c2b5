"""Counting and bucketing: bincount, histc, histogram, histogramdd, searchsorted, bucketize,
unique_consecutive.

Built from gather, comparisons and index_add, so each runs on every device. searchsorted is a
binary search run on all values at once: ceil(log2(M + 1)) rounds of one gather and one compare.
"""

import builtins
import math

from .. import dtypes
from ..tensor import Tensor, wrap_dim
from .creation import full, tensor, zeros
from .elementwise import clamp, logical_and, logical_not, ne, where
from .gather_scatter import gather, index_add, take
from .index import nonzero
from .named_tuples import return_type
from .ranges import linspace
from .reduce import amax, amin, any as any_, cumsum
from .shape import flatten, movedim, narrow, reshape
from .shape_copies import cat

_INTEGRAL = (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)


def bincount(input, weights=None, minlength=0):
    """Occurrences (or summed `weights`) of each value 0..max(input) in a 1-D integer tensor."""
    if input.dtype not in _INTEGRAL and input.dtype is not dtypes.bool_:
        raise NotImplementedError(f"\"bincount\" not implemented for "
                                  f"'{dtypes.scalar_type_name(input.dtype)}'")
    if input.ndim != 1 or (input.numel() and amin(input).item() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel() == 0:  # int64 zeros whatever the weights, as PyTorch
        return zeros(minlength, dtype=dtypes.int64, device=input.device)
    length = builtins.max(minlength, amax(input).item() + 1)
    if weights is None:
        dtype, weights = dtypes.int64, full((input.shape[0],), 1, dtype=dtypes.int64,
                                            device=input.device)
    else:
        dtype = dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64
        weights = weights.detach().to(dtype)
    out = zeros(length, dtype=dtype, device=input.device)
    return index_add(out, 0, input.long(), weights)


def _check_histogram_dtype(op, input):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(input.dtype)}'")


def _bin_of(x, low, high, bins):
    """Bin index of each x in `bins` equal bins over [low, high] (high falls in the last bin)."""
    index = ((x - low) * (bins / (high - low))).floor().long()
    return clamp(index, 0, bins - 1)


def _data_range(op, input, low, high, widen=1.0):
    """[low, high], taken from the data when both are equal, widened by `widen` each way when
    still empty (1 for histc, 0.5 for histogram, as PyTorch)."""
    if low > high:
        raise RuntimeError(f"{op}: max must be larger than min")
    if low == high and input.numel():
        low, high = amin(input).item(), amax(input).item()
    if low == high:
        low, high = low - widen, high + widen
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"{op}: range of [{low}, {high}] is not finite")
    return low, high


def histc(input, bins=100, min=0, max=0):
    """Counts of `input` in `bins` equal bins over [min, max] (the data's range when equal);
    elements outside are ignored."""
    _check_histogram_dtype("histogram_cpu", input)
    if bins <= 0:
        raise RuntimeError(f"histc: bins must be > 0, but got {bins}")
    low, high = _data_range("histc", input, float(min), float(max))
    x = flatten(input.detach())
    inside = logical_and(x >= low, x <= high)
    weights = inside.to(input.dtype)
    counts = zeros(bins, dtype=input.dtype, device=input.device)
    return index_add(counts, 0, _bin_of(where(inside, x, low), low, high, bins), weights)


histogram_result = return_type("histogram", ("hist", "bin_edges"))


def histogram(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): `bins` equal bins over `range` (the data's by default) or the given
    increasing edges; the last bin includes its right edge."""
    _check_histogram_dtype("histogram_cpu", input)
    x = flatten(input.detach())
    if isinstance(bins, Tensor):
        edges = bins.detach().to(input.dtype)
    else:
        low, high = (float(r) for r in range) if range is not None else (0.0, 0.0)
        low, high = _data_range("histogram", input, low, high, 0.5)
        edges = linspace(low, high, bins + 1, dtype=input.dtype, device=input.device)
    inside, index = _bin_index(x, edges)
    w = inside.to(input.dtype) if weight is None else where(inside, flatten(weight), 0.0)
    n = edges.shape[0] - 1
    hist = index_add(zeros(n, dtype=input.dtype, device=input.device), 0, index, w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(hist, edges)


def _bin_index(x, edges):
    """(whether each x lies within the edges, the index of its bin there); the last bin
    includes its right edge."""
    inside = logical_and(x >= edges[0].item(), x <= edges[-1].item())
    return inside, clamp(searchsorted(edges, x, right=True) - 1, 0, edges.shape[0] - 2)


histogramdd_result = return_type("histogramdd", ("hist", "bin_edges"))


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points along input's last dim (of size D): `bins` an int for
    every dim, D ints, or D tensors of increasing edges; `range` [min0, max0, min1, ...]
    (default: the data's); the last bin of each dim includes its right edge."""
    _check_histogram_dtype("histogramdd", input)
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    d = input.shape[-1]
    points = reshape(input.detach(), (-1, d))
    bins = [bins] * d if isinstance(bins, int) else list(bins)
    _check_histogramdd_args(input, bins, range, weight)
    edges = tuple(_dd_edges(points[:, i], b, range, i) for i, b in enumerate(bins))
    sizes = tuple(e.shape[0] - 1 for e in edges)
    inside = full((points.shape[0],), True, dtype=dtypes.bool_, device=input.device)
    linear = zeros(points.shape[0], dtype=dtypes.int64, device=input.device)
    for i, e in enumerate(edges):
        within, index = _bin_index(points[:, i], e)
        inside, linear = logical_and(inside, within), linear * sizes[i] + index
    w = inside.to(input.dtype) if weight is None \
        else where(inside, flatten(weight.detach()), 0.0)
    hist = index_add(zeros(math.prod(sizes), dtype=input.dtype, device=input.device), 0,
                     linear, w)
    hist = reshape(hist, sizes)
    if density:
        volume = 1.0
        for i, e in enumerate(edges):
            width = e[1:] - e[:-1]
            volume = volume * reshape(width, (-1,) + (1,) * (d - 1 - i))
        hist = hist / (hist.sum() * volume)
    return histogramdd_result(hist, edges)


def _check_histogramdd_args(input, bins, range, weight):
    d = input.shape[-1]
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should "
                           f"have {2 * d} elements, but got {len(range)}")
    if weight is None:
        return
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got "
                           f"input({input.dtype.name}), and weight({weight.dtype.name})")
    if tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the "
                           f"same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {list(input.shape)} and weight with shape "
                           f"{list(weight.shape)}")


def _dd_edges(x, bins, range, dim):
    """The bin edges of dimension `dim`: the given tensor, or `bins` equal bins over its range
    (the data's by default; [0, 1] for no data; widened by 0.5 each way when empty)."""
    if isinstance(bins, Tensor):
        return bins.detach().to(x.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension "
                           f"{dim}")
    if range is not None:
        low, high = float(range[2 * dim]), float(range[2 * dim + 1])
    elif x.numel():
        low, high = amin(x).item(), amax(x).item()
    else:
        low, high = 0.0, 1.0
    if low > high:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} "
                           f"max {high:g} for dimension {dim}")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{low:g}, {high:g}] is "
                           f"not finite")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return linspace(low, high, bins + 1, dtype=x.dtype, device=x.device)


def _search(sequence, values, right):
    """Insertion points of `values` (..., N) into the last dim of `sequence` (..., M)."""
    size = sequence.shape[-1]
    lo = zeros(tuple(values.shape), dtype=dtypes.int64, device=values.device)
    hi = full(tuple(values.shape), size, dtype=dtypes.int64, device=values.device)
    for _ in builtins.range(math.ceil(math.log2(size + 1))):
        mid = (lo + hi) // 2
        probe = clamp(mid, max=builtins.max(size - 1, 0))
        seen = take(sequence, probe) if sequence.ndim == 1 else gather(sequence, -1, probe)
        before = seen <= values if right else seen < values
        active = lo < hi
        lo = where(logical_and(active, before), mid + 1, lo)
        hi = where(logical_and(active, logical_not(before)), mid, hi)
    return lo


def _check_search_args(sequence, values, sorter):
    if sequence.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if sequence.ndim > 1 and tuple(sequence.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {list(sequence.shape)} and input "
                           f"value tensor {list(values.shape)}")
    if sorter is not None and tuple(sorter.shape) != tuple(sequence.shape):
        raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but "
                           f"got boundary tensor {list(sequence.shape)} and got sorter tensor "
                           f"{list(sorter.shape)}")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices where `input`'s values would be inserted into the last dim of `sorted_sequence`
    to keep it sorted (the first such place, or the last with right=True / side="right")."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                               f"{side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = tensor(input, device=sorted_sequence.device) if scalar else input
    _check_search_args(sorted_sequence, values, sorter)
    sequence = sorted_sequence.detach()
    if sorter is not None:
        sequence = gather(sequence, -1, sorter)
    dtype = dtypes.result_type(sequence, values)
    out = _search(sequence.to(dtype), values.detach().to(dtype), right)
    return out.int() if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Index of the bucket of each value: boundaries[i-1] < x <= boundaries[i] (< with right)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _run_starts(x, dim):
    """Boolean mask of the slices along `dim` that differ from the one before (the first too)."""
    rows = reshape(movedim(x, dim, 0), (x.shape[dim], -1))
    n = rows.shape[0]
    changed = ne(narrow(rows, 0, 1, n - 1), narrow(rows, 0, 0, n - 1))
    changed = any_(changed, dim=1) if rows.shape[1] else zeros(n - 1, dtype=dtypes.bool_,
                                                              device=x.device)
    first = full((1,), True, dtype=dtypes.bool_, device=x.device)
    return cat([first, changed])


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """`input` with each run of equal consecutive elements (slices along `dim`) kept once."""
    flat = dim is None
    x = flatten(input.detach()) if flat else input.detach()
    dim = 0 if flat else wrap_dim(dim, x.ndim, "unique_consecutive")
    n = x.shape[dim] if x.ndim else 1
    if n == 0:
        starts = zeros(0, dtype=dtypes.int64, device=x.device)
        values = x
        inverse = zeros(tuple(input.shape) if flat else (0,), dtype=dtypes.int64,
                        device=x.device)
    else:
        mask = _run_starts(x, dim)
        starts = flatten(nonzero(mask))
        values = x.index_select(dim, starts)
        inverse = cumsum(mask.long(), 0) - 1
        if flat:
            inverse = reshape(inverse, tuple(input.shape))
    if not (return_inverse or return_counts):
        return values
    ends = cat([starts[1:], full((1,), n, dtype=dtypes.int64, device=x.device)]) \
        if starts.numel() else starts
    out = (values,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (ends - starts,)
    return out


class CountingMethods:
    """Tensor methods of this family."""

    bincount = bincount
    histc = histc
    histogram = histogram
    histogramdd = histogramdd
    unique_consecutive = unique_consecutive

__all__ = ["bincount", "histc", "histogram", "histogramdd", "searchsorted", "bucketize",
           "unique_consecutive"]
