"""The fused attention Function (what CUDA runs) on the CPU, through the CPU's numpy kernels
of the same contract, against torch's scaled_dot_product_attention."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, from_torch

import genesis
import genesis.nn.functional as F
from genesis.autograd import gradcheck, gradgradcheck
from genesis.nn.functional.attention import _FlashAttention


def _inputs(rng, shape_q, shape_k, dtype, transposed=False):
    """(genesis, torch float32) leaves; transposed: (B, H, T, D) views of (B, T, H, D)."""
    out = []
    for shape in (shape_q, shape_k, shape_k):
        data = rng.standard_normal(shape).astype(np.float32)
        t = torch.from_numpy(data).to(genesis_to_torch(dtype))
        g = from_torch(t)
        if transposed:
            g = from_torch(t.transpose(1, 2).contiguous()).transpose(1, 2)
        out.append((g.requires_grad_(), t.float().requires_grad_()))
    return out


def genesis_to_torch(dtype):
    return {genesis.float32: torch.float32, genesis.float16: torch.float16,
            genesis.bfloat16: torch.bfloat16}[dtype]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", [((2, 3, 17, 16), (2, 3, 17, 16)),
                                    ((1, 2, 9, 32), (1, 2, 20, 32)),
                                    ((1, 2, 20, 32), (1, 2, 9, 32))])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16], ids=str)
def test_fused_function_matches_torch(rng, dtype, shapes, causal, transposed):
    """Output and gradients against torch in float32 (rounded once for half types)."""
    (q, tq), (k, tk), (v, tv) = _inputs(rng, *shapes, dtype, transposed)
    scale = 1.0 / math.sqrt(shapes[0][-1])
    out = _FlashAttention.apply(q, k, v, None, None, causal, scale)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    grad = torch.randn(expected.shape).to(genesis_to_torch(dtype))
    expected.backward(grad.float())
    out.backward(from_torch(grad))
    torch_dtype = genesis_to_torch(dtype)
    assert_close(out, expected.detach().to(torch_dtype))
    for actual, ref in ((q, tq), (k, tk), (v, tv)):
        assert_close(actual.grad, ref.grad.to(torch_dtype))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_function_gradchecks(rng, causal):
    """float64: the numpy kernels' backward, and the recomputed backward of the backward."""
    q, k, v = (genesis.tensor(rng.uniform(-1, 1, (1, 2, 5, 4)), dtype=genesis.float64,
                              requires_grad=True) for _ in range(3))
    fn = lambda q, k, v: _FlashAttention.apply(q, k, v, None, None, causal, 0.7)
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def _assert_matches(out, expected, leaves):
    """The output, and the gradients of the (genesis, torch) leaf pairs for a random output
    gradient, against torch's."""
    grad = torch.randn(expected.shape)
    expected.backward(grad)
    out.backward(from_torch(grad))
    assert_close(out, expected.detach())
    for actual, ref in leaves:
        assert_close(actual.grad, ref.grad)


def _masks(rng, shape):
    """A bool mask (True: may attend) and an additive one of `shape`, each hiding row 0
    entirely (its output and gradients are zeros, as torch's math backend gives)."""
    hidden = rng.random(shape) < 0.3
    hidden[..., 0, :] = True
    additive = np.where(hidden, -np.inf, rng.standard_normal(shape))
    return ~hidden, additive


@pytest.mark.parametrize("kind", ["bool", "additive"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_shape", [(2, 1, 1, 11), (7, 11), (2, 3, 7, 11)], ids=str)
def test_fused_function_with_masks_matches_torch(rng, mask_shape, causal, kind):
    """Bool and additive masks, broadcast (key padding, one (L, S) mask) or full, beside
    is_causal or alone, against torch's math backend (which takes one of the two: merged)."""
    (q, tq), (k, tk), (v, tv) = _inputs(rng, (2, 3, 7, 16), (2, 3, 11, 16), genesis.float32)
    as_bool, additive = _masks(rng, mask_shape)
    t_mask = torch.from_numpy(as_bool if kind == "bool" else additive.astype(np.float32))
    mask = from_torch(t_mask)
    out = _FlashAttention.apply(q, k, v, mask.expand(2, 3, 7, 11), None, causal, 0.25)
    if causal:
        keep = torch.ones(7, 11, dtype=torch.bool).tril()
        t_mask = t_mask & keep if kind == "bool" else t_mask.masked_fill(~keep, -math.inf)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=t_mask, scale=0.25)
    _assert_matches(out, expected, ((q, tq), (k, tk), (v, tv)))


@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_fused_function_with_a_mask_gradchecks(rng, kind):
    """float64 under a mask: the kernels' backward, and the recomputed backward of the
    backward (genesis ops under the same mask)."""
    q, k, v = (genesis.tensor(rng.uniform(-1, 1, (1, 2, 5, 4)), dtype=genesis.float64,
                              requires_grad=True) for _ in range(3))
    as_bool, additive = _masks(rng, (5, 5))
    mask = genesis.tensor(as_bool if kind == "bool" else additive).expand(1, 2, 5, 5)
    fn = lambda q, k, v: _FlashAttention.apply(q, k, v, mask, None, False, 0.7)
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_fused_function_computes_only_needed_gradients(rng):
    q, k = (genesis.tensor(rng.standard_normal((1, 1, 6, 16)), dtype=genesis.float32,
                           requires_grad=True) for _ in range(2))
    v = genesis.tensor(rng.standard_normal((1, 1, 6, 16)), dtype=genesis.float32)
    _FlashAttention.apply(q, k, v, None, None, True, 0.25).sum().backward()
    assert q.grad is not None and k.grad is not None and v.grad is None


def test_cpu_keeps_the_composed_path(rng):
    q = genesis.tensor(rng.standard_normal((1, 2, 4, 16)), dtype=genesis.float32,
                       requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.grad_fn._function is not _FlashAttention
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"  # as torch's CPU


def _dropout_flags(shape, dropout):
    """The flags the kernels keep for `dropout` = (p, seed, offset), as a torch tensor."""
    from genesis import dispatch
    flags = dispatch.kernel("attention_dropout_mask", "cpu")(shape, *dropout, None)
    return torch.from_numpy(np.asarray(flags))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_function_with_dropout_matches_torch_under_its_flags(rng, causal):
    """Dropout of the probabilities by the kernels' Philox flags (the same in the backward):
    torch's math on the same flags, scaled by 1 / (1 - p)."""
    (q, tq), (k, tk), (v, tv) = _inputs(rng, (2, 3, 9, 16), (2, 3, 13, 16), genesis.float32)
    dropout = (0.3, 1234, 56)
    out = _FlashAttention.apply(q, k, v, None, dropout, causal, 0.25)
    scores = tq @ tk.mT * 0.25
    if causal:
        scores = scores.masked_fill(~torch.ones(9, 13, dtype=torch.bool).tril(), -math.inf)
    keep = _dropout_flags((2, 3, 9, 13), dropout)
    expected = (scores.softmax(-1) * keep / 0.7) @ tv
    _assert_matches(out, expected, ((q, tq), (k, tk), (v, tv)))


def test_fused_function_with_dropout_gradchecks(rng):
    """float64 under dropout: the same flags in the forward, its backward and the recomputed
    backward of the backward."""
    q, k, v = (genesis.tensor(rng.uniform(-1, 1, (1, 2, 5, 4)), dtype=genesis.float64,
                              requires_grad=True) for _ in range(3))
    fn = lambda q, k, v: _FlashAttention.apply(q, k, v, None, (0.4, 99, 8), True, 0.7)
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))
