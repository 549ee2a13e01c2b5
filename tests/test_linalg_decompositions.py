"""genesis.linalg's decompositions and solvers against torch.linalg: values, gradients (weighted
sums, sign-invariant for singular and eigen vectors), float64 gradcheck, and PyTorch's errors.

Inputs are random and well conditioned (condition number below about 10, n <= 5, singular
values and eigenvalues at least 0.2 apart). LAPACK's factorizations are backward stable, so two
implementations agree to a small multiple of the dtype's epsilon times the condition number;
gradients chain several solves, and those of svd and eigh divide by differences of (squared)
singular values or eigenvalues, which amplifies that by up to about 20 more. The tolerance is
1000 eps for both (100 eps fails now and then on svd gradients).
"""

import os

import numpy as np
import pytest
import torch

import genesis
import genesis.linalg as LA
from genesis.autograd import gradcheck
from helpers import to_torch

DTYPES = [genesis.float32, genesis.float64]
TORCH = {genesis.float32: torch.float32, genesis.float64: torch.float64}


def tol(dtype):
    eps = np.finfo(np.float32 if dtype is genesis.float32 else np.float64).eps
    return dict(rtol=1000 * eps, atol=1000 * eps)


def close(g, t, dtype=None):
    dtype = dtype or g.dtype
    np.testing.assert_allclose(g.detach().cpu().numpy().astype(np.float64),
                               t.detach().numpy().astype(np.float64), **tol(dtype))


def orthogonal(rng, batch, n):
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return q


def general(rng, shape):
    """Square or not: U diag(s) V^T with distinct singular values in [1, 3]."""
    *batch, m, n = shape
    k = min(m, n)
    s = np.sort(rng.uniform(1, 3, (*batch, k)))[..., ::-1] + np.linspace(0.2, 0, k)
    u = orthogonal(rng, batch, m)[..., :k]
    v = orthogonal(rng, batch, n)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def symmetric(rng, shape, positive=False):
    """Q diag(l) Q^T with eigenvalues of magnitude 0.5 to 0.7 + 0.6 (n - 1), spaced at least 0.3
    apart: all positive if asked, else of alternating signs (none near 0, so the condition
    number stays under about 7)."""
    *batch, n, _ = shape
    magnitudes = np.linspace(0.5, 0.5 + 0.6 * (n - 1), n) + rng.uniform(0, 0.2, (*batch, n))
    lam = magnitudes if positive else magnitudes * np.where(np.arange(n) % 2, 1.0, -1.0)
    q = orthogonal(rng, batch, n)
    return (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)


def pair(arr, dtype, device="cpu", requires_grad=False):
    g = genesis.tensor(np.ascontiguousarray(arr), dtype=dtype, device=device)
    t = torch.tensor(np.ascontiguousarray(arr), dtype=TORCH[dtype])
    if requires_grad:
        g.requires_grad_(True)
        t.requires_grad_(True)
    return g, t


def weighted_backward(outs_g, outs_t, rng):
    """Backward of one random weighting of every output in both frameworks."""
    total_g, total_t = 0, 0
    for g, t in zip(outs_g, outs_t):
        w = rng.standard_normal(tuple(t.shape))
        total_g = total_g + (g * genesis.tensor(w, dtype=g.dtype, device=g.device)).sum()
        total_t = total_t + (t * torch.tensor(w, dtype=t.dtype)).sum()
    total_g.backward()
    total_t.backward()


SQUARE = [(4, 4), (2, 3, 3), (2, 1, 5, 5), (1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("op", ["det", "inv", "slogdet"])
def test_det_inv_slogdet(device, rng, dtype, shape, op):
    a = general(rng, shape) * rng.choice([-1, 1], shape[:-2] + (1, 1))
    g, t = pair(a, dtype, device, requires_grad=True)
    out_g, out_t = getattr(LA, op)(g), getattr(torch.linalg, op)(t)
    outs_g = out_g if isinstance(out_g, tuple) else (out_g,)
    outs_t = out_t if isinstance(out_t, tuple) else (out_t,)
    for x, y in zip(outs_g, outs_t):
        close(x, y)
    weighted_backward(outs_g[-1:], outs_t[-1:], rng)
    close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((4, 4), (4, 2)), ((4, 4), (4,)), ((2, 3, 3), (3, 1)),
                                             ((3, 3), (2, 3, 2)), ((2, 3, 3), (2, 3))])
