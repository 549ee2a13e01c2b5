"""linalg.solve, inv, cholesky, eigh and svd on CUDA through cuSOLVER's dense routines: getrf
and getrs, potrf, syevd, gesvdj, in float32 and float64.

The library is libcusolver (the nvidia-cusolver wheel, which PyTorch's CUDA wheels also install),
reached through nvmath-python's bindings and loaded by nvmath's loader when the device's handle is
first made. Where it cannot be loaded, these ops stay the host round trip of linalg_host.py and a
warning says so once; so do other dtypes and empty matrices.

cuSOLVER reads matrices column-major, and a row-major n x m matrix is its m x n transpose read
that way. Each op therefore copies its operand (the routines overwrite it) in the orientation
that makes cuSOLVER's input and output the ones Genesis wants, and transposes at most one
result. Matrices of a batch are solved one call each on the current stream; each call's
workspace is the device's scratch buffer from the Genesis allocator, and its status goes
straight into the `info` array the op returns.
"""

import functools
import warnings

import numpy as np

from ...dispatch import kernel, register
from ..cpu.decompositions import KERNELS
from .array_ops import from_numpy
from .kernels.copy import strided_copy
from .linalg_host import on_host
from .runtime.array import CUDAArray
from .runtime.device import activate, get_context
from .runtime.stream import current_stream_handle

# cuBLAS and cuSOLVER enum values, as cublas_api.h and cusolver_common.h define them
FILL_LOWER, FILL_UPPER = 0, 1
OP_N, OP_T = 0, 1
EIG_NOVECTOR, EIG_VECTOR = 0, 1

enabled = True  # False keeps every op on the host round trip (benchmarks/linalg.py --host)
_failure = None
_PREFIX = {"float32": "s", "float64": "d"}


def _lib():
    """nvmath-python's cusolverDn bindings module."""
    from nvmath.bindings import cusolverDn
    return cusolverDn


def _handle(device):
    """The device's cuSOLVER handle, made on first use (which loads libcusolver)."""
    lib = _lib()
    return get_context(device).handle("cusolverDn", lib.create, lib.destroy)


def _gesvdj_params(device):
    """gesvdj's parameters (default tolerance and sweeps), made once per device."""
    lib = _lib()
    return get_context(device).handle("cusolverDn.gesvdj", lib.create_gesvdj_info,
                                      lib.destroy_gesvdj_info)


def _workspace(device, nbytes, stream):
    return get_context(device).workspace(nbytes, stream)


def available(device):
    """Whether cuSOLVER can run on `device`: the first failure to make a handle (nvmath-python
    or libcusolver missing) is remembered, warned about once, and sends every later call to the
    host round trip."""
    global _failure
    if _failure is not None:
        return False
    try:
        _handle(device)
    except Exception as e:  # ImportError, or nvmath's loader failing to find libcusolver
        _failure = repr(e)  # not the exception: its traceback would keep the callers' frames
        warnings.warn(f"genesis.linalg on CUDA: cuSOLVER is unavailable ({type(e).__name__}: "
                      f"{e}); solve, inv, cholesky, eigh and svd run as a host round trip "
                      f"through numpy.linalg. Install nvmath-python and the nvidia-cusolver wheel "
                      f"to run them on the GPU.", RuntimeWarning, stacklevel=3)
        return False
    return True


def uses_cusolver(a, *others):
    """The dispatch decision for an op on matrix stack `a` (and the other arrays it takes):
    cuSOLVER for float32 and float64 when no array is empty, when enabled and available."""
    return (enabled and a.dtype.name in _PREFIX and all(x.size > 0 for x in (a, *others))
            and available(a.device))


def _routine(name, dtype):
    """cuSOLVER's routine `name` for `dtype` ('getrf' -> sgetrf or dgetrf)."""
    return getattr(_lib(), _PREFIX[dtype.name] + name)


def _transposed(a):
    """The view of `a` with its last two dimensions swapped."""
    shape, strides = list(a.shape), list(a.strides)
    shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    return CUDAArray(a.storage, shape, strides, a.offset, a.dtype)


def _copy(a, stream, transpose=False):
    """A contiguous copy of `a`, or of its transpose."""
    src = _transposed(a) if transpose else a
    out = CUDAArray.empty(src.shape, src.dtype, src.device, stream)
    strided_copy(out, src, stream)
    return out


