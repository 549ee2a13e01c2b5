"""Functions of matrices built from the decompositions: norms of every order, matrix_power,
matrix_rank, cross, multi_dot, and the `torch.*` forms of the linear-algebra ops (`genesis.det`,
`genesis.inverse`, `genesis.svd` with its (U, S, V) convention, `genesis.cholesky_solve`, ...).
`svd_lowrank` and `pca_lowrank` are PyTorch's randomized low-rank SVD. All are compositions of
differentiable genesis ops.
"""

import math

from .. import dtypes
from ..memory_formats import contiguous_format
from . import decompositions as dec
from .common import broadcast_shapes, check_devices, wrap_dim
from .creation import eye, ones_like, zeros
from .householder import householder_product as orgqr
from .linalg import matmul
from .named_tuples import return_type
from .random import randn
from .reduce import amax, amin, cumprod, sum, vector_norm
from .shape_copies import cat
from .solvers import lu, lu_unpack, torch_lu_solve as lu_solve

_INF = math.inf


def _svd_norm(A, ord, rows, cols):
    """Norms read off the singular values: 2 (largest), -2 (smallest), 'nuc' (their sum)."""
    S = dec.svdvals(A.movedim((rows, cols), (-2, -1)))
    if ord == "nuc":
        return sum(S, -1)
    return amax(S, -1) if ord == 2 else amin(S, -1)


def _abs_sum_norm(A, ord, rows, cols):
    """1/-1: max/min column sum of |A|; inf/-inf: max/min row sum."""
    summed, other = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = sum(A.abs(), summed, keepdim=True)
    pick = amax if ord > 0 else amin
    return pick(sums, other, keepdim=True).squeeze((rows, cols))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """`linalg.matrix_norm`: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf over the two dims `dim`."""
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 "
                           f"dimensions, got {A.ndim}")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, _INF, -_INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtypes.as_dtype(dtype))
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtypes.scalar_type_name(A.dtype)}")
    rows, cols = (wrap_dim(d, A.ndim, "linalg.matrix_norm") for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    out = _svd_norm(A, ord, rows, cols) if ord in ("nuc", 2, -2) else \
        _abs_sum_norm(A, ord, rows, cols)
    if keepdim:
        out = out.unsqueeze(min(rows, cols)).unsqueeze(max(rows, cols))
    return out


def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over one or two dimensions `dim` (`torch.frobenius_norm`)."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    return vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input, dim=(0, 1), keepdim=False):
    """The sum of the singular values of the matrices over `dim` (the first two dims by
    default); `nuclear_norm(input, keepdim)` as in PyTorch also works."""
    if isinstance(dim, bool):
        dim, keepdim = (0, 1), dim
    return matrix_norm(input, "nuc", tuple(dim), keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """`linalg.norm`: a vector norm (one dim, or a 1-D input) or a matrix norm (two dims, or a
    2-D input when `ord` is given); ord None over no dim is the 2-norm of the flattened input."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    if (dim is not None and len(dim) == 2) or (dim is None and A.ndim == 2):
        return matrix_norm(A, ord, dim or (-2, -1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Expected a number for ord, got {ord!r}")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A, p=None):
    """Condition number: ||A|| ||A^-1|| in norm `p` (ratio of extreme singular values for 2)."""
    if p in (None, 2, -2):
        S = dec.svdvals(A)
        ratio = S[..., 0] / S[..., -1]
        return ratio if p in (None, 2) else 1 / ratio
    return matrix_norm(A, p) * matrix_norm(dec.inv(A), p)


def matrix_power(A, n):
    """A^n by repeated squaring; n < 0 inverts first, n == 0 gives identities."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {A.shape[-2] if A.ndim > 1 else A.shape[0]} by {A.shape[-1]} "
                           "matrices")
    if n == 0:  # as PyTorch: A's copy overwritten, so A's gradient is zeros (not None)
        return A.clone(memory_format=contiguous_format).copy_(
            eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(*A.shape))
    if n < 0:
        A, n = dec.inv(A), -n
    result, power = None, A
    while n:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if n:
            power = matmul(power, power)
    return result if result is not A else A.clone(memory_format=contiguous_format)


def matrix_exp(A):
    """exp(A) by scaling and squaring: the degree-18 Taylor polynomial (Horner form) of
    A / 2^s with ||A / 2^s||_1 <= 1/2 (truncation below 1e-22), squared s times; a
    composition of matmuls, so its gradient is exact."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: expected A to be batch of square matrices, but "
                           f"got {A.shape[-2] if A.ndim > 1 else A.shape[0]} by {A.shape[-1]}")
    if A.numel() == 0:
        return A.clone()
    norm = float(amax(sum(A.detach().abs(), -2)).item())
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    X = A / 2 ** squarings
    I = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    P = I
    for k in range(18, 0, -1):
        P = I + matmul(X, P) / k
    for _ in range(squarings):
        P = matmul(P, P)
    return P


def vander(x, *, N=None):
    """Columns x^0, x^1, ..., x^(N-1) (N defaults to x's last size)."""
    N = x.shape[-1] if N is None and x.ndim else N
    if N is None or N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(*x.shape, N - 1)
    return cumprod(cat([ones_like(x.unsqueeze(-1)), powers], -1), -1, dtype=x.dtype)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """Number of singular values (|eigenvalues| when hermitian) above max(atol, rtol * largest)."""
    dec.check_matrix("linalg.matrix_rank", A, square=bool(hermitian))
    atol, rtol = dec._tolerances(A, atol, rtol)
    values = dec.eigvalsh(A.detach()).abs() if hermitian else dec.svdvals(A.detach())
    if values.shape[-1] == 0:
        return zeros(*A.shape[:-2], dtype=dtypes.int64, device=A.device)
    return sum(values > dec.spectrum_cutoff(values, atol, rtol), -1)


def _cross_dim(a, b, dim):
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape), op="linalg.cross")
    if dim is None:
        sized = [d for d, s in enumerate(shape) if s == 3]
        if not sized:
            raise RuntimeError("no dimension of size 3 in input")
        return sized[0]
    return wrap_dim(dim, len(shape), "linalg.cross")


