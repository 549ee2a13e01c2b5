"""Matrix product kernels on numpy (BLAS through np.matmul and np.einsum).

Operands arrive checked and with one dtype. Half types are multiplied in float32 and rounded once
(`float32_for_half`), as PyTorch does on the CPU.
"""

import numpy as np

from ...dispatch import register
from .elementwise import float32_for_half


@register("matmul", "cpu")
def matmul(a, b, bias=None, out=None, allow_tf32=None):
    """numpy's matmul, whose 1-D and batch-broadcasting rules are PyTorch's; plus `bias` along
    the last dim (added before the one rounding of a half type), and written into `out`, when
    given. `allow_tf32` (the CUDA kernel's TF32 choice) changes nothing: float32 stays float32
    here, as on PyTorch's CPU."""
    result = _product(a, b, bias)
    if out is None:
        return result
    np.copyto(out, result, casting="unsafe")
    return out


@float32_for_half
def _product(a, b, bias):
    """a @ b (+ bias). A batch of matrices times one matrix (every Linear layer on a 3-D input)
    is folded into a single 2-D product: numpy would otherwise run one small BLAS call per batch
    entry."""
    if a.ndim > 2 and b.ndim == 2:
        out = np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(*a.shape[:-1], b.shape[-1])
    else:
        out = np.asarray(np.matmul(a, b))
    return out if bias is None else out + bias


@register("einsum", "cpu")
@float32_for_half
def einsum(equation, *operands):
    """An explicit-output einsum (`ab,bc->ac`); always a fresh array, never a view of an input."""
    return np.array(np.einsum(equation, *operands, optimize=len(operands) > 1), copy=True)
