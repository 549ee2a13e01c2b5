"""Matrix product kernels on numpy (BLAS through np.matmul and np.einsum).

Operands arrive checked and with one dtype. Half types are multiplied in float32 and rounded once
(`float32_for_half`), as PyTorch does on the CPU.
"""

import numpy as np

from ...dispatch import register
from .elementwise import float32_for_half


@register("matmul", "cpu")
@float32_for_half
def matmul(a, b):
    """numpy's matmul, whose 1-D and batch-broadcasting rules are PyTorch's."""
    return np.asarray(np.matmul(a, b))


@register("einsum", "cpu")
@float32_for_half
def einsum(equation, *operands):
    """An explicit-output einsum (`ab,bc->ac`); always a fresh array, never a view of an input."""
    return np.array(np.einsum(equation, *operands, optimize=len(operands) > 1), copy=True)
