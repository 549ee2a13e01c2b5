"""Vendor libraries the CUDA backend can call next to its own Triton kernels.

cuBLASLt comes through nvmath-python's low-level bindings (the `cublas` extra), so the matmul
dispatcher can measure it against Triton per shape. Each device context creates a library's
handle on first request and destroys it at exit, newest first (runtime/device.py).
"""

import contextlib
import functools
import warnings

import numpy as np

from .runtime.device import get_context


@functools.cache
def has_cublaslt():
    """True when nvmath-python's cuBLASLt bindings can be imported."""
    try:
        from nvmath.bindings import cublasLt  # noqa: F401
    except ImportError:
        return False
    return True


def cublaslt_handle(device=None):
    """The device's cuBLASLt handle (an int), created on first use in its context."""
    try:
        from nvmath.bindings import cublasLt
    except ImportError as e:
        raise RuntimeError("cuBLASLt needs nvmath-python: pip install 'genesis[cuda]'") from e
    return get_context(device).handle("cublasLt", cublasLt.create, cublasLt.destroy)


def cublaslt_version():
    from nvmath.bindings import cublasLt
    return cublasLt.get_version()


_WORKSPACE_LIMIT = 32 << 20
ALGORITHMS = 6
_plans = {}
_failure = None


def cublaslt_usable():
    """True when cuBLASLt can be offered to the matmul dispatcher: importable, and its handle
    did not fail to be created."""
    return _failure is None and has_cublaslt()


def _lib():
    """(cublasLt, cublas, nvmath) bindings modules."""
    import nvmath
    from nvmath.bindings import cublas, cublasLt
    return cublasLt, cublas, nvmath


def _matrix_layout(rows, cols, row_stride, col_stride):
    """A row-major (rows x cols) view as cuBLASLt sees it (column-major): (op, lt_rows, lt_cols,
    ld) with op "N" for the transposed matrix (cols x rows, ld = row_stride) and "T" for the
    matrix itself (rows x cols, ld = col_stride); None when neither stride is unit."""
    if col_stride == 1 or cols == 1:
        ld = row_stride if rows > 1 else cols
        return ("N", cols, rows, ld) if ld >= cols else None
    if row_stride == 1 or rows == 1:
        ld = col_stride if cols > 1 else rows
        return ("T", rows, cols, ld) if ld >= rows else None
    return None


def _column_major(rows, cols, row_stride, col_stride):
    """Whether a (rows x cols) matrix is laid out column-major (and not also row-major)."""
    layout = _matrix_layout(rows, cols, row_stride, col_stride)
    return layout is not None and layout[0] == "T"


def _swapped(strides):
    """A matrix's strides (batch strides first) as its transpose's."""
    return (*strides[:-2], strides[-1], strides[-2])


def _lt_operands(problem):
    """The product as cuBLASLt runs it, D^T = B^T A^T in its column-major terms, with D^T a
    row-major (M x N) c: (M, N, K, (role, strides) of its A (K x N), of its B (M x K), strides
    of c). That is our b, our a and c; for a column-major c (an NCHW 1x1 convolution's output
    seen as (pixels x channels)), the row-major c^T = b^T a^T: M and N exchange, A is our a
    and B our b, each matrix's two strides swapped."""
    st, M, N, K = problem.strides, problem.M, problem.N, problem.K
    if not _column_major(M, N, *st["c"][-2:]):
        return M, N, K, ("b", st["b"]), ("a", st["a"]), st["c"]
    return N, M, K, ("a", _swapped(st["a"])), ("b", _swapped(st["b"])), _swapped(st["c"])


def cublaslt_supports(problem):
    """True when cuBLASLt can run this matmul Problem (kernels/matmul.py): float16, bfloat16 or
    float32, no activation or gate, at most one batch dim, matrices with a unit stride, a
    contiguous bias. Row sums of a (its BGRADB epilogue) take a with a unit row stride (a = dY^T,
    the layout of a weight gradient), no batch and no bias. A column-major c takes neither."""
    if (problem.act or problem.gated or len(problem.batch_sizes) > 1
            or problem.arrays.get("z") is not None):
        return False
    if problem.dtype.name not in _LT_TYPES:
        return False
    M, N, K, (role_a, st_a), (_, st_b), st_c = _lt_operands(problem)
    if any(_matrix_layout(*shape, *strides[-2:]) is None
           for shape, strides in (((K, N), st_a), ((M, K), st_b), ((M, N), st_c))):
        return False
    bias, row_sum = problem.arrays.get("bias"), problem.arrays.get("row_sum")
    if role_a == "a" and (bias is not None or row_sum is not None):  # c^T = b^T a^T
        return False
    st = problem.strides
    if row_sum is not None:
        return (bias is None and not problem.batch_sizes and st["a"][-2] == 1
                and row_sum.ptr % 16 == 0)
    return bias is None or (st.get("bias") == 1 and bias.ptr % 16 == 0)


