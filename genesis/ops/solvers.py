"""Solvers built on the factorizations: lu_solve (from linalg.lu_factor's output),
tensorinv and tensorsolve (tensors reshaped to square matrices), as `torch.linalg`; and the
legacy `torch.lu`, `torch.lu_unpack`, `torch.lu_solve`."""

import math

from . import decompositions as dec
from .common import call, wrap
from .creation import eye, zeros
from .linalg import matmul
from .named_tuples import return_type
from .shape_copies import tril, triu


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


LUUnpackResult = return_type("lu_unpack", ("P", "L", "U"))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from lu_factor's packed output: L unit lower (m x k), U upper (k x n)."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    P = L = U = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_pivots:
        P = wrap(call("linalg_lu_permutation", LU_pivots._data, m, LU_data.dtype,
                      device=LU_data.device), LU_data.device, LU_data.dtype)
    if unpack_data:
        L = tril(LU_data[..., :, :k], -1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = triu(LU_data[..., :k, :])
    return LUUnpackResult(P, L, U)


def lu(A, pivot=True, get_infos=False):
    """`torch.lu`: (LU, pivots) or (LU, pivots, infos)."""
    LU, pivots, info = dec.lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def torch_lu_solve(b, LU_data, LU_pivots):
    """`torch.lu_solve`: X with A X = b, arguments in the legacy order."""
    return lu_solve(LU_data, LU_pivots, b)
