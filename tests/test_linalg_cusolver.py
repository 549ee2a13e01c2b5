"""The cuSOLVER path of genesis.linalg on CUDA (backends/cuda/linalg_cusolver.py), checked
without a GPU: device arrays are numpy buffers addressed by pointer, and a stand-in for
nvmath's cusolverDn bindings runs each routine with numpy on the column-major matrices those
pointers describe, as cuSOLVER reads them. What this checks is the path's own work: the dispatch
decision, the orientation of every copy, fill modes, leading dimensions, pointers into batches,
info, and the fallback to the host round trip. tests/cuda/test_linalg_cuda.py runs the real
library on a GPU.
"""

import ctypes
import math
import os
import warnings

import numpy as np
import pytest

if os.environ.get("GENESIS_TEST_FAKE_CUDA") == "1":
    pytest.skip("importing the real CUDA backend would replace the fake one's kernels",
                allow_module_level=True)

import genesis.backends.cuda.linalg_cusolver as lc  # noqa: E402
from genesis import dispatch  # noqa: E402
from genesis.backends.cpu.decompositions import lu_factor  # noqa: E402


class HostArray:
    """A CUDAArray stand-in over a numpy byte buffer: same fields, `ptr` a host address."""

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage, self.shape, self.strides = storage, tuple(shape), tuple(strides)
        self.offset, self.dtype = offset, np.dtype(dtype)
        self.ptr, self.device = storage.ctypes.data + offset, 0

    @classmethod
    def empty(cls, shape, dtype, device, stream=None):
        dtype, shape = np.dtype(dtype), tuple(shape)
        strides = tuple(int(np.prod(shape[i + 1:])) * dtype.itemsize for i in range(len(shape)))
        storage = np.zeros(max(math.prod(shape) * dtype.itemsize, 1), np.uint8)
        return cls(storage, shape, strides, 0, dtype)

    @classmethod
    def of(cls, values):
        out = cls.empty(values.shape, values.dtype, 0)
        np.copyto(out.numpy(), values)
        return out

    size = property(lambda self: math.prod(self.shape))
    ndim = property(lambda self: len(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)

    def numpy(self):
        return np.ndarray(self.shape, self.dtype, buffer=self.storage, offset=self.offset,
                          strides=self.strides)


def _memory(ptr, count, dtype):
    """`count` elements of `dtype` at host address `ptr`, writable."""
    dtype = np.dtype(dtype)
    return np.frombuffer((ctypes.c_char * (count * dtype.itemsize)).from_address(ptr), dtype)


def _column_major(ptr, rows, cols, ld, dtype):
    """The rows x cols matrix stored column-major at `ptr` with leading dimension `ld`."""
    return _memory(ptr, ld * cols, dtype).reshape(cols, ld)[:, :rows].T


def _triangle(m, fill):
    """The symmetric matrix that triangle `fill` of `m` describes."""
    part = np.tril(m) if fill == lc.FILL_LOWER else np.triu(m)
    return part + part.T - np.diag(np.diag(m))


class FakeCusolverDn:
    """nvmath's cusolverDn bindings, the routines linalg_cusolver calls, in numpy."""

    def __init__(self, dtype):
        self.dtype, self.calls = np.dtype(dtype), []
        for name in ("getrf", "getrs", "potrf", "syevd", "gesvdj"):
            for prefix in "sd":
                setattr(self, prefix + name, self._typed(name, prefix))
                setattr(self, prefix + name + "_buffer_size", self._buffer_size(prefix))

    def _typed(self, name, prefix):
        def routine(*args):
            assert prefix == {"float32": "s", "float64": "d"}[self.dtype.name]
            self.calls.append(name)
            return getattr(self, "_" + name)(*args)
        return routine

    def _buffer_size(self, prefix):
        return lambda *args: 16

    def set_stream(self, handle, stream):
        assert handle == 1 and stream == 0

    def _getrf(self, handle, m, n, a, lda, work, ipiv, info):
        M = _column_major(a, m, n, lda, self.dtype)
        packed, pivots, status = lu_factor(M[None].copy())
        M[...] = packed[0]
        _memory(ipiv, min(m, n), np.int32)[:] = pivots[0]
        _memory(info, 1, np.int32)[0] = status[0]

    def _getrs(self, handle, trans, n, nrhs, a, lda, ipiv, b, ldb, info):
        packed = _column_major(a, n, n, lda, self.dtype)
        L, U = np.tril(packed, -1) + np.eye(n), np.triu(packed)
        perm = np.arange(n)
        for k, p in enumerate(_memory(ipiv, n, np.int32) - 1):
            perm[[k, p]] = perm[[p, k]]
        M = (L @ U)[np.argsort(perm)]
        B = _column_major(b, n, nrhs, ldb, self.dtype)
        try:
            B[...] = np.linalg.solve(M.T if trans == lc.OP_T else M, B)
        except np.linalg.LinAlgError:  # a singular U: cuSOLVER divides by its zero pivot
            B[...] = np.nan
        _memory(info, 1, np.int32)[0] = 0

    def _potrf(self, handle, fill, n, a, lda, work, lwork, info):
        M = _column_major(a, n, n, lda, self.dtype)
        S = _triangle(M, fill)
        for k in range(1, n + 1):
            if np.any(np.linalg.eigvalsh(S[:k, :k]) <= 0):
                _memory(info, 1, np.int32)[0] = k
                return
        L = np.linalg.cholesky(S)
        if fill == lc.FILL_LOWER:
            M[np.tril_indices(n)] = L[np.tril_indices(n)]
        else:
            M[np.triu_indices(n)] = L.T[np.triu_indices(n)]
        _memory(info, 1, np.int32)[0] = 0

    def _syevd(self, handle, jobz, fill, n, a, lda, w, work, lwork, info):
        M = _column_major(a, n, n, lda, self.dtype)
        values, vectors = np.linalg.eigh(_triangle(M, fill))
        _memory(w, n, self.dtype)[:] = values
        if jobz == lc.EIG_VECTOR:
            M[...] = vectors
        _memory(info, 1, np.int32)[0] = 0

    def _gesvdj(self, handle, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, work, lwork, info,
                params):
        assert params == 2 and ldu >= m and ldv >= n
        M = _column_major(a, m, n, lda, self.dtype)
        U, S, Vh = np.linalg.svd(M, full_matrices=not econ)
        _memory(s, min(m, n), self.dtype)[:] = S
        if jobz == lc.EIG_VECTOR:
            _column_major(u, m, U.shape[1], ldu, self.dtype)[...] = U
            _column_major(v, n, Vh.shape[0], ldv, self.dtype)[...] = Vh.T
        M[...] = np.nan  # cuSOLVER destroys A
        _memory(info, 1, np.int32)[0] = 0


@pytest.fixture
def fake(monkeypatch):
    """The path wired to host memory and the numpy stand-in; `fake.use(dtype)` picks the
    routines' type."""
    state = {"lib": FakeCusolverDn(np.float64)}
    triangles = {"tril": lambda a, k: HostArray.of(np.tril(a.numpy(), k)),
                 "triu": lambda a, k: HostArray.of(np.triu(a.numpy(), k)),
                 "to_numpy": lambda a: a.numpy().copy()}
    monkeypatch.setattr(lc, "CUDAArray", HostArray)
    monkeypatch.setattr(lc, "from_numpy", lambda values, device: HostArray.of(values))
    monkeypatch.setattr(lc, "strided_copy", lambda dst, src, stream: np.copyto(dst.numpy(),
                                                                               src.numpy()))
    monkeypatch.setattr(lc, "kernel", lambda name, device_type: triangles[name])
    monkeypatch.setattr(lc, "activate", lambda device: None)
    monkeypatch.setattr(lc, "current_stream_handle", lambda device: 0)
    monkeypatch.setattr(lc, "_lib", lambda: state["lib"])
    monkeypatch.setattr(lc, "_handle", lambda device: 1)
    monkeypatch.setattr(lc, "_gesvdj_params", lambda device: 2)
    monkeypatch.setattr(lc, "_workspace", lambda device, nbytes, stream:
                        HostArray.empty((nbytes,), np.uint8, device))
    monkeypatch.setattr(lc, "_failure", None)
    monkeypatch.setattr(lc, "enabled", True)

    class Fake:
        def use(self, dtype):
            state["lib"] = FakeCusolverDn(dtype)
            return state["lib"]
    return Fake()


DTYPES = [np.float32, np.float64]
TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _general(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _spd(rng, shape, dtype):
    x = rng.standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _device(values, layout):
    """`values` as a device array, contiguous or as a transposed (non-contiguous) view."""
    if layout == "contiguous":
        return HostArray.of(values)
    stored = HostArray.of(np.ascontiguousarray(np.swapaxes(values, -1, -2)))
    return lc._transposed(stored)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((3, 3), 2), ((2, 4, 4), 1), ((2, 1, 5, 5), 3)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_solve(fake, rng, dtype, shape, k, layout):
    lib = fake.use(dtype)
    a = _general(rng, shape, dtype) + 3 * np.eye(shape[-1], dtype=dtype)
    b = _general(rng, shape[:-1] + (k,), dtype)
    x, info = lc.solve_ex(_device(a, layout), _device(b, layout))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=TOL[dtype],
                               atol=TOL[dtype])
    assert x.numpy().shape == b.shape and not info.numpy().any()
    assert lib.calls.count("getrf") == lib.calls.count("getrs") == math.prod(shape[:-2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5)])
