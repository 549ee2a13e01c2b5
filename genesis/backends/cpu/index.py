"""Indexing kernels on numpy: index/index_put, gather/scatter, nonzero, sort/topk, unique.

Index arrays arrive checked (in range, non-negative, int64) and, for "index"/"index_put",
broadcast to one shape over the leading dims of the indexed array. Accumulating writes of half
types add in float32 and round once.
"""

import numpy as np

from ...dispatch import register

_HALF = (np.dtype(np.float16), np.dtype("bfloat16"))


@register("check_index", "cpu")
def check_index(index, size, allow_negative):
    """(index as a fresh int64 array with negatives wrapped, first out-of-range value or None)."""
    out = index.astype(np.int64)
    bad = (out < (-size if allow_negative else 0)) | (out >= size)
    if bad.any():
        return out, int(out[bad].flat[0])
    if allow_negative:
        out[out < 0] += size
    return out, None


def _accumulate(ufunc, out, key, values):
    """`ufunc.at(out, key, values)`, in float32 for half types."""
    if out.dtype not in _HALF:
        ufunc.at(out, key, values)
        return
    acc = out.astype(np.float32)
    ufunc.at(acc, key, values.astype(np.float32) if isinstance(values, np.ndarray) else values)
    out[...] = acc.astype(out.dtype)


@register("index", "cpu")
def index(arr, indices):
    """arr[i0, i1, ...] over the leading dims: shape indices.shape + arr.shape[len(indices):]."""
    return np.asarray(arr[tuple(indices)], order="C")


@register("index_put", "cpu")
def index_put(out, indices, values, accumulate):
    """out[i0, i1, ...] = values (or += values, duplicates summed), in place."""
    key = tuple(indices)
    if accumulate:
        _accumulate(np.add, out, key, values)
    else:
        out[key] = values


def _along_axis_key(index, dim):
    """The fancy-index key that pairs each position of `index` with itself except along dim."""
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(np.arange(n).reshape(shape))
    return tuple(key)


@register("gather", "cpu")
def gather(arr, dim, index):
    return np.asarray(arr[_along_axis_key(index, dim)], order="C")


@register("scatter", "cpu")
def scatter(out, dim, index, src, reduce):
    """Write `src` into `out` along `dim` at `index`, in place; reduce None, "add", "multiply"."""
    key = _along_axis_key(index, dim)
    if reduce is None:
        out[key] = src
    else:
        _accumulate(np.add if reduce == "add" else np.multiply, out, key, src)


@register("nonzero", "cpu")
def nonzero(arr):
    return np.argwhere(arr != 0).astype(np.int64)


@register("sort", "cpu")
def sort(arr, dim, descending, stable):
    """(values, int64 indices) sorted along `dim`, stable; NaN sorts as the largest value."""
    keys = arr.astype(np.float32) if arr.dtype in _HALF else arr
    if descending:
        order = np.flip(np.argsort(np.flip(keys, dim), axis=dim, kind="stable"), dim)
        order = arr.shape[dim] - 1 - order
    else:
        order = np.argsort(keys, axis=dim, kind="stable")
    order = np.asarray(order, dtype=np.int64, order="C")
    return np.take_along_axis(arr, order, axis=dim), order


@register("topk", "cpu")
def topk(arr, dim, k, largest, sorted_):
    """(values, indices) of the k largest (or smallest) along `dim`, in sorted order."""
    values, order = sort(arr, dim, largest, True)
    head = (slice(None),) * dim + (slice(0, k),)
    return np.asarray(values[head], order="C"), np.asarray(order[head], order="C")


@register("repeat_interleave", "cpu")
def repeat_interleave(repeats):
    """0 repeated repeats[0] times, then 1 repeated repeats[1] times, ... (int64)."""
    return np.repeat(np.arange(len(repeats), dtype=np.int64), repeats)


@register("unique", "cpu")
def unique(arr, return_inverse, return_counts, dim):
    """Sorted distinct values (of slices along `dim`), with inverse indices and counts if asked.

    Each NaN is a value of its own, as in torch (numpy would merge them)."""
    keys = arr.astype(np.float32) if arr.dtype in _HALF else arr
    outs = np.unique(keys, return_inverse=return_inverse, return_counts=return_counts, axis=dim,
                     equal_nan=False)
    outs = outs if isinstance(outs, tuple) else (outs,)
    values = outs[0].astype(arr.dtype)
    extra = [o.astype(np.int64) for o in outs[1:]]
    if return_inverse:
        extra[0] = extra[0].reshape(arr.shape if dim is None else (arr.shape[dim],))
    return (values, *extra)
