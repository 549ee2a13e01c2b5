"""Meta arrays: the view contract of numpy and CUDA arrays (shape, byte strides, dtype) with no
buffer behind it, so a tensor of any size costs a few fields."""

import numpy as np

from ...dtypes import NUMPY_DTYPE_TYPES
from ...memory_formats import dense_strides, elementwise_order
from ..strided import StridedFields


class MetaArray(StridedFields):
    """A strided array with no data: `strides` in bytes (as numpy's), `offset` in elements from
    the start of its storage, `dtype` a numpy dtype."""

    __slots__ = ("shape", "strides", "offset", "dtype")

    def __init__(self, shape, strides, dtype, offset=0):
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.dtype = dtype if dtype.__class__ in NUMPY_DTYPE_TYPES else np.dtype(dtype)
        self.offset = offset

    def is_contiguous(self):
        """Row-major with no gaps, dims of size 1 taking any stride (as torch counts it)."""
        expected = 1
        for size, stride in zip(reversed(self.shape), self.element_strides()[::-1]):
            if size != 1 and stride != expected:
                return 0 in self.shape
            expected *= size
        return True

    def extent(self):
        """The elements of storage this view reaches, from its offset (0 when empty)."""
        if 0 in self.shape:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.element_strides()))

    def __repr__(self):
        return (f"MetaArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
                f"offset={self.offset})")


def dense(shape, dtype, order=None):
    """A fresh array of `shape`, dense with its dims in `order` (outermost first; None: row
    major)."""
    shape = tuple(shape)
    order = range(len(shape)) if order is None else order
    dtype = np.dtype(dtype)
    strides = dense_strides(shape, order)
    return MetaArray(shape, [s * dtype.itemsize for s in strides], dtype)


def elementwise_result(shape, dtype, operands):
    """A fresh array of `shape` laid out as an elementwise result of the array `operands`
    (memory_formats.elementwise_order, the rule the CPU kernels follow)."""
    shape = tuple(shape)
    strides = tuple(broadcast_strides(x, shape) for x in operands
                    if isinstance(x, MetaArray) and x.ndim)
    return dense(shape, dtype, elementwise_order(shape, strides) if strides else None)


def broadcast_strides(x, shape):
    """`x`'s element strides viewed as `shape` (broadcast dims get 0)."""
    lead = len(shape) - x.ndim
    return (0,) * lead + tuple(s if n == size else 0 for n, s, size
                               in zip(x.shape, x.element_strides(), shape[lead:]))


def laid_out_as(out, x):
    """`out`, of `x`'s rank, in `x`'s dim order (a convolution keeps channels-last)."""
    if out.ndim != x.ndim:
        return out
    return dense(out.shape, out.dtype, elementwise_order(out.shape, (x.element_strides(),)))