def _matrices(a):
    """The device addresses of the matrices of contiguous stack `a`, in order."""
    step = a.shape[-1] * a.shape[-2] * a.itemsize
    count = a.size // (a.shape[-1] * a.shape[-2])
    return [a.ptr + i * step for i in range(count)]


def _rows(a, i):
    """The address of row-block i (the last dimension) of contiguous `a`."""
    return a.ptr + i * a.shape[-1] * a.itemsize


def _launch(device):
    activate(device)
    stream = current_stream_handle(device)
    handle = _handle(device)
    _lib().set_stream(handle, stream)
    return handle, stream


def solve_ex(a, b):
    """(X with a X = b, info): LU of each matrix by getrf, then getrs with the transpose, since
    cuSOLVER sees the row-major copy of a as a^T. The right-hand sides go in transposed (each
    column-major n x k), and X comes back the same way."""
    handle, stream = _launch(a.device)
    n, k = a.shape[-1], b.shape[-1]
    lu, x = _copy(a, stream), _copy(b, stream, transpose=True)
    pivots = CUDAArray.empty(a.shape[:-1], "int32", a.device, stream)
    info = CUDAArray.empty(a.shape[:-2], "int32", a.device, stream)
    status = CUDAArray.empty((1,), "int32", a.device, stream)
    getrf, getrs = _routine("getrf", a.dtype), _routine("getrs", a.dtype)
    lwork = _routine("getrf_buffer_size", a.dtype)(handle, n, n, lu.ptr, n)
    work = _workspace(a.device, max(lwork, 1) * a.itemsize, stream)
    for i, (m, rhs) in enumerate(zip(_matrices(lu), _matrices(x))):
        getrf(handle, n, n, m, n, work.ptr, _rows(pivots, i), info.ptr + 4 * i)
        getrs(handle, OP_T, n, k, m, n, _rows(pivots, i), rhs, n, status.ptr)
    return _copy(x, stream, transpose=True), info


def inv_ex(a):
    """(inverse, info): solve_ex against the identity, broadcast over the batch."""
    n = a.shape[-1]
    eye = from_numpy(np.eye(n, dtype=a.dtype), a.device)
    identity = CUDAArray(eye.storage, a.shape, (0,) * (a.ndim - 2) + eye.strides, eye.offset,
                         eye.dtype)
    return solve_ex(a, identity)


def cholesky_plan(upper):
    """(transpose the copy, cuSOLVER's fill mode, triangle kept): the lower triangle of the
    row-major matrix is read either way. Copied as is, cuSOLVER sees a^T, whose upper triangle
    is that lower one, and the upper factor it writes is L read row-major. Copied transposed, it
    sees a, reads its lower triangle and writes L, which read row-major is U = L^T."""
    return (True, FILL_LOWER, "triu") if upper else (False, FILL_UPPER, "tril")


def cholesky_ex(a, upper):
    """(L, or U = L^T when `upper`; info) by potrf, the other triangle zeroed."""
    handle, stream = _launch(a.device)
    transpose, fill, keep = cholesky_plan(upper)
    n = a.shape[-1]
    work_a = _copy(a, stream, transpose=transpose)
    info = CUDAArray.empty(a.shape[:-2], "int32", a.device, stream)
    potrf = _routine("potrf", a.dtype)
    lwork = _routine("potrf_buffer_size", a.dtype)(handle, fill, n, work_a.ptr, n)
    work = _workspace(a.device, max(lwork, 1) * a.itemsize, stream)
    for i, m in enumerate(_matrices(work_a)):
        potrf(handle, fill, n, m, n, work.ptr, lwork, info.ptr + 4 * i)
    return kernel(keep, "cuda")(work_a, 0), info


def eigh_fill(uplo):
    """cuSOLVER's fill mode for the row-major triangle `uplo` ('L' or 'U'): the copy is read
    as its transpose, so the lower triangle is cuSOLVER's upper one."""
    return FILL_UPPER if uplo == "L" else FILL_LOWER


