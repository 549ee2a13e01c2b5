"""genesis.linalg's solve, inv, cholesky, eigh and svd on "cuda" through cuSOLVER, against PyTorch
on the CPU: float32 and float64, batches, transposed inputs, info of singular and indefinite
matrices, gradients, and the host round trip they fall back to. Skipped without a GPU.
"""

import numpy as np
import pytest
import torch
from helpers import assert_close, lay_out, skip_no_cuda, to_torch

import genesis
from genesis import dispatch
from genesis.backends.cuda import linalg_cusolver

pytestmark = skip_no_cuda

DTYPES = [genesis.float32, genesis.float64]
TOL = {genesis.float32: (1e-4, 1e-4), genesis.float64: (1e-10, 1e-10)}


def _pair(values, dtype, layout="contiguous"):
    g = lay_out(genesis.tensor(values, dtype=dtype, device="cuda"), layout)
    return g, to_torch(g)


def _spd(rng, shape):
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_cusolver_is_loaded():
    """The GPU machines have libcusolver (PyTorch's dependencies install it): no fallback."""
    dispatch.kernel("linalg_svd", "cuda")
    assert linalg_cusolver.available(0), linalg_cusolver._failure


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 5), (3, 17, 17), (2, 1, 64, 64)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_solve(dtype, shape, layout, rng):
    a = rng.standard_normal(shape) + 2 * np.eye(shape[-1])
    ga, ta = _pair(a, dtype, layout)
    gb, tb = _pair(rng.standard_normal(shape[:-1] + (3,)), dtype, layout)
    rtol, atol = TOL[dtype]
    assert_close(genesis.linalg.solve(ga, gb), torch.linalg.solve(ta, tb), rtol=rtol * 10,
                 atol=atol * 10)
    assert_close(genesis.linalg.solve(ga, gb[..., 0]), torch.linalg.solve(ta, tb[..., 0]),
                 rtol=rtol * 10, atol=atol * 10)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_inv(dtype, layout, rng):
    ga, ta = _pair(rng.standard_normal((3, 24, 24)) + 3 * np.eye(24), dtype, layout)
    rtol, atol = TOL[dtype]
    assert_close(genesis.linalg.inv(ga), torch.linalg.inv(ta), rtol=rtol * 10, atol=atol * 10)


def test_solve_singular_raises_with_the_pivot(rng):
    a = rng.standard_normal((2, 4, 4))
    a[1, 3, :] = 0
    ga, _ = _pair(a, genesis.float64)
    _, info = genesis.linalg.solve_ex(ga, genesis.ones(2, 4, 1, dtype=genesis.float64,
                                                       device="cuda"))
    assert info.cpu().tolist() == [0, 4]
    with pytest.raises(genesis.linalg.LinAlgError, match="singular"):
        genesis.linalg.solve(ga, genesis.ones(2, 4, 1, dtype=genesis.float64, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_cholesky(dtype, upper, layout, rng):
    ga, ta = _pair(_spd(rng, (3, 33, 33)), dtype, layout)
    rtol, atol = TOL[dtype]
    assert_close(genesis.linalg.cholesky(ga, upper=upper),
                 torch.linalg.cholesky(ta, upper=upper), rtol=rtol * 10, atol=atol * 10)


def test_cholesky_info(rng):
    a = _spd(rng, (2, 5, 5))
    a[1, 2, 2] = -100.0
    ga, ta = _pair(a, genesis.float64)
    _, info = genesis.linalg.cholesky_ex(ga)
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(ta).info.tolist()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo, rng):
    a = rng.standard_normal((3, 20, 20))
    ga, ta = _pair(a + np.swapaxes(a, -1, -2), dtype)
    rtol, atol = TOL[dtype]
    w, v = genesis.linalg.eigh(ga, UPLO=uplo)
    tw, _ = torch.linalg.eigh(ta, UPLO=uplo)
    assert_close(w, tw, rtol=rtol * 10, atol=atol * 10)
    rebuilt = v @ genesis.diag_embed(w) @ v.mT
    assert_close(rebuilt, ta, rtol=rtol * 100, atol=atol * 100)
    assert_close(genesis.linalg.eigvalsh(ga, UPLO=uplo), tw, rtol=rtol * 10, atol=atol * 10)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (2, 16, 16)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(dtype, shape, full_matrices, rng):
    ga, ta = _pair(rng.standard_normal(shape), dtype)
    rtol, atol = TOL[dtype]
    U, S, Vh = genesis.linalg.svd(ga, full_matrices=full_matrices)
    tU, tS, tVh = torch.linalg.svd(ta, full_matrices=full_matrices)
    assert tuple(U.shape) == tuple(tU.shape) and tuple(Vh.shape) == tuple(tVh.shape)
    assert_close(S, tS, rtol=rtol * 10, atol=atol * 10)
    k = S.shape[-1]
    assert_close(U[..., :k] @ genesis.diag_embed(S) @ Vh[..., :k, :], ta, rtol=rtol * 100,
                 atol=atol * 100)
    assert_close(genesis.linalg.svdvals(ga), tS, rtol=rtol * 10, atol=atol * 10)


def test_gradients_through_cusolver(rng):
    """The gradients, written with genesis ops, agree with PyTorch's on the CPU."""
    a = rng.standard_normal((6, 6)) + 3 * np.eye(6)
    spd = _spd(rng, (6, 6))
    cases = [(lambda la, x: la.solve(x, x[:, :2]).sum(), a),
             (lambda la, x: la.cholesky(x).sum(), spd),
             (lambda la, x: la.eigh(x)[0].pow(2).sum(), spd),
             (lambda la, x: la.svdvals(x).sum(), a)]
    for fn, values in cases:
        g = genesis.tensor(values, dtype=genesis.float64, device="cuda", requires_grad=True)
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        fn(genesis.linalg, g).backward()
        fn(torch.linalg, t).backward()
        assert_close(g.grad, t.grad, rtol=1e-8, atol=1e-8)


def test_host_round_trip_when_disabled(monkeypatch, rng):
    """`enabled = False` (benchmarks/linalg.py --host) gives the same answers."""
    ga, ta = _pair(_spd(rng, (2, 9, 9)), genesis.float64)
    monkeypatch.setattr(linalg_cusolver, "enabled", False)
    assert_close(genesis.linalg.cholesky(ga), torch.linalg.cholesky(ta))
    assert_close(genesis.linalg.svdvals(ga), torch.linalg.svdvals(ta))