@pytest.mark.parametrize("left", [True, False])
def test_solve(device, rng, dtype, a_shape, b_shape, left):
    vector = len(b_shape) == 1 or b_shape == a_shape[:-1]
    if not left and not vector:
        b_shape = b_shape[:-2] + b_shape[-2:][::-1]
    ga, ta = pair(general(rng, a_shape), dtype, device, True)
    gb, tb = pair(rng.standard_normal(b_shape), dtype, device, True)
    if not left and vector:  # vectors only on the left
        same_error(lambda: LA.solve(ga, gb, left=left),
                   lambda: torch.linalg.solve(ta, tb, left=left))
        return
    out_g, out_t = LA.solve(ga, gb, left=left), torch.linalg.solve(ta, tb, left=left)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(ga.grad, ta.grad)
    close(gb.grad, tb.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(device, rng, dtype, upper, left, unit):
    a = rng.uniform(-0.3, 0.3, (2, 4, 4)) + 2 * np.eye(4)
    ga, ta = pair(a, dtype, device, True)
    gb, tb = pair(rng.standard_normal((2, 4, 3) if left else (2, 3, 4)), dtype, device, True)
    kw = dict(upper=upper, left=left, unitriangular=unit)
    out_g, out_t = LA.solve_triangular(ga, gb, **kw), torch.linalg.solve_triangular(ta, tb, **kw)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(ga.grad, ta.grad)
    close(gb.grad, tb.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(device, rng, dtype, shape, upper):
    g, t = pair(symmetric(rng, shape, positive=True), dtype, device, True)
    out_g, out_t = LA.cholesky(g, upper=upper), torch.linalg.cholesky(t, upper=upper)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)
    L, info = LA.cholesky_ex(g)
    assert info.dtype is genesis.int32 and not any(info.cpu().numpy().reshape(-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(device, rng, dtype, shape, mode):
    """A wide input's gradient goes through the inverse of R's leading square block, so that
    block's singular values are kept in [1, 3] as the whole input's are."""
    arr = general(rng, shape)
    *_, m, n = shape
    if m < n:
        arr[..., :m] = general(rng, (*shape[:-1], m))
    g, t = pair(arr, dtype, device, True)
    (Qg, Rg), (Qt, Rt) = LA.qr(g, mode), torch.linalg.qr(t, mode)
    close(Rg, Rt)
    if mode == "r":
        assert Qg.numel() == 0
        return
    close(Qg, Qt)
    if mode == "complete" and shape[-2] > shape[-1]:
        return
    weighted_backward([Qg, Rg], [Qt, Rt], rng)
    close(g.grad, t.grad)


def sign_invariant(outs):
    """U^2, S, Vh^2: unchanged by flipping a singular (eigen) vector's sign."""
    return [o * o if o.ndim == outs[1].ndim + 1 else o for o in outs]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(device, rng, dtype, shape, full):
    g, t = pair(general(rng, shape), dtype, device, True)
    outs_g, outs_t = LA.svd(g, full_matrices=full), torch.linalg.svd(t, full_matrices=full)
    k = min(shape[-2:])
    Ug, Sg, Vg = outs_g
    close(Sg, outs_t.S)
    recon = (Ug[..., :k] * Sg.unsqueeze(-2)) @ Vg[..., :k, :]
    close(recon, t.detach())
    assert tuple(Ug.shape) == tuple(outs_t.U.shape) and tuple(Vg.shape) == tuple(outs_t.Vh.shape)
    trimmed_g = [Ug[..., :k], Sg, Vg[..., :k, :]]
    trimmed_t = [outs_t.U[..., :k], outs_t.S, outs_t.Vh[..., :k, :]]
    close(sign_invariant(trimmed_g)[0], sign_invariant(trimmed_t)[0])
    weighted_backward(sign_invariant(trimmed_g), sign_invariant(trimmed_t), rng)
    close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svdvals(device, rng, dtype):
    g, t = pair(general(rng, (2, 4, 3)), dtype, device, True)
    out_g, out_t = LA.svdvals(g), torch.linalg.svdvals(t)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)
    with genesis.no_grad():
        close(LA.svdvals(g), out_t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(device, rng, dtype, shape, uplo):
    a = symmetric(rng, shape)
    a = np.triu(a) if uplo == "U" else np.tril(a)  # only the named triangle is read
    g, t = pair(a, dtype, device, True)
    (Lg, Vg), (Lt, Vt) = LA.eigh(g, uplo), torch.linalg.eigh(t, uplo)
    close(Lg, Lt)
    close(Vg * Vg, Vt * Vt)
    close(LA.eigvalsh(g, uplo), Lt)
    weighted_backward([Lg, Vg * Vg], [Lt, Vt * Vt], rng)
    close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2)])