def eigh(a, uplo, compute_v):
    """(ascending eigenvalues, eigenvectors as columns) by syevd; it writes the eigenvectors as
    the columns of its column-major matrix, the rows of the row-major copy, so they come back
    transposed."""
    handle, stream = _launch(a.device)
    n, fill = a.shape[-1], eigh_fill(uplo)
    jobz = EIG_VECTOR if compute_v else EIG_NOVECTOR
    work_a = _copy(a, stream)
    w = CUDAArray.empty(a.shape[:-1], a.dtype, a.device, stream)
    info = CUDAArray.empty(a.shape[:-2], "int32", a.device, stream)
    syevd = _routine("syevd", a.dtype)
    lwork = _routine("syevd_buffer_size", a.dtype)(handle, jobz, fill, n, work_a.ptr, n, w.ptr)
    work = _workspace(a.device, max(lwork, 1) * a.itemsize, stream)
    for i, m in enumerate(_matrices(work_a)):
        syevd(handle, jobz, fill, n, m, n, _rows(w, i), work.ptr, lwork, info.ptr + 4 * i)
    if not compute_v:
        return w, CUDAArray.empty((0,), a.dtype, a.device, stream)
    return w, _copy(work_a, stream, transpose=True)


def svd_plan(rows, cols, full_matrices):
    """gesvdj's view of a row-major rows x cols matrix, which it reads as its cols x rows
    transpose A^T = V S U^T: (econ flag, its U's shape, its V's shape) as row-major stacks.
    Its U (cols x p, column-major) read row-major is Vh; its V (rows x q) read row-major is
    U^T, transposed on the way out."""
    k = min(rows, cols)
    p, q = (cols, rows) if full_matrices else (k, k)
    return (0 if full_matrices else 1), (p, cols), (q, rows)


def svd(a, full_matrices, compute_uv):
    """(U, S, Vh), or (S,) alone, by gesvdj (one-sided Jacobi, as PyTorch's default CUDA
    driver); a batch where a matrix did not converge is redone on the host."""
    handle, stream = _launch(a.device)
    rows, cols = a.shape[-2:]
    econ, vh_shape, ut_shape = svd_plan(rows, cols, full_matrices)
    jobz = EIG_VECTOR if compute_uv else EIG_NOVECTOR
    batch = a.shape[:-2]
    work_a = _copy(a, stream)
    s = CUDAArray.empty(batch + (min(rows, cols),), a.dtype, a.device, stream)
    outputs = batch if compute_uv else ()  # without vectors, one unused matrix each
    vh = CUDAArray.empty(outputs + vh_shape, a.dtype, a.device, stream)
    ut = CUDAArray.empty(outputs + ut_shape, a.dtype, a.device, stream)
    info = CUDAArray.empty(batch, "int32", a.device, stream)
    params = _gesvdj_params(a.device)
    gesvdj = _routine("gesvdj", a.dtype)
    lwork = _routine("gesvdj_buffer_size", a.dtype)(
        handle, jobz, econ, cols, rows, work_a.ptr, cols, s.ptr, vh.ptr, cols, ut.ptr, rows,
        params)
    work = _workspace(a.device, max(lwork, 1) * a.itemsize, stream)
    count = len(_matrices(work_a))
    vh_at = _matrices(vh) if compute_uv else [vh.ptr] * count
    ut_at = _matrices(ut) if compute_uv else [ut.ptr] * count
    for i, (m, u, v) in enumerate(zip(_matrices(work_a), vh_at, ut_at)):
        gesvdj(handle, jobz, econ, cols, rows, m, cols, _rows(s, i), u, cols, v, rows,
               work.ptr, lwork, info.ptr + 4 * i, params)
    if kernel("to_numpy", "cuda")(info).any():
        return on_host(KERNELS["linalg_svd"])(a, full_matrices, compute_uv)
    if not compute_uv:
        return (s,)
    return _copy(ut, stream, transpose=True), s, vh


def _dispatching(name, solver):
    """The CUDA kernel of `name`: `solver` where uses_cusolver says so, else the host round
    trip."""
    host = on_host(KERNELS[name])

    @functools.wraps(solver)
    def run(a, *args):
        arrays = [x for x in args if isinstance(x, CUDAArray)]
        return solver(a, *args) if uses_cusolver(a, *arrays) else host(a, *args)
    return register(name, "cuda")(run)


SOLVERS = {"linalg_solve_ex": solve_ex, "linalg_inv_ex": inv_ex,
           "linalg_cholesky_ex": cholesky_ex, "linalg_eigh": eigh, "linalg_svd": svd}

for _name, _solver in SOLVERS.items():
    _dispatching(_name, _solver)
