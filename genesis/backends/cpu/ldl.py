"""The symmetric-indefinite factorization A = P L D L^T P^T and its solve on numpy, as LAPACK's
sytf2 and sytrs compute them with lower storage (torch.linalg.ldl_factor_ex and ldl_solve).

Bunch and Kaufman's partial pivoting: at each column a 1x1 pivot, the same after swapping in
a larger diagonal entry, or a 2x2 pivot block. The packed result holds L's multipliers below
the diagonal and D on it (a 2x2 block's off-diagonal entry under it); LAPACK's 1-based pivots
say what was swapped (k: rows k and pivots[k]; -p twice: a 2x2 block whose second row was
swapped with row p). numpy has no sytrf, so it is written here; matrices are factored one at
a time (their pivot choices differ), columns vectorised.
"""

import numpy as np

from .decompositions import kernel

_ALPHA = (1 + np.sqrt(17.0)) / 8  # Bunch-Kaufman's threshold: minimises the growth bound


@kernel("linalg_ldl_factor_ex")
def ldl_factor_ex(a):
    """(LD, pivots int32, info int32) for the symmetric matrices given by their lower triangles;
    LD's upper triangle is zero, as PyTorch's. info is k where D[k-1, k-1] is exactly zero (the
    factorization still completes), 0 otherwise."""
    ld = np.zeros_like(a)
    pivots = np.zeros(a.shape[:-1], dtype=np.int32)
    info = np.zeros(a.shape[:-2], dtype=np.int32)
    for index in np.ndindex(a.shape[:-2]):
        ld[index], pivots[index], info[index] = _factor(a[index])
    return ld, pivots, info


def _factor(a):
    """sytf2 (lower) on one matrix."""
    a, n = np.array(a, copy=True), a.shape[0]
    pivots, info, k = np.zeros(n, dtype=np.int32), 0, 0
    with np.errstate(all="ignore"):
        while k < n:
            kp, step = _choose_pivot(a, k)
            if kp is None:
                info, kp, step = info or k + 1, k, 1
            else:
                _interchange(a, k, k + step - 1, kp, step)
                _eliminate(a, k, step)
            pivots[k:k + step] = kp + 1 if step == 1 else -(kp + 1)
            k += step
    return np.tril(a), pivots, info


def _choose_pivot(a, k):
    """(row to swap into place, block size 1 or 2) at column k, or (None, 1) when the column
    is zero (or its diagonal NaN): Bunch-Kaufman's test on the largest entries below the
    diagonal in column k (colmax) and in row and column imax (rowmax)."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k]))) if k < n - 1 else k
    colmax = abs(a[imax, k]) if k < n - 1 else 0.0
    if max(absakk, colmax) == 0 or np.isnan(absakk):
        return None, 1
    if absakk >= _ALPHA * colmax:
        return k, 1
    rowmax = np.max(np.abs(a[imax, k:imax]))
    if imax < n - 1:
        rowmax = max(rowmax, np.max(np.abs(a[imax + 1:, imax])))
    if absakk >= _ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _interchange(a, k, kk, kp, step):
    """Swap rows and columns kk and kp of the trailing lower triangle (and the 2x2 block's
    entry in column k)."""
    if kp == kk:
        return
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    between = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = between
    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]
    if step == 2:
        a[[k + 1, kp], k] = a[[kp, k + 1], k]


def _eliminate(a, k, step):
    """The rank-1 (1x1 pivot) or rank-2 (2x2 block) update of the trailing matrix, and the
    multipliers stored in the pivot columns."""
    if step == 1:
        x = a[k + 1:, k].copy()
        d11 = 1.0 / a[k, k]
        a[k + 1:, k + 1:] -= np.outer(x, d11 * x)
        a[k + 1:, k] = d11 * x
        return
    if k + 2 >= a.shape[0]:
        return
    d21 = a[k + 1, k]
    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
    d21 = 1.0 / (d11 * d22 - 1.0) / d21
    first, second = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
    wk = d21 * (d11 * first - second)
    wkp1 = d21 * (d22 * second - first)
    a[k + 2:, k + 2:] = a[k + 2:, k + 2:] - np.outer(first, wk) - np.outer(second, wkp1)
    a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1


@kernel("linalg_ldl_solve")
def ldl_solve(ld, pivots, b):
    """X with A X = B, A given by ldl_factor_ex's (LD, pivots); ld, pivots and b share their
    batch shape, b is a stack of matrices."""
    x = np.array(b, copy=True)
    with np.errstate(all="ignore"):
        for index in np.ndindex(b.shape[:-2]):
            x[index] = _solve(ld[index], pivots[index], b[index])
    return x


def _solve(ld, pivots, b):
    """sytrs (lower) on one system: L D Y = P^T B column block by block, then L^T P^T X = Y."""
    x, n = np.array(b, copy=True), ld.shape[0]
    k = 0
    while k < n:
        step = 1 if pivots[k] > 0 else 2
        last = k + step - 1
        kp = abs(int(pivots[k])) - 1
        x[[last, kp]] = x[[kp, last]]
        x[last + 1:] -= ld[last + 1:, k:last + 1] @ x[k:last + 1]
        if step == 1:
            x[k] *= 1.0 / ld[k, k]
        else:
            offdiag = ld[k + 1, k]
            akm1, ak = ld[k, k] / offdiag, ld[k + 1, k + 1] / offdiag
            denom = akm1 * ak - 1.0
            bkm1, bk = x[k] / offdiag, x[k + 1] / offdiag
            x[k], x[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += step
    k = n - 1
    while k >= 0:
        step = 1 if pivots[k] > 0 else 2
        first = k - step + 1
        x[first:k + 1] -= ld[k + 1:, first:k + 1].T @ x[k + 1:]
        kp = abs(int(pivots[k])) - 1
        x[[k, kp]] = x[[kp, k]]
        k -= step
    return x
