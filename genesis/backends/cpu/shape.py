"""Shape kernels that copy: cat, flip, roll, tril/triu.

Operands arrive with dims already normalized and dtypes already promoted by the ops layer.
Results are fresh C-contiguous arrays (never negative strides).
"""

import numpy as np

from ...dispatch import register


@register("cat", "cpu")
def cat(arrays, dim):
    return np.concatenate(arrays, axis=dim)


@register("flip", "cpu")
def flip(arr, dims):
    return np.array(np.flip(arr, axis=dims), order="C")


@register("roll", "cpu")
def roll(arr, shifts, dims):
    return np.array(np.roll(arr, shifts, axis=dims), order="C")


def _triangle_mask(arr, k, upper):
    ones = np.ones(arr.shape[-2:], bool)
    return np.triu(ones, k) if upper else np.tril(ones, k)


@register("tril", "cpu")
def tril(arr, k):
    return np.where(_triangle_mask(arr, k, False), arr, np.zeros((), arr.dtype))


@register("triu", "cpu")
def triu(arr, k):
    return np.where(_triangle_mask(arr, k, True), arr, np.zeros((), arr.dtype))