def test_pinv(device, rng, dtype, shape):
    g, t = pair(general(rng, shape), dtype, device, True)
    out_g, out_t = LA.pinv(g), torch.linalg.pinv(t)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)


def test_pinv_tolerances_and_hermitian(rng):
    a = general(rng, (4, 4))
    s = np.linalg.svd(a, compute_uv=False)
    for kw in (dict(atol=float(s[1]) - 0.01), dict(rtol=float(s[2] / s[0]) - 1e-3),
               dict(atol=0.0),
               dict(atol=genesis.tensor(float(s[2]) - 0.01, dtype=genesis.float64))):
        tkw = {k: (to_torch(v) if isinstance(v, genesis.Tensor) else v) for k, v in kw.items()}
        close(LA.pinv(genesis.tensor(a), **kw), torch.linalg.pinv(torch.tensor(a), **tkw))
    h = symmetric(rng, (4, 4))
    close(LA.pinv(genesis.tensor(h), hermitian=True),
          torch.linalg.pinv(torch.tensor(h), hermitian=True))
    close(LA.matrix_rank(genesis.tensor(a), atol=float(s[1]) - 0.01),
          torch.linalg.matrix_rank(torch.tensor(a), atol=float(s[1]) - 0.01))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((5, 3), (5, 2)), ((5, 3), (5,)),
                                             ((2, 4, 4), (2, 4, 1)),
                                             ((3, 5), (3, 2))])
def test_lstsq(device, rng, dtype, a_shape, b_shape):
    ga, ta = pair(general(rng, a_shape), dtype, device, True)
    gb, tb = pair(rng.standard_normal(b_shape), dtype, device, True)
    out_g, out_t = LA.lstsq(ga, gb), torch.linalg.lstsq(ta, tb)
    close(out_g.solution, out_t.solution)
    assert out_g.rank.tolist() == out_t.rank.tolist()
    assert tuple(out_g.residuals.shape) == tuple(out_t.residuals.shape)
    if out_t.residuals.numel():
        close(out_g.residuals, out_t.residuals)
    weighted_backward([out_g.solution], [out_t.solution], rng)
    close(ga.grad, ta.grad)
    close(gb.grad, tb.grad)
    for driver in ("gelsd", "gels"):
        got, want = LA.lstsq(ga, gb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
        assert tuple(got.singular_values.shape) == tuple(want.singular_values.shape)
        if want.singular_values.numel():
            close(got.singular_values, want.singular_values)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
def test_lu(device, rng, dtype, shape):
    g, t = pair(general(rng, shape), dtype, device, True)
    got, want = LA.lu(g), torch.linalg.lu(t)
    for x, y in zip(got, want):
        close(x, y)
    packed, pivots = LA.lu_factor(g)
    want_packed, want_pivots = torch.linalg.lu_factor(t)
    close(packed, want_packed)
    assert pivots.tolist() == want_pivots.tolist()
    weighted_backward(list(got[1:]), list(want[1:]), rng)
    close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(device, rng, dtype, ord, keepdim):
    g, t = pair(general(rng, (2, 4, 3)), dtype, device, True)
    out_g = LA.matrix_norm(g, ord, dim=(0, -1), keepdim=keepdim)
    out_t = torch.linalg.matrix_norm(t, ord, dim=(0, -1), keepdim=keepdim)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)


