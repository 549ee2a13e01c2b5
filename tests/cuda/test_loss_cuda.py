"""The fused cross-entropy (kernels/loss.py) on "cuda" against PyTorch on the CPU: GPT-sized
rows (C = 50257, online logsumexp), rows just past the one-chunk limit, many rows for the
reduction launch, weights and ignore_index on each path, strided logits and upstream gradients,
int32 targets, determinism. Skipped without a GPU."""

import numpy as np
import pytest
import torch
from helpers import TORCH_DTYPES, assert_close, skip_no_cuda

import genesis
from genesis.backends.cuda.kernels import loss as kernels
from genesis.nn import functional as F

pytestmark = skip_no_cuda

DTYPES = [genesis.float32, genesis.float16, genesis.bfloat16, genesis.float64]
REDUCTIONS = ["mean", "sum", "none"]


def _case(rng, shape, dtype, ignored=0, weighted=False, spread=8.0):
    """(genesis logits on cuda, genesis targets, genesis weight, torch float32/float64 leaf,
    torch targets, torch weight)."""
    n, c = shape
    x = rng.uniform(-spread, spread, shape)
    t = rng.integers(0, c, n)
    t[rng.permutation(n)[:ignored]] = -100
    w = rng.uniform(0.2, 2.0, c) if weighted else None
    g_x = genesis.tensor(x, dtype=dtype, device="cuda", requires_grad=True)
    exact = torch.float64 if dtype is genesis.float64 else torch.float32
    t_x = torch.from_numpy(g_x.detach().float().cpu().numpy() if dtype is genesis.bfloat16
                           else g_x.detach().cpu().numpy()).to(exact).requires_grad_()
    g_w = None if w is None else genesis.tensor(w, dtype=dtype, device="cuda")
    t_w = None if w is None else torch.from_numpy(g_w.float().cpu().numpy()).to(exact)
    return g_x, genesis.tensor(t, device="cuda"), g_w, t_x, torch.from_numpy(t), t_w


def _compare(rng, g_x, g_t, g_w, t_x, t_t, t_w, reduction, view=None):
    """Loss and gradient against torch computed in float32 (float64) and rounded once."""
    dtype = g_x.dtype
    loss = F.cross_entropy(g_x if view is None else view, g_t, weight=g_w, reduction=reduction)
    expected = torch.nn.functional.cross_entropy(t_x, t_t, weight=t_w, reduction=reduction)
    assert_close(loss, expected.to(TORCH_DTYPES[dtype]), dtype)
    grad = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.from_numpy(np.asarray(grad)).to(expected.dtype))
    loss.backward(genesis.tensor(grad, dtype=dtype, device="cuda"))
    assert_close(g_x.grad, t_x.grad.to(TORCH_DTYPES[dtype]), dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(64, 50257), (33, kernels.ONE_PASS_LIMIT),
                                   (17, kernels.ONE_PASS_LIMIT + 1), (4096, 96), (5, 7),
                                   (300, 1)], ids=str)
def test_shapes_and_dtypes(shape, dtype, reduction, rng):
    _compare(rng, *_case(rng, shape, dtype, ignored=min(3, shape[0] // 4)), reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(48, 50257), (100, 1000), (70000, 3)], ids=str)
def test_weights_and_ignore_index(shape, reduction, rng):
    case = _case(rng, shape, genesis.float32, ignored=shape[0] // 3, weighted=True)
    _compare(rng, *case, reduction)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["transposed", "stepped"])
def test_strided_logits(layout, dtype, rng):
    g_x, *rest = _case(rng, (40, 3000), dtype, ignored=5)
    if layout == "transposed":
        view = g_x.t().contiguous().t()
    else:
        view = genesis.stack([g_x, genesis.zeros_like(g_x)], -1).reshape(40, -1)[:, ::2]
    assert not view.is_contiguous()
    _compare(rng, g_x, *rest, "mean", view=view)


def test_expanded_and_strided_upstream_gradients(rng):
    g_x, g_t, _, t_x, t_t, _ = _case(rng, (50, 700), genesis.float32, ignored=4)
    F.cross_entropy(g_x, g_t, reduction="none").sum().backward()
    torch.nn.functional.cross_entropy(t_x, t_t, reduction="none").sum().backward()
    assert_close(g_x.grad, t_x.grad)
    g_x.grad, t_x.grad = None, None
    grad = rng.standard_normal(100)
    F.cross_entropy(g_x, g_t, reduction="none").backward(
        genesis.tensor(grad, dtype=genesis.float32, device="cuda")[::2])
    torch.nn.functional.cross_entropy(t_x, t_t, reduction="none").backward(
        torch.from_numpy(grad[::2]).float())
    assert_close(g_x.grad, t_x.grad)


def test_spatial_input_and_target_dtypes(rng):
    x = rng.uniform(-3, 3, (4, 9, 5, 6))
    t = rng.integers(0, 9, (4, 5, 6))
    t[0, 0, :3] = 2
    g_x = genesis.tensor(x, dtype=genesis.float32, device="cuda", requires_grad=True)
    t_x = torch.from_numpy(x).float().requires_grad_()
    loss = F.cross_entropy(g_x, genesis.tensor(t, device="cuda"), ignore_index=2)
    expected = torch.nn.functional.cross_entropy(t_x, torch.from_numpy(t), ignore_index=2)
    assert_close(loss, expected)
    loss.backward()
    expected.backward()
    assert_close(g_x.grad, t_x.grad)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        F.cross_entropy(g_x[:, :, 0, 0], genesis.tensor(t[:, 0, 0].astype(np.int32), device="cuda"))


def test_deterministic(rng):
    g_x, g_t, g_w, *_ = _case(rng, (3000, 50257 // 8), genesis.float32, ignored=100,
                              weighted=True)
    results = []
    for _ in range(2):
        g_x.grad = None
        loss = F.cross_entropy(g_x, g_t, weight=g_w)
        loss.backward()
        results.append((loss.item(), g_x.grad.cpu().numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_all_ignored_is_nan_with_zero_gradient():
    x = genesis.randn(5000, 11, device="cuda", requires_grad=True)
    loss = F.cross_entropy(x, genesis.full((5000,), -100, dtype=genesis.int64, device="cuda"))
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), 0)


def test_out_of_range_targets_are_not_checked(rng):
    """As torch's GPU kernels, no check (no synchronization): such a row picks no logit, so its
    loss is its logsumexp and its gradient the softmax; the other rows are unaffected."""
    x = rng.uniform(-3, 3, (4, 6))
    g_x = genesis.tensor(x, dtype=genesis.float32, device="cuda", requires_grad=True)
    loss = F.cross_entropy(g_x, genesis.tensor([1, 6, -3, 2], device="cuda"), reduction="none")
    t_x = torch.from_numpy(x).float()
    lse = torch.logsumexp(t_x, 1)
    expected = torch.stack([lse[0] - t_x[0, 1], lse[1], lse[2], lse[3] - t_x[3, 2]])
    assert_close(loss, expected)
    loss.sum().backward()
    softmax = torch.softmax(t_x, 1)
    softmax[0, 1] -= 1
    softmax[3, 2] -= 1
    assert_close(g_x.grad, softmax)