def test_inv(fake, rng, dtype, shape):
    fake.use(dtype)
    a = _general(rng, shape, dtype) + 3 * np.eye(shape[-1], dtype=dtype)
    out, info = lc.inv_ex(_device(a, "transposed"))
    np.testing.assert_allclose(out.numpy(), np.linalg.inv(a), rtol=TOL[dtype], atol=TOL[dtype])
    assert not info.numpy().any()


def test_solve_reports_the_singular_pivot(fake, rng):
    fake.use(np.float64)
    a = _general(rng, (2, 3, 3), np.float64)
    a[1, 2, :] = 0  # a zero third row: cuSOLVER's third column, so U[2, 2] is exactly 0
    _, info = lc.solve_ex(HostArray.of(a), HostArray.of(_general(rng, (2, 3, 1), np.float64)))
    assert info.numpy().tolist() == [0, 3]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_cholesky_reads_the_lower_triangle(fake, rng, dtype, upper, layout):
    fake.use(dtype)
    a = _spd(rng, (2, 4, 4), dtype)
    junk = a + np.triu(_general(rng, (2, 4, 4), dtype) * 5, 1)  # only the lower part is read
    factor, info = lc.cholesky_ex(_device(junk, layout), upper)
    want = np.linalg.cholesky(a)
    want = np.swapaxes(want, -1, -2) if upper else want
    np.testing.assert_allclose(factor.numpy(), want, rtol=TOL[dtype], atol=TOL[dtype])
    assert not info.numpy().any()