@pytest.mark.parametrize("args", [(None,), (2,), ("nuc",), (1, (0, 1)), (3, 1), (None, 0)])
def test_norm(rng, args):
    a = rng.standard_normal((3, 4))
    close(LA.norm(genesis.tensor(a), *args), torch.linalg.norm(torch.tensor(a), *args))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -3])
def test_matrix_power(device, rng, n):
    g, t = pair(general(rng, (2, 3, 3)) / 2, genesis.float64, device, True)
    out_g, out_t = LA.matrix_power(g, n), torch.linalg.matrix_power(t, n)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)  # n == 0: zeros, not None
    if n >= 0:  # products (and n = 0, 1: copies) are contiguous, as torch's
        assert LA.matrix_power(g.transpose(1, 2), n).is_contiguous()
    assert genesis.matrix_power(genesis.ones(2, 2, dtype=genesis.int64), 3).tolist() == \
        torch.ones(2, 2, dtype=torch.long).matrix_power(3).tolist()


def test_matrix_rank_cond(rng):
    a = general(rng, (3, 5, 4))
    a[1, :, 3] = a[1, :, 0] + a[1, :, 1]
    got = LA.matrix_rank(genesis.tensor(a))
    assert got.dtype is genesis.int64
    assert got.tolist() == torch.linalg.matrix_rank(torch.tensor(a)).tolist()
    h = symmetric(rng, (4, 4))
    assert LA.matrix_rank(genesis.tensor(h), hermitian=True).item() == 4
    sq = general(rng, (2, 3, 3))
    for p in (None, 2, -2, 1, "fro", float("inf")):
        close(LA.cond(genesis.tensor(sq), p), torch.linalg.cond(torch.tensor(sq), p))


