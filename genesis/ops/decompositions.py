"""Matrix decompositions and solvers, as `torch.linalg`: det, slogdet, inv, solve,
solve_triangular, cholesky, qr, svd, eigh, pinv, lstsq, lu; batched over leading dims.

Each is a `Function` whose forward calls a backend kernel (numpy.linalg on the CPU) and whose
backward is the standard formula written with genesis ops, so it runs on every device and is
itself differentiable. Kernels report singular or indefinite matrices through an `info` array;
the error is raised here, worded as PyTorch's `LinAlgError`.
"""


import numpy as np

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..dispatch import kernel
from ..tensor import Tensor
from .common import broadcast_shapes, call, check_devices, wrap
from .creation import eye, zeros
from .linalg import matmul
from .named_tuples import return_type
from .reduce import amax
from .shape_copies import cat, diag_embed, tril, triu
from .elementwise import clamp_min, maximum, where


class LinAlgError(RuntimeError):
    """A matrix is singular or not positive-definite (`torch.linalg.LinAlgError`)."""


def check_matrix(op, A, square=True):
    """PyTorch's checks: a Tensor of >= 2 dims, square when asked, float32 or float64."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    name = dtypes.scalar_type_name(A.dtype)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {name}")
    if A.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {name}")


def _check_pair(op, A, B):
    check_devices(op, A, B)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{dtypes.scalar_type_name(A.dtype)} and B of type "
                           f"{dtypes.scalar_type_name(B.dtype)} instead")


def _host(array, device):
    """A backend array as a numpy array (a copy from the GPU)."""
    return kernel("to_numpy", device.type)(array)


def _raise_for(op, info, batched, describe):
    """LinAlgError for the first matrix whose info (a tensor) is non-zero, worded by
    `describe(info)`; none on meta, whose info has no values (torch checks none there)."""
    if info.is_meta:
        return
    flat = _host(info._data, info.device).reshape(-1)
    bad = flat.nonzero()[0]
    if not len(bad):
        return
    where_ = f"(Batch element {int(bad[0])}): " if batched else ""
    raise LinAlgError(f"{op}: {where_}{describe(int(flat[bad[0]]))}")


def _info_tensor(info, device):
    return wrap(info, device, dtypes.int32)


def _batch_broadcast(op, A, B):
    """A and B expanded to one batch shape (their last two dims kept)."""
    batch = broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]), op=op)
    return A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:])


# -- determinants and inverses ------------------------------------------------------------

SlogdetResult = return_type("linalg_slogdet", ("sign", "logabsdet"))
InvExResult = return_type("linalg_inv_ex", ("inverse", "info"))
SolveExResult = return_type("linalg_solve_ex", ("result", "info"))


class Det(Function):
    """det(A); d det = det * tr(A^-1 dA), so the gradient is g * det * A^-T."""

    @staticmethod
    def forward(ctx, A):
        out = wrap(call("linalg_det", A), A.device, A.dtype)
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, out = ctx.saved_tensors
        return (g * out).unsqueeze(-1).unsqueeze(-1) * inv_ex(A).inverse.mT


class Slogdet(Function):
    """(sign, log|det A|); only log|det| is differentiable, with gradient g * A^-T."""

    @staticmethod
    def forward(ctx, A):
        sign, logabs = call("linalg_slogdet", A)
        sign, logabs = wrap(sign, A.device, A.dtype), wrap(logabs, A.device, A.dtype)
        ctx.mark_non_differentiable(sign)
        ctx.save_for_backward(A)
        return sign, logabs

    @staticmethod
    def backward(ctx, g_sign, g_logabs):
        (A,) = ctx.saved_tensors
        return g_logabs.unsqueeze(-1).unsqueeze(-1) * inv_ex(A).inverse.mT


class Inv(Function):
    """(A^-1, info); d(A^-1) = -A^-1 dA A^-1, so the gradient is -A^-T g A^-T."""

    @staticmethod
    def forward(ctx, A):
        out, info = call("linalg_inv_ex", A)
        out, info = wrap(out, A.device, A.dtype), _info_tensor(info, A.device)
        ctx.mark_non_differentiable(info)
        ctx.save_for_backward(out)
        return out, info

    @staticmethod
    def backward(ctx, g, g_info):
        (out,) = ctx.saved_tensors
        return -matmul(matmul(out.mT, g), out.mT)


def det(A):
    """Determinant of each square matrix."""
    check_matrix("linalg.det", A)
    return Det.apply(A)


def slogdet(A):
    """(sign, log |det|) of each square matrix: the determinant without overflow."""
    check_matrix("linalg.slogdet", A)
    return SlogdetResult(*Slogdet.apply(A))


def inv_ex(A, *, check_errors=False):
    """(inverse, info): info is 0 or the index of a zero pivot; raises only if `check_errors`."""
    check_matrix("linalg.inv", A)
    out, info = Inv.apply(A)
    if check_errors:
        _raise_for("linalg.inv", info, A.ndim > 2,
                   lambda i: f"The diagonal element {i} is zero, the inversion could not be "
                             "completed because the input matrix is singular.")
    return InvExResult(out, info)


def inv(A):
    """Inverse of each square matrix; LinAlgError if one is singular."""
    return inv_ex(A, check_errors=True).inverse


# -- solvers ------------------------------------------------------------------------------

class Solve(Function):
    """(X, info) with A X = B, batch dims equal; gradients B: A^-T g, A: -(A^-T g) X^T."""

    @staticmethod
    def forward(ctx, A, B):
        X, info = call("linalg_solve_ex", A, B)
        X, info = wrap(X, A.device, A.dtype), _info_tensor(info, A.device)
        ctx.mark_non_differentiable(info)
        ctx.save_for_backward(A, X)
        return X, info

    @staticmethod
    def backward(ctx, g, g_info):
        A, X = ctx.saved_tensors
        gB = Solve.apply(A.mT, g)[0]
        return -matmul(gB, X.mT), gB


def _is_vector_rhs(A, B):
    """PyTorch's rule: B is a (batch of) vector(s) when 1-D or when A's shape minus one dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A, B, *, left=True, check_errors=False):
    """(X, info) with A X = B (X A = B when not `left`); B a matrix or a vector, batches
    broadcast."""
    check_matrix("linalg.solve", A)
    _check_pair("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    B2 = B.unsqueeze(-1) if vector else B
    if B2.shape[-2 if left else -1] != A.shape[-1]:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{equation} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B2.shape[-2]}x{B2.shape[-1]})")
    if not left:
        X, info = solve_ex(A.mT, B2.mT, check_errors=check_errors)
        return SolveExResult(X.mT, info)
    A2, B2 = _batch_broadcast("linalg.solve", A, B2)
    X, info = Solve.apply(A2, B2)
    if check_errors:
        _raise_for("torch.linalg.solve", info, A2.ndim > 2,
                   lambda i: "The solver failed because the input matrix is singular.")
    return SolveExResult(X.squeeze(-1) if vector else X, info)


