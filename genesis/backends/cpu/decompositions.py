"""Matrix decomposition kernels on numpy.linalg (LAPACK), batched over leading dims.

Inputs arrive checked by genesis.ops.decompositions: float32 or float64, square where the op
needs it, batch dims already broadcast. Kernels that can fail on a singular or indefinite matrix
return an `info` array (int32, one entry per matrix, 0 when it succeeded, else LAPACK's index of
the failing pivot or minor) instead of raising, so the caller words the error as PyTorch does.
`KERNELS` lists every op here; the CUDA backend runs the same functions through the host.
"""

import numpy as np

from ...dispatch import register

KERNELS = {}


def kernel(name):
    """Register `fn` as the CPU kernel of `name` and remember it for other backends."""
    def decorate(fn):
        KERNELS[name] = fn
        return register(name, "cpu")(fn)
    return decorate


def _batched(a):
    """`a` as a stack of matrices (n, rows, cols) and a function restoring the batch shape."""
    batch = a.shape[:-2]
    return a.reshape(-1, *a.shape[-2:]), lambda x: x.reshape(*batch, *x.shape[1:])


@kernel("linalg_lu_factor")
def lu_factor(a):
    """(LU packed in one matrix, 1-based pivots int32, info int32): partial pivoting, batched."""
    stack, restore = _batched(a)
    lu = np.array(stack, copy=True)
    rows, cols = lu.shape[-2:]
    k_max = min(rows, cols)
    pivots = np.zeros((lu.shape[0], k_max), dtype=np.int32)
    info = np.zeros(lu.shape[0], dtype=np.int32)
    idx = np.arange(lu.shape[0])
    for k in range(k_max):
        p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
        pivots[:, k] = p + 1
        rows_k, rows_p = lu[idx, k].copy(), lu[idx, p].copy()
        lu[idx, k], lu[idx, p] = rows_p, rows_k
        pivot = lu[:, k, k]
        zero = pivot == 0
        info[(info == 0) & zero] = k + 1
        # a zero pivot means its column below is zero too: the factors are zero, nothing to do
        factor = lu[:, k + 1:, k] / np.where(zero, 1, pivot)[:, None]
        lu[:, k + 1:, k] = factor
        lu[:, k + 1:, k + 1:] -= factor[:, :, None] * lu[:, k, None, k + 1:]
    return restore(lu), pivots.reshape(*a.shape[:-2], k_max), info.reshape(a.shape[:-2])


def _each_info(stack, failed):
    """Per-matrix info after a batched LAPACK call raised: rerun each matrix alone."""
    info = np.zeros(stack.shape[0], dtype=np.int32)
    for i, m in enumerate(stack):
        try:
            failed(m)
        except np.linalg.LinAlgError:
            info[i] = lu_factor(m[None])[2][0] or m.shape[-1]
    return info


def _guarded(fn, stack):
    """fn(stack) with info; matrices that fail are replaced by the identity before the call."""
    try:
        return fn(stack), np.zeros(stack.shape[0], dtype=np.int32)
    except np.linalg.LinAlgError:
        info = _each_info(stack, fn)
        eye = np.broadcast_to(np.eye(stack.shape[-1], dtype=stack.dtype), stack.shape)
        return fn(np.where(info[:, None, None] > 0, eye, stack)), info


@kernel("linalg_inv_ex")
def inv_ex(a):
    """(inverse, info)."""
    stack, restore = _batched(a)
    out, info = _guarded(np.linalg.inv, stack)
    return restore(out.astype(a.dtype)), info.reshape(a.shape[:-2])


@kernel("linalg_solve_ex")
def solve_ex(a, b):
    """(X with a @ X = b, info); a and b share their batch shape, b is a stack of matrices."""
    stack, restore = _batched(a)
    rhs = b.reshape(-1, *b.shape[-2:])
    out, info = _guarded(lambda m: np.linalg.solve(m, rhs), stack)
    return restore(out.astype(a.dtype)), info.reshape(a.shape[:-2])


