"""Distances and products built on broadcasting and matmul: cdist, kron, cartesian_prod,
block_diag, addr, addbmm, chain_matmul. Each is a composition of differentiable ops, so its
gradient and its device support come from theirs."""

import builtins

from .. import dtypes
from ..autograd.function import name_node
from .autocast import autocast_policy
from .creation import zeros
from .elementwise import _inplace
from .linalg import _in_float32, _scaled_sum, addmm, addmv, baddbmm, matmul, outer
from .reduce import sum, vector_norm
from .shape import meshgrid, reshape
from .shape_copies import cat, stack


@autocast_policy("cdist")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M)."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtypes.scalar_type_name(x.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return name_node(vector_norm(diff, p, dim=-1), "CdistBackward0")


def kron(input, other):
    """Kronecker product: block (i, j, ...) is input[i, j, ...] * other."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(s for n in a_shape for s in (n, 1)))
    b = reshape(other, tuple(s for n in b_shape for s in (1, n)))
    return reshape(a * b, tuple(m * n for m, n in zip(a_shape, b_shape)))


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (itertools.product)."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod: Expect a 1D vector, but got shape "
                               f"{list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], dim=1)


def _as_block(t):
    if t.ndim > 2:
        raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                           f"Input has {t.ndim} dimensions")
    return reshape(t, (1, -1) if t.ndim < 2 else tuple(t.shape))


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of a zero matrix."""
    if not tensors:
        return zeros(1, 0)
    dtype = dtypes.result_type(*tensors)
    blocks = [_as_block(t).to(dtype) for t in tensors]
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        pad = dict(dtype=dtype, device=b.device)
        rows.append(cat([zeros(r, left, **pad), b, zeros(r, width - left - c, **pad)], dim=1))
        left += c
    return cat(rows, dim=0)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum over the batch of batch1[i] @ batch2[i]."""
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.ndim != 3:
            raise RuntimeError(f"addbmm: {name} must be a 3D tensor, got {b.ndim}D")
    return _in_float32(
        lambda i, a, b: _scaled_sum("addbmm", i, sum(matmul(a, b), dim=0), beta, alpha),
        input, batch1, batch2)


def chain_matmul(*matrices):
    """The product of 2-D matrices, left to right (`linalg.multi_dot` of matrices)."""
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


class ProductsMethods:
    """Tensor methods of this family, with the in-place forms of linalg's scaled products."""

    kron = kron
    addr = addr
    addbmm = addbmm
    addr_ = _inplace(addr, "addr_")
    addbmm_ = _inplace(addbmm, "addbmm_")
    addmm_ = _inplace(addmm, "addmm_")
    addmv_ = _inplace(addmv, "addmv_")
    baddbmm_ = _inplace(baddbmm, "baddbmm_")

__all__ = ["cdist", "kron", "cartesian_prod", "block_diag", "addr", "addbmm", "chain_matmul"]