_LT_TYPES = {"float16": "CUDA_R_16F", "bfloat16": "CUDA_R_16BF", "float32": "CUDA_R_32F"}


def _alignment(ptr):
    """The largest power of two up to 256 dividing the address (its lowest set bit)."""
    return min(ptr & -ptr, 256) if ptr else 256


def _set(setter, dtype_of, obj, attr, value):
    buf = np.asarray(value, dtype=dtype_of(attr))
    setter(obj, attr, buf.ctypes.data, buf.itemsize)


class _LtPlan:
    """Descriptors and the heuristic's algorithm for one problem geometry. D^T = B^T A^T in
    cuBLASLt's column-major terms (`_lt_operands`): its "A" is our b, its "B" our a, D^T our
    row-major c, or for a column-major c the other way round. `roles`: the arrays of its A and
    B."""

    def __init__(self, problem, handle):
        lt, cublas, nvmath = _lib()
        self.lt = lt
        dtype = int(getattr(nvmath.CudaDataType, _LT_TYPES[problem.dtype.name]))
        f32 = int(nvmath.CudaDataType.CUDA_R_32F)
        compute = cublas.ComputeType.COMPUTE_32F_FAST_TF32 if (
            problem.precision == "tf32" and problem.dtype.name == "float32") \
            else cublas.ComputeType.COMPUTE_32F
        self.desc = lt.matmul_desc_create(int(compute), f32)
        self.layouts = []
        M, N, K, (role_a, st_a), (role_b, st_b), st_c = _lt_operands(problem)
        self.roles = role_a, role_b
        op_a, *lay_a = _matrix_layout(K, N, *st_a[-2:])
        op_b, *lay_b = _matrix_layout(M, K, *st_b[-2:])
        _, *lay_c = _matrix_layout(M, N, *st_c[-2:])
        set_desc = lambda attr, value: _set(lt.matmul_desc_set_attribute,  # noqa: E731
                                            lt.get_matmul_desc_attribute_dtype, self.desc, attr,
                                            value)
        set_desc(lt.MatmulDescAttribute.TRANSA, int(getattr(cublas.Operation, op_a)))
        set_desc(lt.MatmulDescAttribute.TRANSB, int(getattr(cublas.Operation, op_b)))
        # The epilogue's vector: the bias added to c, or (BGRADB) the sum over k of cuBLASLt's
        # B, our a.
        self.vector = next((role for role in ("bias", "row_sum")
                            if problem.arrays.get(role) is not None), None)
        self.vector_ptr = None  # the vector's address the descriptor holds
        if self.vector:
            epilogue = lt.Epilogue.BIAS if self.vector == "bias" else lt.Epilogue.BGRADB
            set_desc(lt.MatmulDescAttribute.EPILOGUE, int(epilogue))
        batch = problem.batch_sizes[0] if problem.batch_sizes else 1
        for lay, strides in ((lay_a, st_a), (lay_b, st_b), (lay_c, st_c)):
            layout = lt.matrix_layout_create(dtype, *lay)
            self.layouts.append(layout)
            if batch > 1:
                for attr, value in ((lt.MatrixLayoutAttribute.BATCH_COUNT, batch),
                                    (lt.MatrixLayoutAttribute.STRIDED_BATCH_OFFSET,
                                     strides[0])):
                    _set(lt.matrix_layout_set_attribute, lt.get_matrix_layout_attribute_dtype,
                         layout, attr, value)
        self.set_desc = set_desc
        self._choose_algorithm(problem, handle)

    def _choose_algorithm(self, problem, handle):
        lt = self.lt
        pref = lt.matmul_preference_create()
        try:
            attrs = lt.MatmulPreferenceAttribute
            arrays, (role_a, role_b) = problem.arrays, self.roles
            for attr, value in ((attrs.MAX_WORKSPACE_BYTES, _WORKSPACE_LIMIT),
                                (attrs.MIN_ALIGNMENT_A_BYTES, _alignment(arrays[role_a].ptr)),
                                (attrs.MIN_ALIGNMENT_B_BYTES, _alignment(arrays[role_b].ptr)),
                                (attrs.MIN_ALIGNMENT_C_BYTES, _alignment(arrays["c"].ptr)),
                                (attrs.MIN_ALIGNMENT_D_BYTES, _alignment(arrays["c"].ptr))):
                _set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype,
                     pref, attr, value)
            results = np.zeros(ALGORITHMS, dtype=lt.matmul_heuristic_result_dtype)
            count = np.zeros(1, np.int32)
            a_l, b_l, c_l = self.layouts
            lt.matmul_algo_get_heuristic(handle, self.desc, a_l, b_l, c_l, c_l, pref, ALGORITHMS,
                                         results.ctypes.data, count.ctypes.data)
        finally:
            lt.matmul_preference_destroy(pref)
        n = int(count[0])
        if n < 1:
            raise RuntimeError("cuBLASLt: no algorithm for this matmul")
        self.results = results
        base = results.ctypes.data + results.dtype.fields["algo"][1]
        self.algos = [base + i * results.itemsize for i in range(n)]
        self.workspace = int(results["workspace_size"][:n].max())

    def __del__(self):
        try:
            for layout in self.layouts:
                self.lt.matrix_layout_destroy(layout)
            self.lt.matmul_desc_destroy(self.desc)
        except Exception:  # interpreter shutdown
            pass