def _leading_minor_info(m):
    """Order of the first leading minor of `m` that is not positive-definite."""
    for k in range(1, m.shape[-1] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[-1]


@kernel("linalg_cholesky_ex")
def cholesky_ex(a, upper):
    """(lower factor L with a = L L^T, or its transpose when `upper`; info)."""
    stack, restore = _batched(a)
    lower = np.tril(stack)
    sym = lower + np.swapaxes(np.tril(stack, -1), -1, -2)
    info = np.zeros(stack.shape[0], dtype=np.int32)
    try:
        out = np.linalg.cholesky(sym)
    except np.linalg.LinAlgError:
        for i, m in enumerate(sym):
            try:
                np.linalg.cholesky(m)
            except np.linalg.LinAlgError:
                info[i] = _leading_minor_info(m)
        eye = np.broadcast_to(np.eye(sym.shape[-1], dtype=sym.dtype), sym.shape)
        out = np.linalg.cholesky(np.where(info[:, None, None] > 0, eye, sym))
    out = np.swapaxes(out, -1, -2) if upper else out
    return restore(np.ascontiguousarray(out, dtype=a.dtype)), info.reshape(a.shape[:-2])


@kernel("linalg_qr")
def qr(a, mode):
    """(Q, R) in mode 'reduced' or 'complete'; for mode 'r', Q is empty."""
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return np.zeros((0,), dtype=a.dtype), np.ascontiguousarray(r, dtype=a.dtype)
    q, r = np.linalg.qr(a, mode=mode)
    return np.ascontiguousarray(q, dtype=a.dtype), np.ascontiguousarray(r, dtype=a.dtype)


@kernel("linalg_svd")
def svd(a, full_matrices, compute_uv):
    """(U, S, Vh), or (S,) alone when not `compute_uv`."""
    if not compute_uv:
        return (np.linalg.svd(a, compute_uv=False).astype(a.dtype),)
    if 0 in a.shape[-2:]:
        return _empty_svd(a, full_matrices)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return tuple(np.ascontiguousarray(x, dtype=a.dtype) for x in (u, s, vh))


def _empty_svd(a, full_matrices):
    """The SVD of matrices with no rows or no columns (LAPACK is not called on them)."""
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    eye = lambda rows, cols: np.broadcast_to(np.eye(rows, cols, dtype=a.dtype),  # noqa: E731
                                             (*batch, rows, cols)).copy()
    return eye(m, u_cols), np.zeros((*batch, k), dtype=a.dtype), eye(v_rows, n)


@kernel("linalg_eigh")
def eigh(a, uplo, compute_v):
    """(ascending eigenvalues, eigenvectors as columns) of the symmetric matrix in triangle
    `uplo`; eigenvectors are empty when not `compute_v`."""
    if not compute_v:
        return np.linalg.eigvalsh(a, UPLO=uplo).astype(a.dtype), np.zeros((0,), dtype=a.dtype)
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return w.astype(a.dtype), np.ascontiguousarray(v, dtype=a.dtype)


@kernel("linalg_slogdet")
def slogdet(a):
    """(sign, log |det|)."""
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign, dtype=a.dtype), np.asarray(logabs, dtype=a.dtype)


@kernel("linalg_det")
def det(a):
    return np.asarray(np.linalg.det(a), dtype=a.dtype)


@kernel("linalg_solve_triangular")
def solve_triangular(a, b, upper, unitriangular):
    """X with tri(a) @ X = b, tri(a) the upper or lower triangle (unit diagonal if asked);
    a and b share their batch shape."""
    tri = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        n = a.shape[-1]
        tri = tri * (1 - np.eye(n, dtype=a.dtype)) + np.eye(n, dtype=a.dtype)
    return np.asarray(np.linalg.solve(tri, b), dtype=a.dtype)


@kernel("linalg_lstsq")
def lstsq(a, b, rcond):
    """(solution, rank int64, singular values) per matrix with LAPACK's gelsd; a and b share
    their batch shape, b is a stack of matrices."""
    sa, restore = _batched(a)
    sb = b.reshape(-1, *b.shape[-2:])
    sols, ranks, svals = [], [], []
    for m, rhs in zip(sa, sb):
        x, _, rank, s = np.linalg.lstsq(m, rhs, rcond=rcond)
        sols.append(x)
        ranks.append(rank)
        svals.append(s)
    k = min(a.shape[-2:])
    sol = np.array(sols, dtype=a.dtype).reshape(len(sols), a.shape[-1], b.shape[-1])
    return (restore(sol), np.array(ranks, dtype=np.int64).reshape(a.shape[:-2]),
            np.array(svals, dtype=a.dtype).reshape(*a.shape[:-2], k))


@kernel("linalg_lu_permutation")
def lu_permutation(pivots, m, dtype):
    """The permutation matrix P (A = P L U) of LAPACK's 1-based row swaps `pivots`."""
    batch = pivots.shape[:-1]
    swaps = pivots.reshape(-1, pivots.shape[-1]) - 1
    perm = np.tile(np.arange(m), (swaps.shape[0], 1))
    rows = np.arange(swaps.shape[0])
    for k in range(swaps.shape[1]):
        p = swaps[:, k]
        perm[rows, k], perm[rows, p] = perm[rows, p], perm[rows, k].copy()
    eye = np.eye(m, dtype=dtype.numpy_dtype)
    return np.ascontiguousarray(np.swapaxes(eye[perm], -1, -2)).reshape(*batch, m, m)