def _cross(op, a, b, dim):
    check_devices(op, a, b)
    if a.ndim != b.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    d = _cross_dim(a, b, dim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim if dim is not None else d} must have "
                           f"length 3. Got {a.shape[d]} and {b.shape[d]}")
    return a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d)


def linalg_cross(input, other, *, dim=-1):
    """Cross product of 3-vectors along `dim`, broadcasting the other dims."""
    return _cross("linalg.cross", input, other, dim)


def cross(input, other, dim=None):
    """`torch.cross`: as linalg.cross, but dim None means the first dim of size 3."""
    return _cross("linalg.cross", input, other, dim)


def multi_dot(tensors):
    """A chain of matrix products; the first and last may be vectors."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            which = {0: "first", len(tensors) - 1: "last"}.get(i)
            what = f"the {which} tensor must be 1D or 2D" if which else f"tensor {i} must be 2D"
            raise RuntimeError(f"multi_dot(): {what} but got {t.ndim}D")
    first, last = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = [tensors[0].unsqueeze(0) if first else tensors[0], *tensors[1:-1],
            tensors[-1].unsqueeze(-1) if last else tensors[-1]]
    out = _chain(mats, _chain_order([m.shape[-2] for m in mats] + [mats[-1].shape[-1]]),
                 0, len(mats) - 1)
    out = out.squeeze(0) if first else out
    return out.squeeze(-1) if last else out


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix i is
    dims[i] x dims[i + 1]); the classic dynamic program over chain lengths."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in A (a view)."""
    return A.diagonal(offset, dim1, dim2)


# -- torch.* forms ------------------------------------------------------------------------

SlogdetResult = return_type("slogdet", ("sign", "logabsdet"))
SVDResult = return_type("svd", ("U", "S", "V"))
QRResult = return_type("qr", ("Q", "R"))
TriangularSolveResult = return_type("triangular_solve", ("solution", "cloned_coefficient"))


def logdet(input):
    """log det: nan for a negative determinant, -inf for zero."""
    sign, logabs = dec.slogdet(input)
    return logabs + sign.log()


def slogdet(input):
    """(sign, log|det|) of square matrices."""
    return SlogdetResult(*dec.slogdet(input))


def inverse(input):
    """The inverse of square matrices (`linalg.inv`)."""
    return dec.inv(input)