_ONE = np.ones(1, np.float32)  # alpha and beta, passed by host address
_ZERO = np.zeros(1, np.float32)
_ONE_PTR, _ZERO_PTR = _ONE.ctypes.data, _ZERO.ctypes.data
_NO_REGION = contextlib.nullcontext()


def _plan_key(problem):
    arrays = problem.arrays
    aligned = tuple(_alignment(arrays[r].ptr) for r in ("a", "b", "c"))
    return (problem.M, problem.N, problem.K, problem.batch_sizes,
            tuple(sorted(problem.strides.items())), problem.dtype, problem.precision, aligned,
            arrays.get("bias") is not None, arrays.get("row_sum") is not None, problem.device)


def _handle_and_plan(problem):
    """The device's cuBLASLt handle and the plan for this problem's geometry (made on first
    use). A handle that cannot be created stops cuBLASLt being offered (`cublaslt_usable`)."""
    global _failure
    try:
        handle = cublaslt_handle(problem.device)
    except Exception as e:
        _failure = repr(e)  # not the exception: its traceback would keep the callers' frames
        raise
    key = _plan_key(problem)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 1024:
            _plans.clear()
        plan = _plans[key] = _LtPlan(problem, handle)
    return handle, plan


def cublaslt_algorithm_count(problem):
    """How many of the heuristic's algorithms (best first, at most ALGORITHMS) can run this
    problem; 0 when cuBLASLt cannot (a warning says why)."""
    try:
        return len(_handle_and_plan(problem)[1].algos)
    except Exception as e:
        warnings.warn(f"cuBLASLt unavailable for this matmul ({type(e).__name__}: {e})",
                      RuntimeWarning, stacklevel=2)
        return 0


def cublaslt_matmul(problem, stream, algo=0):
    """c = a @ b (+ bias; or with a's row sums) of a matmul Problem (kernels/matmul.py) through
    cuBLASLt with the heuristic's `algo`-th algorithm, on `stream`; shown as "cublaslt.matmul"
    by the profiler."""
    handle, plan = _handle_and_plan(problem)
    _run(handle, plan, problem, stream, algo)


def cublaslt_launcher(problem, algo=0):
    """A callable(problem, stream) for problems of this one's geometry (kernels/matmul.py keeps
    it per geometry): cublaslt_matmul with the handle and plan found once, so a call only reads
    the addresses. Addresses less aligned than this problem's (the plan's algorithm may need
    its alignment) go through cublaslt_matmul."""
    handle, plan = _handle_and_plan(problem)
    arrays = problem.arrays
    need_a, need_b, need_c = (_alignment(arrays[r].ptr) for r in ("a", "b", "c"))

    def launch(p, stream):
        arrays = p.arrays
        if (_alignment(arrays["a"].ptr) < need_a or _alignment(arrays["b"].ptr) < need_b
                or _alignment(arrays["c"].ptr) < need_c):
            cublaslt_matmul(p, stream, algo)
        else:
            _run(handle, plan, p, stream, algo)
    return launch


def _run(handle, plan, problem, stream, algo):
    from . import profiling
    arrays = problem.arrays
    if plan.vector and plan.vector_ptr != arrays[plan.vector].ptr:
        plan.vector_ptr = arrays[plan.vector].ptr
        plan.set_desc(plan.lt.MatmulDescAttribute.BIAS_POINTER, plan.vector_ptr)
    workspace = get_context(problem.device).workspace(plan.workspace, stream) \
        if plan.workspace else None
    a_l, b_l, c_l = plan.layouts
    (role_a, role_b), c = plan.roles, arrays["c"].ptr
    region = profiling.region("cublaslt.matmul", m=problem.M, n=problem.N, k=problem.K,
                              batch=problem.batch) if profiling.is_enabled() else _NO_REGION
    with region:
        plan.lt.matmul(handle, plan.desc, _ONE_PTR, arrays[role_a].ptr, a_l,
                       arrays[role_b].ptr, b_l, _ZERO_PTR, c, c_l, c, c_l,
                       plan.algos[algo], 0 if workspace is None else workspace.ptr,
                       plan.workspace, stream)
