"""Shape kernels that copy: cat, flip, roll, tril/triu.

Operands arrive with dims already normalized and dtypes already promoted by the ops layer.
Results are fresh C-contiguous arrays (never negative strides).
"""

import numpy as np

from ...dispatch import register


@register("cat", "cpu")
def cat(arrays, dim):
    """np.concatenate into a C-ordered result (its own keeps the inputs' layout, transposed
    inputs giving a transposed result where PyTorch's cat is contiguous)."""
    shape = list(arrays[0].shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    return np.concatenate(arrays, axis=dim, out=np.empty(shape, arrays[0].dtype))


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