def solve(A, B, *, left=True):
    """X with A X = B (or X A = B); LinAlgError if A is singular."""
    return solve_ex(A, B, left=left, check_errors=True).result


def _triangle(X, upper, unitriangular):
    """The part of X that a triangular matrix's entries own (strict when unit-diagonal)."""
    if upper:
        return triu(X, 1 if unitriangular else 0)
    return tril(X, -1 if unitriangular else 0)


class SolveTriangular(Function):
    """X with tri(A) X = B; gradients B: tri(A)^-T g, A: the triangle of -(gB X^T)."""

    @staticmethod
    def forward(ctx, A, B, upper, unitriangular):
        ctx.upper, ctx.unit = upper, unitriangular
        X = wrap(call("linalg_solve_triangular", A, B, upper, unitriangular), A.device, A.dtype)
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = SolveTriangular.apply(A.mT, g, not ctx.upper, ctx.unit)
        return _triangle(-matmul(gB, X.mT), ctx.upper, ctx.unit), gB, None, None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (X A = B when not `left`) for triangular A: only its `upper` or lower
    triangle is read, its diagonal taken as ones when `unitriangular`."""
    check_matrix("linalg.solve_triangular", A)
    _check_pair("linalg.solve_triangular", A, B)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation AX = B ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    A2, B2 = _batch_broadcast("linalg.solve_triangular", A, B)
    return SolveTriangular.apply(A2, B2, bool(upper), bool(unitriangular))


# -- Cholesky -----------------------------------------------------------------------------

CholeskyExResult = return_type("linalg_cholesky_ex", ("L", "info"))


class Cholesky(Function):
    """(L, info) with A = L L^T (or U^T U). Backward: phi = L^T gL with its upper part dropped
    and diagonal halved, gA = sym(L^-T phi L^-1)."""

    @staticmethod
    def forward(ctx, A, upper):
        L, info = call("linalg_cholesky_ex", A, upper)
        L, info = wrap(L, A.device, A.dtype), _info_tensor(info, A.device)
        ctx.mark_non_differentiable(info)
        ctx.upper = upper
        ctx.save_for_backward(L)
        return L, info

    @staticmethod
    def backward(ctx, g, g_info):
        (L,) = ctx.saved_tensors
        if ctx.upper:
            L, g = L.mT, g.mT
        phi = matmul(L.mT, tril(g))
        phi = tril(phi, -1) + diag_embed(phi.diagonal(0, -2, -1) * 0.5)
        left = SolveTriangular.apply(L.mT, phi, True, False)
        gA = SolveTriangular.apply(L.mT, left.mT, True, False).mT
        return (gA + gA.mT) * 0.5, None


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): the Cholesky factor of each symmetric positive-definite matrix (its lower
    triangle is read); info is the order of the first minor that is not positive-definite."""
    check_matrix("linalg.cholesky", A)
    L, info = Cholesky.apply(A, bool(upper))
    if check_errors:
        _raise_for("linalg.cholesky", info, A.ndim > 2,
                   lambda i: "The factorization could not be completed because the input is not "
                             f"positive-definite (the leading minor of order {i} is not "
                             "positive-definite).")
    return CholeskyExResult(L, info)


