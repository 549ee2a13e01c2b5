"""genesis.nn.attention.flex_attention on "cuda", against torch's eager math on the CPU
(torch._higher_order_ops.flex_attention.math_attention, what torch's flex_attention runs
without a compiler): mods capturing CUDA tensors, block masks made on the device, GQA, fully
masked rows, bfloat16 within the rounding of the weights, and gradients against float64."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
from helpers import assert_close, from_torch, skip_no_cuda
from torch._higher_order_ops.flex_attention import math_attention
from torch.nn.attention import flex_attention as T

import genesis
from genesis.nn.attention import flex_attention as G

pytestmark = [skip_no_cuda]

B, HQ, HKV, L, S, E = 2, 4, 2, 70, 90, 32


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)


def _inputs(dtype=torch.float32, grad=False):
    """q, k, v and the captured relative-position table and document ids, as (cuda genesis,
    torch CPU) pairs."""
    torch_side = [torch.randn(B, HQ, L, E), torch.randn(B, HKV, S, E), torch.randn(B, HKV, S, E),
                  torch.randn(HQ, L + S)]
    torch_side = [t.to(dtype) for t in torch_side]
    docs = [torch.sort(torch.randint(0, 4, (n,))).values for n in (L, S)]
    genesis_side = [from_torch(t, "cuda").requires_grad_(grad) for t in torch_side]
    torch_side = [t.double().requires_grad_(grad) if grad else t for t in torch_side]
    return (genesis_side + [from_torch(d, "cuda") for d in docs]), torch_side + docs


def _mods(table, q_doc, kv_doc):
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[h, q_idx - kv_idx + S]

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_doc[q_idx] == kv_doc[kv_idx]) & (kv_idx <= q_idx + 8)

    return score_mod, mask_mod


def _reference(q, k, v, table, q_doc, kv_doc):
    score_mod, mask_mod = _mods(table, q_doc, kv_doc)
    out, lse, _ = math_attention(q, k, v, score_mod, (mask_mod,), 1 / math.sqrt(E), {})
    return out, lse * math.log(2)


def _genesis(q, k, v, table, q_doc, kv_doc, block=16):
    score_mod, mask_mod = _mods(table, q_doc, kv_doc)
    block_mask = G.create_block_mask(mask_mod, B, HQ, L, S, device="cuda", BLOCK_SIZE=block)
    return G.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask,
                            enable_gqa=True, return_aux=G.AuxRequest(lse=True))


def test_float32_matches_torch_math_in_float64():
    g_args, t_args = _inputs()
    out, aux = _genesis(*g_args)
    t_out, t_lse = _reference(*[t.double() if t.is_floating_point() else t for t in t_args])
    assert out.device.type == "cuda" and aux.lse.device.type == "cuda"
    assert_close(out, t_out.float(), rtol=1e-5, atol=1e-5)
    assert_close(aux.lse, t_lse.float(), rtol=1e-5, atol=1e-5)


def test_bfloat16_within_the_rounding_of_the_weights():
    g_args, t_args = _inputs(torch.bfloat16)
    out, aux = _genesis(*g_args)
    t_out, t_lse = _reference(*t_args)
    assert out.dtype is genesis.bfloat16 and aux.lse.dtype is genesis.float32
    got = out.float().cpu().numpy().astype(ml_dtypes.bfloat16).astype(np.float64)
    want = t_out.float().numpy()
    bound = np.spacing(np.maximum(np.abs(want), 1).astype(ml_dtypes.bfloat16)).astype(np.float64)
    assert (np.abs(got - want) <= bound).all()
    assert_close(aux.lse, t_lse, rtol=1e-5, atol=1e-5)


def test_gradients_match_torch_math_in_float64():
    g_args, t_args = _inputs(grad=True)
    out, aux = _genesis(*g_args)
    t_out, t_lse = _reference(*t_args)
    weights = torch.randn(t_out.shape, dtype=torch.float64)
    finite = torch.isfinite(t_lse)
    (t_out * weights).sum().add(torch.where(finite, t_lse, 0.0).sum()).backward()
    g_finite = genesis.isfinite(aux.lse)
    ((out * from_torch(weights.float(), "cuda")).sum()
     + genesis.where(g_finite, aux.lse, 0.0).sum()).backward()
    for g, t in zip(g_args[:4], t_args[:4]):
        assert_close(g.grad, t.grad.float(), rtol=1e-4, atol=1e-4)


def test_block_mask_made_on_the_device_matches_torchs():
    g_args, t_args = _inputs()
    _, g_mask_mod = _mods(*g_args[3:])
    _, t_mask_mod = _mods(*t_args[3:])
    mask = G.create_block_mask(g_mask_mod, B, HQ, L, S, device="cuda", BLOCK_SIZE=16)
    expected = T.create_block_mask(t_mask_mod, B, HQ, L, S, device="cpu", BLOCK_SIZE=16)
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        assert getattr(mask, name).device.type == "cuda"
        assert_close(getattr(mask, name), getattr(expected, name))
    assert mask.to_string() == expected.to_string()
    assert mask.sparsity() == pytest.approx(expected.sparsity())


def test_fully_masked_rows_and_a_block_mask_on_another_device():
    q = genesis.randn(1, 2, 9, 8, device="cuda")
    cpu_mask = G.create_block_mask(lambda b, h, q_idx, kv_idx: kv_idx <= q_idx - 3, 1, 1, 9, 9,
                                   device="cpu", BLOCK_SIZE=4)
    with pytest.raises(RuntimeError, match="Expect q/k/v and block_mask to be on the same"):
        G.flex_attention(q, q, q, block_mask=cpu_mask)
    out, aux = G.flex_attention(q, q, q, block_mask=cpu_mask.to("cuda"),
                                return_aux=G.AuxRequest(lse=True, max_scores=True))
    assert (out[:, :, :3] == 0).all().item()
    assert (aux.lse[:, :, :3] == -math.inf).all().item()
    assert (aux.max_scores[:, :, :3] == -math.inf).all().item()


def test_a_mask_mod_alone_runs_the_fused_kernels():
    """No score_mod, no statistics: the sliding-window and document mask through the fused
    attention kernels (grouped heads in place), against torch's math in float64."""
    g_args, t_args = _inputs(grad=True)
    _, g_mask_mod = _mods(*g_args[3:])
    _, t_mask_mod = _mods(*t_args[3:])
    block_mask = G.create_block_mask(g_mask_mod, B, HQ, L, S, device="cuda", BLOCK_SIZE=16)
    out = G.flex_attention(*g_args[:3], block_mask=block_mask, enable_gqa=True)
    assert out.grad_fn.name() == "_FlashAttentionBackward0"
    expected = math_attention(*t_args[:3], lambda s, b, h, q, k: s, (t_mask_mod,),
                              1 / math.sqrt(E), {"enable_gqa": True})[0]
    weights = torch.randn(expected.shape, dtype=torch.float64)
    (expected * weights).sum().backward()
    (out * from_torch(weights.float(), "cuda")).sum().backward()
    assert_close(out, expected.detach().float(), rtol=1e-4, atol=1e-4)
    for g, t in zip(g_args[:3], t_args[:3]):
        assert_close(g.grad, t.grad.float(), rtol=1e-4, atol=1e-4)
