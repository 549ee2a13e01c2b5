"""svd_lowrank and pca_lowrank: shapes as PyTorch's, orthonormal factors, singular values and
reconstruction error against the exact SVD, the subspace they find, the M and center options,
errors, and gradients (float64 gradcheck on an exactly low-rank matrix, where the result does
not depend on the random start, against PyTorch's)."""

import numpy as np
import pytest
import torch

import genesis
from genesis.autograd import gradcheck
from helpers import assert_close


def _low_rank(rng, shape, rank, noise):
    """A batch of matrices of `rank` whose columns have mean 0, plus `noise` times a normal
    matrix."""
    *batch, m, n = shape
    left = rng.standard_normal((*batch, m, rank))
    a = (left - left.mean(axis=-2, keepdims=True)) @ rng.standard_normal((*batch, rank, n))
    return a + noise * rng.standard_normal(shape)


def _orthonormal(Q):
    eye = np.eye(Q.shape[-1])
    return np.abs(np.swapaxes(Q, -1, -2) @ Q - eye).max() < 1e-10


@pytest.mark.parametrize("shape", [(40, 25), (25, 40), (3, 30, 20)], ids=str)
def test_svd_lowrank_against_the_exact_svd(shape, rng, device):
    genesis.manual_seed(int(rng.integers(1 << 31)))
    a = _low_rank(rng, shape, 5, 1e-4)
    U, S, V = genesis.svd_lowrank(genesis.tensor(a, device=device), q=7)
    tU, tS, tV = torch.svd_lowrank(torch.tensor(a), q=7)
    assert (U.shape, S.shape, V.shape) == (tU.shape, tS.shape, tV.shape)
    U, S, V = U.cpu().numpy(), S.cpu().numpy(), V.cpu().numpy()
    assert _orthonormal(U) and _orthonormal(V)
    exact = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(S[..., :5], exact[..., :5], rtol=1e-8)
    approx = U @ (S[..., None] * np.swapaxes(V, -1, -2))
    best = np.linalg.norm(exact[..., 7:], axis=-1)  # the rank-7 truncation's error
    error = np.linalg.norm(approx - a, axis=(-2, -1))
    assert np.all(error <= 3 * best + 1e-12)


def test_svd_lowrank_of_a_difference(rng, device):
    """svd_lowrank(A, M=M) factors A - M, M broadcast to A's shape."""
    genesis.manual_seed(int(rng.integers(1 << 31)))
    a = _low_rank(rng, (30, 20), 3, 0.0) + rng.standard_normal((1, 20))
    m = a.mean(axis=0, keepdims=True)
    U, S, V = genesis.svd_lowrank(genesis.tensor(a, device=device), q=4,
                                  M=genesis.tensor(m, device=device))
    exact = np.linalg.svd(a - m, compute_uv=False)
    np.testing.assert_allclose(S.cpu().numpy()[:3], exact[:3], rtol=1e-8)
    approx = U.cpu().numpy() @ np.diag(S.cpu().numpy()) @ V.cpu().numpy().T
    np.testing.assert_allclose(approx, a - m, atol=1e-9)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("niter", [0, 2])
def test_pca_lowrank_finds_the_principal_subspace(center, niter, rng, device):
    genesis.manual_seed(int(rng.integers(1 << 31)))
    a = _low_rank(rng, (200, 12), 3, 1e-3) + (5.0 if center else 0.0)  # centering removes 5
    U, S, V = genesis.pca_lowrank(genesis.tensor(a, device=device), q=5, center=center,
                                  niter=niter)  # rank 3, oversampled by 2 (Halko et al.)
    assert (U.shape, S.shape, V.shape) == ((200, 5), (5,), (12, 5))
    data = a - a.mean(axis=0) if center else a
    _, exact_s, exact_vt = np.linalg.svd(data, full_matrices=False)
    # A projection only lowers singular values, here by about the noise's (exact_s[3]); the
    # angles between the subspaces are about noise / signal
    shortfall = exact_s[:3] - S.cpu().numpy()[:3]
    assert np.all(shortfall >= -1e-9) and np.all(shortfall <= 2 * exact_s[3])
    cosines = np.linalg.svd(exact_vt[:3] @ V.cpu().numpy()[:, :3], compute_uv=False)
    assert np.all(cosines > 1 - 50 * (exact_s[3] / exact_s[2]) ** 2)


def test_pca_lowrank_default_q(device):
    U, S, V = genesis.pca_lowrank(genesis.randn(10, 4, device=device))
    assert (U.shape, S.shape, V.shape) == ((10, 4), (4,), (4, 4))


def test_gradients_as_torch(rng):
    """The singular values' gradient of an exactly rank-3 matrix with q = 3 (the same for any
    random start) against PyTorch's, and a float64 gradcheck."""
    a = _low_rank(rng, (9, 6), 3, 0.0)
    weights = rng.standard_normal(3)
    x = genesis.tensor(a, requires_grad=True)
    (genesis.svd_lowrank(x, q=3)[1] * genesis.tensor(weights)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    (torch.svd_lowrank(t, q=3)[1] * torch.tensor(weights)).sum().backward()
    assert_close(x.grad, t.grad, rtol=1e-6, atol=1e-8)

    def singular_values(m):
        genesis.manual_seed(0)
        return genesis.svd_lowrank(m, q=3, niter=1)[1]
    assert gradcheck(singular_values, (genesis.tensor(a, requires_grad=True),))