def test_cross_multi_dot_vecdot_diagonal(device, rng):
    ga, ta = pair(rng.standard_normal((2, 3)), genesis.float64, device, True)
    gb, tb = pair(rng.standard_normal((4, 1, 3)), genesis.float64, device, True)
    out_g, out_t = LA.cross(ga, gb.squeeze(1)[:2]), torch.linalg.cross(ta, tb.squeeze(1)[:2])
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(ga.grad, ta.grad)
    x = rng.standard_normal((3, 3, 2))
    close(genesis.cross(genesis.tensor(x), genesis.tensor(x[::-1].copy())),
          torch.cross(torch.tensor(x), torch.tensor(x[::-1].copy()), dim=0))
    mats = [rng.standard_normal(s) for s in [(3,), (3, 4), (4, 2), (2, 5), (5,)]]
    close(LA.multi_dot([genesis.tensor(m) for m in mats]),
          torch.linalg.multi_dot([torch.tensor(m) for m in mats]))
    y = rng.standard_normal((2, 3, 4))
    close(LA.diagonal(genesis.tensor(y), offset=1),
          torch.linalg.diagonal(torch.tensor(y), offset=1))
    close(LA.vecdot(genesis.tensor(y), genesis.tensor(y), dim=1),
          torch.linalg.vecdot(torch.tensor(y), torch.tensor(y), dim=1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_exp(device, rng, dtype):
    a = rng.standard_normal((2, 4, 4)) * np.array([0.1, 2.0])[:, None, None]
    g, t = pair(a, dtype, device, True)
    out_g, out_t = LA.matrix_exp(g), torch.linalg.matrix_exp(t)
    close(out_g, out_t)
    close(genesis.matrix_exp(g), out_t)
    weighted_backward([out_g], [out_t], rng)
    close(g.grad, t.grad)
    assert tuple(LA.matrix_exp(genesis.zeros(0, 2, 2)).shape) == (0, 2, 2)


@pytest.mark.parametrize("kw", [{}, {"adjoint": True}, {"left": False}])
def test_lu_solve(device, rng, kw):
    ga, ta = pair(general(rng, (2, 4, 4)), genesis.float64, device, True)
    gb, tb = pair(rng.standard_normal((2, 4, 3) if kw.get("left", True) else (2, 3, 4)),
                  genesis.float64, device, True)
    (LU, piv), (tLU, tpiv) = LA.lu_factor(ga), torch.linalg.lu_factor(ta)
    out_g, out_t = LA.lu_solve(LU, piv, gb, **kw), torch.linalg.lu_solve(tLU, tpiv, tb, **kw)
    close(out_g, out_t)
    weighted_backward([out_g], [out_t], rng)
    close(ga.grad, ta.grad)
    close(gb.grad, tb.grad)


def test_vander_tensorinv_tensorsolve(rng):
    for x, n in ((np.array([1, 2, 3]), None), (rng.standard_normal((2, 3)), 5)):
        close(LA.vander(genesis.tensor(x), N=n), torch.linalg.vander(torch.tensor(x), N=n),
              genesis.float64)
    same_error(lambda: LA.vander(genesis.tensor(2.0)),
               lambda: torch.linalg.vander(torch.tensor(2.0)))
    a = general(rng, (12, 12)).reshape(4, 3, 6, 2)
    close(LA.tensorinv(genesis.tensor(a)), torch.linalg.tensorinv(torch.tensor(a)))
    close(LA.tensorinv(genesis.tensor(a.reshape(12, 12)), ind=1),
          torch.linalg.tensorinv(torch.tensor(a.reshape(12, 12)), ind=1))
    same_error(lambda: LA.tensorinv(genesis.ones(4, 3, 4), ind=0),
               lambda: torch.linalg.tensorinv(torch.ones(4, 3, 4), ind=0))
    same_error(lambda: LA.tensorinv(genesis.ones(4, 3, 4), ind=1),
               lambda: torch.linalg.tensorinv(torch.ones(4, 3, 4), ind=1))
    A, B = general(rng, (6, 6)).reshape(2, 3, 6), rng.standard_normal((2, 3))
    close(LA.tensorsolve(genesis.tensor(A), genesis.tensor(B)),
          torch.linalg.tensorsolve(torch.tensor(A), torch.tensor(B)))
    At = np.moveaxis(A, 2, 0).copy()
    close(LA.tensorsolve(genesis.tensor(At), genesis.tensor(B), dims=(0,)),
          torch.linalg.tensorsolve(torch.tensor(At), torch.tensor(B), dims=(0,)))


def test_legacy_lu(rng):
    for shape in ((2, 4, 4), (5, 3), (3, 5)):
        a = general(rng, shape)
        ga, ta = genesis.tensor(a), torch.tensor(a)
        (LU, piv, info), (tLU, tpiv, tinfo) = genesis.lu(ga, get_infos=True), \
            torch.lu(ta, get_infos=True)
        close(LU, tLU)
        assert piv.tolist() == tpiv.tolist() and info.tolist() == tinfo.tolist()
        for x, y in zip(genesis.lu_unpack(LU, piv), torch.lu_unpack(tLU, tpiv)):
            close(x, y)
    b = rng.standard_normal((2, 4, 2))
    a = general(rng, (2, 4, 4))
    LU, piv = genesis.tensor(a).lu()
    tLU, tpiv = torch.tensor(a).lu()
    close(genesis.lu_solve(genesis.tensor(b), LU, piv),
          torch.lu_solve(torch.tensor(b), tLU, tpiv))


def test_torch_forms(rng):
    """genesis.det/logdet/slogdet/inverse/svd(U, S, V)/qr/pinverse/cholesky_* as torch.*."""
    a = general(rng, (2, 4, 4))
    ga, ta = genesis.tensor(a), torch.tensor(a)
    for name in ("det", "logdet", "inverse", "pinverse"):
        close(getattr(genesis, name)(ga), getattr(torch, name)(ta))
        close(getattr(ga, name)(), getattr(ta, name)())
    close(genesis.slogdet(ga).logabsdet, torch.slogdet(ta).logabsdet)
    U, S, V = genesis.svd(ga)
    close((U * S.unsqueeze(-2)) @ V.mT, ta)
    U0, S0, V0 = genesis.svd(ga[0, :, :3], compute_uv=False)
    assert tuple(U0.shape) == (4, 4) and tuple(V0.shape) == (3, 3) and not U0.numpy().any()
    Q, R = genesis.qr(ga, some=False)
    close(R, torch.qr(ta, some=False).R)
    spd = symmetric(rng, (3, 3), positive=True)
    b = rng.standard_normal((3, 2))
    for upper in (False, True):
        L = genesis.cholesky(genesis.tensor(spd), upper=upper)
        tL = torch.linalg.cholesky(torch.tensor(spd), upper=upper)
        close(genesis.cholesky_solve(genesis.tensor(b), L, upper),
              torch.cholesky_solve(torch.tensor(b), tL, upper))
        close(genesis.cholesky_inverse(L, upper), torch.cholesky_inverse(tL, upper))
    tri = np.triu(a[0]) + 3 * np.eye(4)
    for transpose in (False, True):
        got = genesis.triangular_solve(genesis.tensor(b[:1].repeat(4, 0)), genesis.tensor(tri),
                                       transpose=transpose)
        want = torch.triangular_solve(torch.tensor(b[:1].repeat(4, 0)), torch.tensor(tri),
                                      transpose=transpose)
        close(got.solution, want.solution)
        close(got.cloned_coefficient, want.cloned_coefficient)
    assert np.isnan(genesis.logdet(genesis.tensor(-np.eye(3))).item())


def sym(x):
    return (x + x.mT) / 2


def spd_of(x):
    return x @ x.mT + genesis.eye(x.shape[-1], dtype=x.dtype)


GRADCHECKS = {
    "det": (lambda a: LA.det(a), (2, 3, 3)),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, (3, 3)),
    "inv": (lambda a: LA.inv(a), (2, 3, 3)),
    "solve": (lambda a: LA.solve(a, a[..., :2] + 1), (3, 3)),
    "solve_triangular": (lambda a: LA.solve_triangular(a + 3 * genesis.eye(3, dtype=a.dtype),
                                                       a[..., :2], upper=True), (3, 3)),
    "cholesky": (lambda a: LA.cholesky(spd_of(a)), (2, 3, 3)),
    "cholesky_upper": (lambda a: LA.cholesky(spd_of(a), upper=True), (3, 3)),
    "qr_tall": (lambda a: LA.qr(a), (4, 3)),
    "qr_wide": (lambda a: LA.qr(a), (2, 4)),
    "svd_tall": (lambda a: [x * x if x.ndim == 2 else x for x in LA.svd(a, False)], (4, 3)),
    "svd_wide": (lambda a: [x * x if x.ndim == 2 else x for x in LA.svd(a, False)], (3, 4)),
    "svdvals": (lambda a: LA.svdvals(a), (4, 3)),
    "eigh": (lambda a: [LA.eigh(sym(a))[0], LA.eigh(sym(a))[1] ** 2], (3, 3)),
    "pinv": (lambda a: LA.pinv(a), (4, 3)),
    "pinv_wide": (lambda a: LA.pinv(a), (2, 3)),
    "lstsq": (lambda a: LA.lstsq(a, a[..., :1] * 2 + 1).solution, (4, 3)),
    "lu": (lambda a: LA.lu(a)[1:], (3, 3)),
    "lu_wide": (lambda a: LA.lu(a)[1:], (2, 4)),
    "lu_tall": (lambda a: LA.lu(a)[1:], (4, 2)),
    "lu_factor": (lambda a: LA.lu_factor(a).LU, (3, 4)),
    "multi_dot": (lambda a: LA.multi_dot([a[0], a, a.mT, a[:, 1]]), (3, 3)),
    "matrix_norm_2": (lambda a: LA.matrix_norm(a, 2), (3, 4)),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), (3, 4)),
    "matrix_power": (lambda a: LA.matrix_power(a, -2), (3, 3)),
    "cholesky_inverse": (lambda a: genesis.cholesky_inverse(LA.cholesky(spd_of(a))), (3, 3)),
    "matrix_exp": (lambda a: LA.matrix_exp(a), (3, 3)),
    "lu_solve": (lambda a: LA.lu_solve(*LA.lu_factor(a), a[..., :2] * 2), (3, 3)),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(rng, name):
    fn, shape = GRADCHECKS[name]
    if name.startswith("eigh"):
        a = symmetric(rng, shape)
    else:
        a = general(rng, shape)
    x = genesis.tensor(a, dtype=genesis.float64, requires_grad=True)
    assert gradcheck(fn, (x,))