def test_cholesky_reports_the_failing_minor(fake, rng):
    fake.use(np.float64)
    a = _spd(rng, (2, 3, 3), np.float64)
    a[0, 1, 1] = -1.0
    _, info = lc.cholesky_ex(HostArray.of(a), False)
    assert info.numpy().tolist() == [2, 0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("compute_v", [True, False])
def test_eigh(fake, rng, dtype, uplo, compute_v):
    fake.use(dtype)
    a = _spd(rng, (3, 4, 4), dtype) - 4 * np.eye(4, dtype=dtype)
    other = np.triu if uplo == "L" else np.tril
    junk = a + other(_general(rng, a.shape, dtype) * 5, 1 if uplo == "L" else -1)
    w, v = lc.eigh(HostArray.of(junk), uplo, compute_v)
    want_w, want_v = np.linalg.eigh(a)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=TOL[dtype], atol=TOL[dtype])
    if not compute_v:
        assert v.numpy().shape == (0,)
        return
    vectors = v.numpy()
    np.testing.assert_allclose(vectors @ (want_w[..., None] * np.swapaxes(vectors, -1, -2)), a,
                               rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_svd(fake, rng, dtype, shape, full_matrices, layout):
    fake.use(dtype)
    a = _general(rng, shape, dtype)
    U, S, Vh = (x.numpy() for x in lc.svd(_device(a, layout), full_matrices, True))
    want_u, want_s, want_vh = np.linalg.svd(a, full_matrices=full_matrices)
    assert (U.shape, S.shape, Vh.shape) == (want_u.shape, want_s.shape, want_vh.shape)
    np.testing.assert_allclose(S, want_s, rtol=TOL[dtype], atol=TOL[dtype])
    k = S.shape[-1]
    rebuilt = (U[..., :k] * S[..., None, :]) @ Vh[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    for Q in (np.swapaxes(U, -1, -2) @ U, Vh @ np.swapaxes(Vh, -1, -2)):
        np.testing.assert_allclose(Q, np.broadcast_to(np.eye(Q.shape[-1]), Q.shape),
                                   atol=TOL[dtype] * 10)


def test_svd_values_only(fake, rng):
    fake.use(np.float32)
    a = _general(rng, (2, 3, 6), np.float32)
    (S,) = lc.svd(HostArray.of(a), False, False)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False), rtol=2e-5)


