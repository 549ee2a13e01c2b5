"""Solvers built on the factorizations: lu_solve (from linalg.lu_factor's output),
tensorinv and tensorsolve (tensors reshaped to square matrices), as `torch.linalg`."""

import math

from . import decompositions as dec
from .common import call, wrap
from .linalg import matmul
from .shape import tril, triu


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (A^T X = B when `adjoint`; X A = B when not `left`), A = P L U given as
    linalg.lu_factor's (LU, pivots)."""
    dec.check_matrix("linalg.lu_solve", LU)
    if not left:
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    if B.shape[-2] != LU.shape[-1]:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({LU.shape[-2]}x{LU.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    n = LU.shape[-1]
    P = wrap(call("linalg_lu_permutation", pivots._data, n, LU.dtype, device=LU.device),
             LU.device, LU.dtype)
    L, U = tril(LU, -1), triu(LU)
    if adjoint:
        Y = dec.solve_triangular(U.mT, B, upper=False)
        return matmul(P, dec.solve_triangular(L.mT, Y, upper=True, unitriangular=True))
    Y = dec.solve_triangular(L, matmul(P.mT, B), upper=False, unitriangular=True)
    return dec.solve_triangular(U, Y, upper=True)


def _check_square_split(left, right, what):
    if math.prod(left) != math.prod(right):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[{what}:]) "
                           f"== prod(self.shape[:{what}]), but got {math.prod(right)} != "
                           f"{math.prod(left)}")


def tensorinv(A, ind=2):
    """The tensor X with tensordot(X, A, ind) the identity: A's first `ind` dims against the
    rest, inverted as one square matrix."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    _check_square_split(left, right, "ind")
    return dec.inv(A.reshape(math.prod(left), math.prod(right))).reshape(*right, *left)


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B; `dims` of A are moved to the end first."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        rest = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*rest, *dims)
    left, right = tuple(A.shape[:B.ndim]), tuple(A.shape[B.ndim:])
    _check_square_split(left, right, "other.ndim")
    X = dec.solve(A.reshape(math.prod(left), math.prod(right)), B.reshape(-1))
    return X.reshape(*right)