def test_gradgrad_inv_and_solve(rng):
    from genesis.autograd import gradgradcheck
    x = genesis.tensor(general(rng, (3, 3)), requires_grad=True, dtype=genesis.float64)
    assert gradgradcheck(lambda a: LA.inv(a), (x,))
    assert gradgradcheck(lambda a: LA.cholesky(spd_of(a)), (x,))


def torch_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def same_error(genesis_fn, torch_fn, error=RuntimeError):
    """Genesis raises `error` with torch's message where torch's names the linalg op; where
    torch's comes from an internal kernel ('"lu_cpu" not implemented for 'Half''), genesis's
    names the op and the dtype instead."""
    want = torch_error(torch_fn)
    assert isinstance(want, RuntimeError)
    with pytest.raises(error) as got:
        genesis_fn()
    want = str(want).split("\n")[0]
    if want.startswith('"'):
        assert str(got.value).startswith("linalg.") and want.split("'")[-2] in str(got.value)
    else:
        assert str(got.value) == want
    return got.value


SINGULAR = [[1.0, 2.0], [2.0, 4.0]]
INDEFINITE = [[1.0, 2.0], [2.0, 1.0]]


@pytest.mark.parametrize("batched", [False, True])
def test_singular_and_indefinite_errors(batched):
    def inputs(bad):
        m = np.array([np.eye(2), bad]) if batched else np.array(bad)
        return genesis.tensor(m, dtype=genesis.float32), torch.tensor(m, dtype=torch.float32)

    g, t = inputs(SINGULAR)
    err = same_error(lambda: LA.inv(g), lambda: torch.linalg.inv(t), LA.LinAlgError)
    assert isinstance(err, RuntimeError)
    same_error(lambda: LA.solve(g, g), lambda: torch.linalg.solve(t, t), LA.LinAlgError)
    same_error(lambda: LA.lu_factor(g), lambda: torch.linalg.lu_factor(t))
    assert LA.inv_ex(g).info.tolist() == torch.linalg.inv_ex(t).info.tolist()
    g, t = inputs(INDEFINITE)
    same_error(lambda: LA.cholesky(g), lambda: torch.linalg.cholesky(t), LA.LinAlgError)
    assert LA.cholesky_ex(g).info.tolist() == torch.linalg.cholesky_ex(t).info.tolist()