def cholesky(A, *, upper=False):
    """Lower (or upper) Cholesky factor; LinAlgError if a matrix is not positive-definite."""
    return cholesky_ex(A, upper=upper, check_errors=True).L


# -- QR -----------------------------------------------------------------------------------

QRResult = return_type("linalg_qr", ("Q", "R"))
_QR_MODES = ("reduced", "complete", "r")


def _copyltu(M):
    """The symmetric matrix whose lower triangle is M's."""
    return tril(M) + tril(M, -1).mT


def _qr_backward_tall(Q, R, gQ, gR):
    """Gradient of A = QR with R square and invertible: (gQ + Q copyltu(M)) R^-T,
    M = R gR^T - gQ^T Q."""
    M = matmul(R, gR.mT) - matmul(gQ.mT, Q)
    b = gQ + matmul(Q, _copyltu(M))
    return SolveTriangular.apply(R, b.mT, True, False).mT


class QR(Function):
    """(Q, R) with A = QR, Q orthonormal columns, R upper triangular."""

    @staticmethod
    def forward(ctx, A, mode):
        Q, R = call("linalg_qr", A, mode)
        Q, R = wrap(Q, A.device, A.dtype), wrap(R, A.device, A.dtype)
        ctx.mode = mode
        ctx.save_for_backward(A, Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        A, Q, R = ctx.saved_tensors
        m, n = A.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_backward_tall(Q, R, gQ, gR), None
        Y, gV = A[..., m:], gR[..., m:]
        gX = _qr_backward_tall(Q, R[..., :m], gQ + matmul(Y, gV.mT), gR[..., :m])
        return cat([gX, matmul(Q, gV)], -1), None


def qr(A, mode="reduced"):
    """(Q, R) of each matrix; mode 'reduced' (k columns), 'complete' (Q square) or 'r' (Q empty)."""
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_matrix("linalg.qr", A, square=False)
    return QRResult(*QR.apply(A, mode))


# -- SVD and eigh -------------------------------------------------------------------------

SVDResult = return_type("linalg_svd", ("U", "S", "Vh"))
EighResult = return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))


def _skew(X):
    return X - X.mT


def _off_diagonal_ratio(X, E):
    """X / E off the diagonal, zero on it (E's diagonal is zero)."""
    n = E.shape[-1]
    I = eye(n, dtype=E.dtype, device=E.device)
    return X / (E + I) * (1 - I)


def _needs_grad(A):
    return A.requires_grad and is_grad_enabled()