def cholesky(input, upper=False):
    """The Cholesky factor of symmetric positive-definite matrices (lower unless `upper`)."""
    return dec.cholesky(input, upper=upper)


def svd(input, some=True, compute_uv=True):
    """`torch.svd`: (U, S, V) with V (not V^T); `some` gives the reduced form. Without
    `compute_uv`, U and V are zero-filled square matrices."""
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return SVDResult(zeros(*batch, m, m, dtype=input.dtype, device=input.device),
                         dec.svdvals(input),
                         zeros(*batch, n, n, dtype=input.dtype, device=input.device))
    U, S, Vh = dec.svd(input, full_matrices=not some)
    return SVDResult(U, S, Vh.mT)


def qr(input, some=True):
    """`torch.qr`: reduced QR when `some`, else complete."""
    return QRResult(*dec.qr(input, "reduced" if some else "complete"))


def pinverse(input, rcond=1e-15):
    """Pseudo-inverse dropping singular values below rcond * the largest."""
    return dec.pinv(input, rtol=rcond)


def cholesky_solve(B, L, upper=False):
    """X with A X = B, given A's Cholesky factor L (A = L L^T, or U^T U when `upper`)."""
    if upper:
        L = L.mT
    Y = dec.solve_triangular(L, B, upper=False)
    return dec.solve_triangular(L.mT, Y, upper=True)


def cholesky_inverse(L, upper=False):
    """A^-1 from A's Cholesky factor."""
    n = L.shape[-1]
    return cholesky_solve(eye(n, dtype=L.dtype, device=L.device).expand(*L.shape), L, upper)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """`torch.triangular_solve`: (X with op(A) X = b, op(A) = A or A^T, a copy of A)."""
    if transpose:
        X = dec.solve_triangular(A.mT, b, upper=not upper, unitriangular=unitriangular)
    else:
        X = dec.solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())


def _approximate_basis(A, q, niter, M):
    """Q with q orthonormal columns spanning about the range of A - M: A's action on a random
    normal matrix, refined by `niter` power iterations, orthonormalized by QR after each
    product (Halko, Martinsson and Tropp's randomized range finder, as PyTorch's)."""
    def times(X):
        return matmul(A, X) if M is None else matmul(A, X) - matmul(M, X)

    def transposed_times(X):
        return matmul(A.mT, X) if M is None else matmul(A.mT, X) - matmul(M.mT, X)
    dtype = A.dtype if A.dtype in (dtypes.float16, dtypes.float32, dtypes.float64) \
        else dtypes.float32
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)
    Q = dec.qr(times(R)).Q
    for _ in range(niter):
        Q = dec.qr(transposed_times(Q)).Q
        Q = dec.qr(times(Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) of a rank-q approximation of A - M (M broadcast to A), V not transposed: the
    exact SVD of A projected on an approximate basis of its range (Halko et al. 2009,
    algorithm 5.1). Differentiable through the QR and SVD it is made of."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:  # work on the tall one
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mT, A) if M is None else matmul(Q.mT, A) - matmul(Q.mT, M)
    U, S, Vh = dec.svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the principal components of A's rows: svd_lowrank of A less its column
    means (of A itself when center=False), q = min(6, m, n) by default."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A, q, niter=niter)


class MatrixFunctionsMethods:
    """Tensor methods of this family."""

    det = dec.det
    logdet = logdet
    slogdet = slogdet
    inverse = inverse
    cholesky = cholesky
    qr = qr
    pinverse = pinverse
    matrix_power = matrix_power
    cholesky_solve = cholesky_solve
    cholesky_inverse = cholesky_inverse
    triangular_solve = triangular_solve
    cross = cross
    matrix_exp = matrix_exp
    lu = lu
    lu_solve = lu_solve
    orgqr = orgqr

    def svd(self, some=True, compute_uv=True):
        """`torch.svd` of this tensor: (U, S, V), reduced unless some=False."""
        return svd(self, some, compute_uv)


__all__ = ["det", "logdet", "slogdet", "inverse", "cholesky", "svd", "qr", "pinverse",
           "matrix_power", "cholesky_solve", "cholesky_inverse", "triangular_solve", "cross",
           "matrix_exp", "lu", "lu_unpack", "lu_solve", "orgqr", "frobenius_norm", "nuclear_norm",
           "svd_lowrank", "pca_lowrank"]

det = dec.det