@pytest.mark.parametrize("op", ["inv", "det", "slogdet", "cholesky", "eigh", "svd", "qr",
                                "eigvalsh", "svdvals"])
def test_input_errors(op):
    square = op not in ("svd", "qr", "svdvals")
    for g, t in [(genesis.ones(2, 2, dtype=genesis.int64), torch.ones(2, 2, dtype=torch.long)),
                 (genesis.ones(3), torch.ones(3))] + \
            ([(genesis.ones(2, 3), torch.ones(2, 3)),
              (genesis.eye(2, dtype=genesis.float16), torch.eye(2).half())] if square else []):
        same_error(lambda: getattr(LA, op)(g), lambda: getattr(torch.linalg, op)(t))


def test_argument_errors():
    e, te = genesis.eye(2), torch.eye(2)
    same_error(lambda: LA.solve(e, genesis.ones(3)), lambda: torch.linalg.solve(te, torch.ones(3)))
    same_error(lambda: LA.solve(e, genesis.ones(2, dtype=genesis.float64)),
               lambda: torch.linalg.solve(te, torch.ones(2, dtype=torch.float64)))
    same_error(lambda: LA.qr(e, mode="x"), lambda: torch.linalg.qr(te, mode="x"))
    same_error(lambda: LA.eigh(e, UPLO="X"), lambda: torch.linalg.eigh(te, UPLO="X"))
    same_error(lambda: LA.matrix_power(genesis.ones(2, 3), 2),
               lambda: torch.linalg.matrix_power(torch.ones(2, 3), 2))
    same_error(lambda: LA.cross(genesis.ones(2), genesis.ones(2)),
               lambda: torch.linalg.cross(torch.ones(2), torch.ones(2)))
    same_error(lambda: LA.cross(genesis.ones(3), genesis.ones(2, 3)),
               lambda: torch.linalg.cross(torch.ones(3), torch.ones(2, 3)))
    same_error(lambda: LA.lstsq(genesis.ones(3, 2), genesis.ones(4, 2)),
               lambda: torch.linalg.lstsq(torch.ones(3, 2), torch.ones(4, 2)))
    same_error(lambda: LA.matrix_norm(genesis.ones(3, 3), ord=3),
               lambda: torch.linalg.matrix_norm(torch.ones(3, 3), ord=3))
    same_error(lambda: LA.multi_dot([genesis.ones(2, 2)]),
               lambda: torch.linalg.multi_dot([torch.ones(2, 2)]))
    same_error(lambda: LA.multi_dot([genesis.ones(2, 2), genesis.ones(2, 2, 2)]),
               lambda: torch.linalg.multi_dot([torch.ones(2, 2), torch.ones(2, 2, 2)]))
    same_error(lambda: LA.pinv(genesis.ones(2, 2, dtype=genesis.int64)),
               lambda: torch.linalg.pinv(torch.ones(2, 2, dtype=torch.long)))


