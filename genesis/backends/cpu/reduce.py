"""Reduction kernels on numpy.

Dims arrive normalized (a tuple of non-negative axes). Half types accumulate in float32 and are
rounded once at the end (`float32_for_half`); numpy's fixed summation order keeps every result
deterministic.
"""

import numpy as np

from ...dispatch import register
from .elementwise import float32_for_half


@register("sum", "cpu")
@float32_for_half
def sum_(x, dims, keepdim, dtype):
    """Sum over `dims` giving `dtype` (integer sums accumulate in that integer type)."""
    acc = dtype.numpy_dtype if x.dtype.kind in "biu" else None
    return np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=acc))
