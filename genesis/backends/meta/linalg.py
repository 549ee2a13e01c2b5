"""Matrix decompositions and solvers on meta arrays (the `linalg_*` kernels of
backends/cpu/decompositions.py and ldl.py). Operands arrive checked, square where needed and
batch-broadcast by the ops layer. Results a LAPACK routine writes in place (factors, inverses,
solutions, eigenvectors) are column-major in each matrix, as torch lays them out; vectors, the
per-matrix info and SVD's Vh are row-major. Dtypes come from the CPU kernels (`probe`)."""

from ...dispatch import register
from .array import dense
from .probe import probe

def column_major(ndim):
    """The dim order of a stack of column-major matrices (outermost first)."""
    return (*range(ndim - 2), ndim - 1, ndim - 2)


def _results(op, args, layouts):
    """Arrays of the `layouts` ((shape, column-major or not), one per output) with the dtypes the
    CPU kernel of `op` gives for the stand-ins of `args`."""
    found = probe(op, args)
    found = found if isinstance(found, tuple) else (found,)
    made = tuple(dense(shape, f.dtype, column_major(len(shape)) if lapack else None)
                 for f, (shape, lapack) in zip(found, layouts))
    return made if len(made) > 1 else made[0]


def _with_info(op, args, shape):
    """A column-major result of `shape` and the int32 info of each matrix of args[0]."""
    return _results(op, args, ((shape, True), (args[0].shape[:-2], False)))


@register("linalg_lu_factor", "meta")
def lu_factor(a):
    *batch, m, n = a.shape
    return _results("linalg_lu_factor", (a,),
                    ((a.shape, True), ((*batch, min(m, n)), False), (batch, False)))


@register("linalg_inv_ex", "meta")
def inv_ex(a):
    return _with_info("linalg_inv_ex", (a,), a.shape)


@register("linalg_solve_ex", "meta")
def solve_ex(a, b):
    return _with_info("linalg_solve_ex", (a, b), b.shape)


@register("linalg_cholesky_ex", "meta")
def cholesky_ex(a, upper):
    return _with_info("linalg_cholesky_ex", (a, upper), a.shape)


@register("linalg_qr", "meta")
def qr(a, mode):
    """Q (m, k) and R (k, n), k = min(m, n), or m for mode 'complete'; mode 'r' leaves Q
    empty."""
    *batch, m, n = a.shape
    k = m if mode == "complete" else min(m, n)
    q = ((0,), False) if mode == "r" else ((*batch, m, k), True)
    return _results("linalg_qr", (a, mode), (q, ((*batch, k, n), True)))


@register("linalg_svd", "meta")
def svd(a, full_matrices, compute_uv):
    """U (m, m or k), S (k,), Vh (n or k, n), k = min(m, n); S alone when not `compute_uv`."""
    *batch, m, n = a.shape
    k = min(m, n)
    s = ((*batch, k), False)
    if not compute_uv:
        return (_results("linalg_svd", (a, full_matrices, compute_uv), (s,)),)
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    return _results("linalg_svd", (a, full_matrices, compute_uv),
                    (((*batch, m, u_cols), True), s, ((*batch, v_rows, n), False)))


@register("linalg_eigh", "meta")
def eigh(a, uplo, compute_v):
    """Eigenvalues (n,) and eigenvectors (n, n), empty when not `compute_v`."""
    v = (a.shape, True) if compute_v else ((0,), False)
    return _results("linalg_eigh", (a, uplo, compute_v), ((a.shape[:-1], False), v))


@register("linalg_slogdet", "meta")
def slogdet(a):
    return _results("linalg_slogdet", (a,), ((a.shape[:-2], False),) * 2)


@register("linalg_det", "meta")
def det(a):
    return _results("linalg_det", (a,), ((a.shape[:-2], False),))


@register("linalg_solve_triangular", "meta")
def solve_triangular(a, b, upper, unitriangular):
    return _results("linalg_solve_triangular", (a, b, upper, unitriangular), ((b.shape, True),))


@register("linalg_lstsq", "meta")
def lstsq(a, b, rcond):
    """The solution (n, k), the rank and the singular values (min(m, n),) of each matrix."""
    *batch, m, n = a.shape
    return _results("linalg_lstsq", (a, b, rcond),
                    (((*batch, n, b.shape[-1]), True), (batch, False), ((*batch, min(m, n)),
                                                                         False)))


@register("linalg_lu_permutation", "meta")
def lu_permutation(pivots, m, dtype):
    """The row-major (m, m) permutation matrices (probed with m = 1: its dtype is `dtype`)."""
    return _results("linalg_lu_permutation", (pivots, 1, dtype),
                    (((*pivots.shape[:-1], m, m), False),))


@register("linalg_ldl_factor_ex", "meta")
def ldl_factor_ex(a):
    return _results("linalg_ldl_factor_ex", (a,), ((a.shape, True), (a.shape[:-1], False),
                                                   (a.shape[:-2], False)))


@register("linalg_ldl_solve", "meta")
def ldl_solve(ld, pivots, b):
    return _results("linalg_ldl_solve", (ld, pivots, b), ((b.shape, True),))
