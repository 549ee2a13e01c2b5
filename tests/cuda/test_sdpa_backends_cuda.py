"""scaled_dot_product_attention's backend choice on "cuda": the fused kernel serves the flash,
memory-efficient and cuDNN backends, the math backend the composite (half types in float32), and
a call no enabled backend takes warns why and raises PyTorch's error."""

import warnings

import pytest
import torch
import torch.nn.attention.bias  # noqa: F401  (torch 2.11 does not import it with torch.nn.attention)
import torch.nn.functional as TF
from helpers import assert_close, from_torch, skip_no_cuda

import genesis
import genesis.nn.functional as F
from genesis.nn.attention import SDPBackend, bias, sdpa_kernel

pytestmark = [skip_no_cuda]

FUSED = "_FlashAttentionBackward0"


def _leaves(*shapes, dtype=torch.bfloat16):
    pairs = []
    for shape in shapes:
        t = torch.randn(shape).to(dtype)
        pairs.append((from_torch(t, "cuda").requires_grad_(), t.float().requires_grad_()))
    return pairs


@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"])
def test_each_fused_backend_runs_the_fused_kernel(backend):
    (q, _), (k, _), (v, _) = _leaves((2, 4, 64, 64), (2, 4, 64, 64), (2, 4, 64, 64))
    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.grad_fn.name() == FUSED


def test_math_backend_runs_the_composite_in_float32():
    (q, tq), (k, tk), (v, tv) = _leaves((2, 4, 64, 64), (2, 4, 64, 64), (2, 4, 64, 64))
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.grad_fn.name() != FUSED and out.dtype is genesis.bfloat16
    expected = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True).to(torch.bfloat16)
    assert_close(out, expected)


def test_a_mask_runs_fused_as_the_memory_efficient_backend():
    """As torch's, the flash backend takes no attn_mask and the memory-efficient one does:
    a masked call runs fused under the default flags, and raises with flash alone."""
    (q, _), (k, _), (v, _) = _leaves((2, 4, 64, 64), (2, 4, 64, 64), (2, 4, 64, 64))
    mask = genesis.ones(64, 64, dtype=genesis.bool, device="cuda")
    assert F.scaled_dot_product_attention(q, k, v, attn_mask=mask).grad_fn.name() == FUSED
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        assert F.scaled_dot_product_attention(q, k, v, attn_mask=mask).grad_fn.name() == FUSED
    with warnings.catch_warnings(record=True) as caught, \
            sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="No available kernel. Aborting execution."):
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    texts = [str(w.message) for w in caught]
    assert "Flash attention kernel not used because:" in texts
    assert any("takes no attn_mask" in t for t in texts)
    assert "Memory Efficient attention has been runtime disabled." in texts


def test_a_mask_that_needs_a_gradient_runs_the_math_backend():
    (q, _), (k, _), (v, _) = _leaves((2, 4, 64, 64), (2, 4, 64, 64), (2, 4, 64, 64))
    mask = genesis.zeros(64, 64, dtype=genesis.bfloat16, device="cuda", requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.grad_fn.name() != FUSED
    out.sum().backward()
    assert mask.grad is not None


def test_causal_lower_right_bias():
    (q, tq), (k, tk), (v, tv) = _leaves((2, 4, 16, 64), (2, 4, 48, 64), (2, 4, 48, 64),
                                        dtype=torch.float32)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.causal_lower_right(16, 48))
    expected = TF.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=torch.nn.attention.bias.causal_lower_right(16, 48))
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