def test_lu_without_pivoting():
    for name in ("lu", "lu_factor", "lu_factor_ex"):
        same_error(lambda: getattr(LA, name)(genesis.eye(2), pivot=False),
                   lambda: getattr(torch.linalg, name)(torch.eye(2), pivot=False))


def test_qr_backward_errors():
    for mode, shape in (("r", (3, 2)), ("complete", (3, 2))):
        x = genesis.ones(*shape, requires_grad=True)
        tx = torch.ones(*shape, requires_grad=True)
        out = LA.qr(x, mode=mode)
        tout = torch.linalg.qr(tx, mode=mode)
        same_error(lambda: (out.R.sum() + out.Q.sum()).backward(),
                   lambda: (tout.R.sum() + tout.Q.sum()).backward())


def test_empty_and_noncontiguous(rng):
    for op in ("inv", "det", "svdvals", "pinv"):
        e = getattr(LA, op)(genesis.zeros(0, 3, 3))
        assert tuple(e.shape) == tuple(getattr(torch.linalg, op)(torch.zeros(0, 3, 3)).shape)
    a = general(rng, (3, 4, 4))
    g = genesis.tensor(a.transpose(0, 2, 1).copy(), dtype=genesis.float32).permute(0, 2, 1)
    assert not g.is_contiguous()
    close(LA.inv(g), torch.linalg.inv(torch.tensor(a, dtype=torch.float32)))
    close(LA.solve(g, g[..., 0]), torch.linalg.solve(torch.tensor(a, dtype=torch.float32),
                                                     torch.tensor(a[..., 0], dtype=torch.float32)))


def test_cuda_host_round_trip(monkeypatch, rng):
    """Every CPU linalg kernel is registered on CUDA as a host round trip: device arrays are
    copied to the host, other arguments pass through, every array result returns to the
    operands' device."""
    if os.environ.get("GENESIS_TEST_FAKE_CUDA") == "1":
        pytest.skip("importing the real CUDA backend would replace the fake one's kernels")
    import genesis.backends.cuda.linalg_host as host
    from genesis import dispatch
    from genesis.backends.cpu.decompositions import KERNELS

    class DeviceArray:
        def __init__(self, array, device):
            self.array, self.device = array, device

    monkeypatch.setattr(host, "CUDAArray", DeviceArray)
    monkeypatch.setattr(host, "to_numpy", lambda a: a.array.copy())
    monkeypatch.setattr(host, "from_numpy", lambda a, device: DeviceArray(a, device))
    assert all((name, "cuda") in dispatch._KERNELS for name in KERNELS)
    a = general(rng, (2, 4, 3))
    U, S, Vh = host.on_host(KERNELS["linalg_svd"])(DeviceArray(a, 1), False, True)
    assert {U.device, S.device, Vh.device} == {1}
    np.testing.assert_allclose(S.array, np.linalg.svd(a, compute_uv=False))
    det = host.on_host(KERNELS["linalg_det"])(DeviceArray(a[..., :3, :], 1))
    np.testing.assert_allclose(det.array, np.linalg.det(a[..., :3, :]))
    P = host.on_host(KERNELS["linalg_lu_permutation"])(
        DeviceArray(np.array([[2, 2]], dtype=np.int32), 1), 2, genesis.float64)
    assert P.array.tolist() == [[[0.0, 1.0], [1.0, 0.0]]]
