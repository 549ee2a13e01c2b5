"""Shared pieces of the indexing kernels: operand strides over an iteration shape, merging
them (with contiguous copies of what does not merge), and reading a device integer on the host.
"""

from math import prod

import numpy as np

from ..runtime import driver, sync_debug
from ..runtime.array import CUDAArray
from ..runtime.graphs import check_not_capturing
from ..runtime.stream import current_stream_handle
from ._strided_indexing import MAX_DIMS, coalesce

INT64 = np.dtype(np.int64)


def numel(shape):
    """The element count of `shape`."""
    return prod(shape)


def strides_over(arr, shape):
    """`arr`'s element strides broadcast to `shape` (0 on new and broadcast dims)."""
    lead = len(shape) - arr.ndim
    own = arr.element_strides()
    return (0,) * lead + tuple(st if size == full else 0
                               for size, st, full in zip(arr.shape, own, shape[lead:]))


def broadcast_view(arr, shape):
    """`arr` broadcast to `shape` (a view)."""
    item = arr.itemsize
    return CUDAArray(arr.storage, shape, tuple(s * item for s in strides_over(arr, shape)),
                     arr.offset, arr.dtype)


class Operand:
    """An array read over an iteration shape: broadcast over `region` (a leading part of the
    iteration shape, `pad` trailing dims not reached)."""

    __slots__ = ("arr", "pad", "region")

    def __init__(self, arr, region, pad=0):
        self.arr, self.region, self.pad = arr, tuple(region), pad

    def strides(self):
        return strides_over(self.arr, self.region) + (0,) * self.pad

    def make_contiguous(self):
        """Replace `arr` by a contiguous copy of it broadcast over `region`."""
        from .copy import strided_copy
        full = CUDAArray.empty(self.region, self.arr.dtype, self.arr.device)
        strided_copy(full, broadcast_view(self.arr, self.region),
                     current_stream_handle(self.arr.device))
        self.arr = full


def fit(shape, fixed, operands):
    """(merged sizes, {name: merged strides}) of `shape` over the `fixed` strides ({name:
    strides}) and the `operands` ({name: Operand}). When more than MAX_DIMS dims remain, the
    operands are copied contiguous (the only copies the indexing kernels make) and merged again;
    NotImplementedError when that is still too many."""
    for attempt in range(2):
        names = list(fixed) + list(operands)
        strides = list(fixed.values()) + [o.strides() for o in operands.values()]
        sizes, merged = coalesce(shape, *strides)
        if len(sizes) <= MAX_DIMS:
            return sizes, dict(zip(names, merged))
        if attempt == 0:
            for o in operands.values():
                o.make_contiguous()
    raise NotImplementedError(f"genesis: indexing on cuda over more than {MAX_DIMS} dims that "
                              f"do not merge (shape {list(shape)})")


def value_entry(value, dtype):
    """(Triton type, Python value) of a scalar written into an array of `dtype`."""
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return "fp64", float(value)
    return "i64", int(value)


def read_int64(arr, position):
    """The int64 element at `position` of the contiguous `arr`, on the host (waits for the
    stream: a device-to-host sync)."""
    stream = current_stream_handle(arr.device)
    check_not_capturing("reading a data-dependent size or value on the host (nonzero, "
                        "masked_select, unique, boolean-mask indexing...)", stream)
    host = np.zeros(1, INT64)
    sync_debug.warn_or_error_on_sync()
    driver.memcpy_dtoh(host.ctypes.data, arr.ptr + position * 8, 8, stream)
    driver.stream_synchronize(stream)
    return int(host[0])