def test_plans():
    assert lc.cholesky_plan(False) == (False, lc.FILL_UPPER, "tril")
    assert lc.cholesky_plan(True) == (True, lc.FILL_LOWER, "triu")
    assert (lc.eigh_fill("L"), lc.eigh_fill("U")) == (lc.FILL_UPPER, lc.FILL_LOWER)
    assert lc.svd_plan(5, 3, False) == (1, (3, 3), (3, 5))
    assert lc.svd_plan(5, 3, True) == (0, (3, 3), (5, 5))
    assert lc.svd_plan(3, 5, True) == (0, (5, 5), (3, 3))


def test_dispatch_decisions(fake):
    x32 = HostArray.empty((2, 3, 3), np.float32, 0)
    assert lc.uses_cusolver(x32)
    assert lc.uses_cusolver(HostArray.empty((3, 3), np.float64, 0))
    assert not lc.uses_cusolver(HostArray.empty((3, 3), np.float16, 0))
    assert not lc.uses_cusolver(HostArray.empty((0, 3, 3), np.float32, 0))
    assert not lc.uses_cusolver(HostArray.empty((3, 0), np.float32, 0))
    assert not lc.uses_cusolver(x32, HostArray.empty((2, 3, 0), np.float32, 0))
    lc.enabled = False
    assert not lc.uses_cusolver(x32)


def test_missing_library_warns_once_and_falls_back(fake, monkeypatch, rng):
    def missing(device):
        raise ImportError("libcusolver.so.12: cannot open shared object file")
    monkeypatch.setattr(lc, "_handle", missing)
    x = HostArray.of(_spd(rng, (3, 3), np.float32))
    with pytest.warns(RuntimeWarning, match="cuSOLVER is unavailable.*host round trip"):
        assert not lc.uses_cusolver(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not lc.uses_cusolver(x)
    key = ("linalg_cholesky_ex", "cuda")
    monkeypatch.setitem(dispatch._KERNELS, key, dispatch._KERNELS[key])
    host_calls = []
    monkeypatch.setattr(lc, "on_host", lambda fn: lambda *args: host_calls.append(args) or "host")
    run = lc._dispatching("linalg_cholesky_ex", lambda *args: "cusolver")
    assert run(x, False) == "host" and host_calls == [(x, False)]
    assert dispatch._KERNELS[key] is run


def test_enum_values_are_the_libraries():
    pytest.importorskip("nvmath")
    from nvmath.bindings import cublas, cusolver
    assert (lc.FILL_LOWER, lc.FILL_UPPER) == (int(cublas.FillMode.LOWER),
                                              int(cublas.FillMode.UPPER))
    assert (lc.OP_N, lc.OP_T) == (int(cublas.Operation.N), int(cublas.Operation.T))
    assert (lc.EIG_NOVECTOR, lc.EIG_VECTOR) == (int(cusolver.EigMode.NOVECTOR),
                                                int(cusolver.EigMode.VECTOR))


def test_bindings_take_the_arguments_passed():
    """Each routine's parameter count in nvmath's bindings, as the path calls it."""
    pytest.importorskip("nvmath")
    from nvmath.bindings import cusolverDn
    counts = {"getrf": 8, "getrs": 10, "getrf_buffer_size": 5, "potrf": 8,
              "potrf_buffer_size": 5, "syevd": 10, "syevd_buffer_size": 7, "gesvdj": 16,
              "gesvdj_buffer_size": 13}
    for name, count in counts.items():
        for prefix in "sd":
            signature = getattr(cusolverDn, prefix + name).__doc__.split("\n")[0]
            assert signature.count(",") + 1 == count, signature