class SVD(Function):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. Backward for distinct singular values:
    U [(skew(U^T gU) S + S skew(Vh gVh^T)) / (S_k^2 - S_j^2) + diag(gS)] Vh, plus the parts of
    gU (gVh) outside U's (Vh's) span for tall (wide) matrices."""

    @staticmethod
    def forward(ctx, A, full_matrices):
        U, S, Vh = (wrap(x, A.device, A.dtype) for x in call("linalg_svd", A, full_matrices, True))
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        U, gU, Vh, gVh = U[..., :k], gU[..., :k], Vh[..., :k, :], gVh[..., :k, :]
        m, n = U.shape[-2], Vh.shape[-1]
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
        inner = (_skew(matmul(U.mT, gU)) * S.unsqueeze(-2)
                 + S.unsqueeze(-1) * _skew(matmul(Vh, gVh.mT)))
        inner = _off_diagonal_ratio(inner, E) + diag_embed(gS)
        if m > n:
            gUS = gU / S.unsqueeze(-2)
            inner = matmul(U, inner) + gUS - matmul(U, matmul(U.mT, gUS))
            return (matmul(inner, Vh), None)
        if m < n:
            SgVh = gVh / S.unsqueeze(-1)
            inner = matmul(inner, Vh) + SgVh - matmul(matmul(SgVh, Vh.mT), Vh)
            return (matmul(U, inner), None)
        return (matmul(matmul(U, inner), Vh), None)


def svd(A, full_matrices=True):
    """(U, S, Vh) of each matrix; full_matrices gives square U and Vh."""
    check_matrix("linalg.svd", A, square=False)
    return SVDResult(*SVD.apply(A, bool(full_matrices)))


def svdvals(A):
    """Singular values, descending (computed without U and V when no gradient is needed)."""
    check_matrix("linalg.svd", A, square=False)
    if _needs_grad(A):
        return SVD.apply(A, False)[1]
    (S,) = call("linalg_svd", A, False, False)
    return wrap(S, A.device, A.dtype)


class Eigh(Function):
    """(eigenvalues ascending, eigenvectors) of symmetric A. Backward:
    V [skew(V^T gV)/2 / (l_j - l_i) + diag(gL)] V^T."""

    @staticmethod
    def forward(ctx, A, uplo):
        L, V = call("linalg_eigh", A, uplo, True)
        L, V = wrap(L, A.device, A.dtype), wrap(V, A.device, A.dtype)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        inner = _off_diagonal_ratio(_skew(matmul(V.mT, gV)) * 0.5, E) + diag_embed(gL)
        return matmul(matmul(V, inner), V.mT), None


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L"):
    """Eigen-decomposition of symmetric matrices (triangle `UPLO` is read)."""
    _check_uplo(UPLO)
    check_matrix("linalg.eigh", A)
    return EighResult(*Eigh.apply(A, UPLO))


def eigvalsh(A, UPLO="L"):
    """Eigenvalues of symmetric matrices, ascending."""
    _check_uplo(UPLO)
    check_matrix("linalg.eigh", A)
    if _needs_grad(A):
        return Eigh.apply(A, UPLO)[0]
    L, _ = call("linalg_eigh", A, UPLO, False)
    return wrap(L, A.device, A.dtype)


# -- pseudo-inverse and least squares ------------------------------------------------------

def _tolerances(A, atol, rtol):
    """PyTorch's pinv/matrix_rank rule: rtol defaults to eps * max(m, n), or to 0 when a
    positive atol is given."""
    if rtol is None:
        atol_given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if atol_given else float(np.finfo(A.dtype.numpy_dtype).eps) * max(A.shape[-2:])
    return (0.0 if atol is None else atol), rtol


def spectrum_cutoff(values, atol, rtol):
    """max(atol, rtol * largest |value|) per matrix, shaped to broadcast against `values`;
    atol and rtol are floats or tensors of the batch shape."""
    per_matrix = lambda x: x.unsqueeze(-1) if isinstance(x, Tensor) else x  # noqa: E731
    cut = amax(values.abs(), -1, keepdim=True) * per_matrix(rtol)
    atol = per_matrix(atol)
    return maximum(cut, atol.to(cut.dtype)) if isinstance(atol, Tensor) else clamp_min(cut, atol)


def pinv_backward(g, pinvA, A):
    """Gradient of pinv at A for output gradient g (valid where the rank is locally constant)."""
    m, n = A.shape[-2:]
    pinvAh, gh = pinvA.mT, g.mT
    if m <= n:
        K = matmul(gh, pinvA)
        KpinvAh = matmul(K, pinvAh)
        return (-matmul(pinvA, K).mT + KpinvAh - matmul(matmul(A, pinvA), KpinvAh)
                + matmul(matmul(pinvAh, pinvA), gh - matmul(K, A)))
    K = matmul(pinvA, gh)
    pinvAhK = matmul(pinvAh, K)
    return (-matmul(K, pinvA).mT + matmul(matmul(gh - matmul(A, K), pinvA), pinvAh) + pinvAhK
            - matmul(matmul(pinvAhK, pinvA), A))


class Pinv(Function):
    """Moore-Penrose pseudo-inverse from the SVD (or eigh when `hermitian`), dropping singular
    values at or below max(atol, rtol * largest)."""

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        m, n = A.shape[-2:]
        if m == 0 or n == 0:
            out = zeros(*A.shape[:-2], n, m, dtype=A.dtype, device=A.device)
        elif hermitian:
            L, V = (wrap(x, A.device, A.dtype) for x in call("linalg_eigh", A, "L", True))
            inv_l = where(L.abs() > spectrum_cutoff(L, atol, rtol), 1 / L, 0.0)
            out = matmul(V * inv_l.unsqueeze(-2), V.mT)
        else:
            U, S, Vh = (wrap(x, A.device, A.dtype) for x in call("linalg_svd", A, False, True))
            inv_s = where(S > spectrum_cutoff(S, atol, rtol), 1 / S, 0.0)
            out = matmul(Vh.mT * inv_s.unsqueeze(-2), U.mT)
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, out = ctx.saved_tensors
        return pinv_backward(g, out, A), None, None, None


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Pseudo-inverse of each matrix."""
    if not isinstance(A, Tensor) or A.ndim < 2 or A.dtype not in (dtypes.float32, dtypes.float64):
        shape = list(A.shape) if isinstance(A, Tensor) else A
        name = dtypes.scalar_type_name(A.dtype) if isinstance(A, Tensor) else type(A).__name__
        raise RuntimeError(f"linalg.pinv({name}{{{shape}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    if hermitian:
        check_matrix("linalg.pinv", A)
    atol, rtol = _tolerances(A, atol, rtol)
    return Pinv.apply(A, atol, rtol, bool(hermitian))


LstsqResult = return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class Lstsq(Function):
    """(X, rank, singular values): least squares X = pinv(A) B, by LAPACK's gelsd; the
    backward is pinv's."""

    @staticmethod
    def forward(ctx, A, B, rcond):
        X, rank, S = call("linalg_lstsq", A, B, rcond)
        X, S = wrap(X, A.device, A.dtype), wrap(S, A.device, A.dtype)
        rank = wrap(rank, A.device, dtypes.int64)
        ctx.mark_non_differentiable(rank, S)
        ctx.save_for_backward(A, B)
        return X, rank, S

    @staticmethod
    def backward(ctx, g, g_rank, g_S):
        A, B = ctx.saved_tensors
        pinvA = pinv(A)
        return pinv_backward(matmul(g, B.mT), pinvA, A), matmul(pinvA.mT, g), None


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B||; rank is given for the
    drivers that compute it (all but gels), singular values for gelsd/gelss, residuals when
    m > n for gels, gelsd and gelss (the last two only when every matrix has full rank)."""
    check_matrix("torch.linalg.lstsq", A, square=False)
    _check_pair("torch.linalg.lstsq", A, B)
    if driver is not None and driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"{_DRIVERS}, but got {driver}")
    vector = B.ndim == A.ndim - 1
    B2 = B.unsqueeze(-1) if vector else B
    if B2.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    A2, B2 = _batch_broadcast("torch.linalg.lstsq", A, B2)
    X, rank, S = Lstsq.apply(A2, B2, rcond)
    driver = driver or "gelsy"
    m, n = A.shape[-2:]
    empty = zeros(0, dtype=A.dtype, device=A.device)
    has_residuals = m > n and driver != "gelsy" and (driver == "gels" or bool((rank == n).all()))
    residuals = ((matmul(A2, X) - B2) ** 2).sum(-2) if has_residuals else empty
    return LstsqResult(X.squeeze(-1) if vector else X,
                       residuals.squeeze(-1) if vector and residuals.numel() else residuals,
                       rank if driver != "gels" else zeros(0, dtype=dtypes.int64, device=A.device),
                       S if driver in ("gelsd", "gelss") else empty)


# -- LU -----------------------------------------------------------------------------------

LUResult = return_type("linalg_lu", ("P", "L", "U"))
LUFactorResult = return_type("linalg_lu_factor", ("LU", "pivots"))
LUFactorExResult = return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))


class LU(Function):
    """(P, L, U, pivots, info) with A = P L U. Backward: see `_lu_backward`."""

    @staticmethod
    def forward(ctx, A):
        packed, pivots, info = call("linalg_lu_factor", A)
        packed = wrap(packed, A.device, A.dtype)
        m, n = A.shape[-2:]
        k = min(m, n)
        L = tril(packed[..., :, :k], -1) + eye(m, k, dtype=A.dtype, device=A.device)
        U = triu(packed[..., :k, :])
        P = wrap(call("linalg_lu_permutation", pivots, m, A.dtype, device=A.device), A.device,
                 A.dtype)
        pivots, info = wrap(pivots, A.device, dtypes.int32), _info_tensor(info, A.device)
        ctx.mark_non_differentiable(P, pivots, info)
        ctx.save_for_backward(P, L, U)
        return P, L, U, pivots, info

    @staticmethod
    def backward(ctx, gP, gL, gU, g_pivots, g_info):
        P, L, U = ctx.saved_tensors
        return matmul(P, _lu_backward(L, U, gL, gU))


def _lower_unit_t_solve(L, X):
    """L^-T X for unit lower triangular L."""
    return solve_triangular(L.mT, X, upper=True, unitriangular=True)


def _solve_upper_t_right(U, X):
    """X U^-T for upper triangular U."""
    return solve_triangular(U.mT, X, upper=False, left=False)


def _lu_backward(L, U, gL, gU):
    """P^T dA for A = P L U. Square: L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T. Wide
    (U = [U1 U2], U2 = L^-1 P^T A2): A2 gets L^-T gU2 and L's gradient gains -L^-T gU2 U2^T.
    Tall (L = [L1; L2], L2 = (P^T A)2 U^-1): A2 gets gL2 U^-T and U's gains -L2^T gL2 U^-T."""
    m, n = L.shape[-2], U.shape[-1]
    if m < n:
        U1, U2, gU1, gU2 = U[..., :m], U[..., m:], gU[..., :m], gU[..., m:]
        gA2 = _lower_unit_t_solve(L, gU2)
        gL = gL - matmul(gA2, U2.mT)
        return cat([_lu_backward(L, U1, gL, gU1), gA2], -1)
    if m > n:
        L1, L2, gL1, gL2 = L[..., :n, :], L[..., n:, :], gL[..., :n, :], gL[..., n:, :]
        gA2 = _solve_upper_t_right(U, gL2)
        gU = gU - matmul(L2.mT, gA2)
        return cat([_lu_backward(L1, U, gL1, gU), gA2], -2)
    phi = tril(matmul(L.mT, gL), -1) + triu(matmul(gU, U.mT))
    return _solve_upper_t_right(U, _lower_unit_t_solve(L, phi))


def _check_pivot(pivot):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U, L unit lower triangular (partial pivoting)."""
    check_matrix("linalg.lu", A, square=False)
    _check_pivot(pivot)
    P, L, U, _, _ = LU.apply(A)
    return LUResult(P, L, U)


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info): L below the diagonal and U on and above it in one matrix."""
    check_matrix("linalg.lu_factor_ex", A, square=False)
    _check_pivot(pivot)
    _, L, U, pivots, info = LU.apply(A)
    k = min(A.shape[-2:])
    packed = _pack_lu(L, U, k)
    if check_errors:
        _raise_for("torch.linalg.lu_factor_ex", info, A.ndim > 2,
                   lambda i: f"U[{i},{i}] is zero and using it on lu_solve would result in a "
                             "division by zero.")
    return LUFactorExResult(packed, pivots, info)


def _pack_lu(L, U, k):
    """L's strict lower part and U in one m x n matrix."""
    m, n = L.shape[-2], U.shape[-1]
    lower = tril(L, -1)
    if n > k:
        lower = cat([lower, zeros(*L.shape[:-1], n - k, dtype=L.dtype, device=L.device)], -1)
    upper = U if m == k else cat([U, zeros(*U.shape[:-2], m - k, n, dtype=U.dtype,
                                            device=U.device)], -2)
    return lower + upper


def lu_factor(A, *, pivot=True):
    """(LU, pivots); RuntimeError if U has a zero on its diagonal."""
    packed, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_for("torch.linalg.lu_factor", info, A.ndim > 2,
               lambda i: f"U[{i},{i}] is zero and using it on lu_solve would result in a division "
                         "by zero. If you still want to perform the factorization, consider "
                         "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return LUFactorResult(packed, pivots)
