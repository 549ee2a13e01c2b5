"""Decoding on the GPU: scaled_dot_product_attention of one query row (the decode kernel) and
cached_attention with a device valid length against torch, the key/value cache write, and
generation with DecodeSteps: equal to transformers' greedy tokens (float32), no device-to-host
copy or stream sync inside a step; the fused rotary kernel and its gradient."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from attention_bounds import half_rounding_bounds
from helpers import TOLERANCES, assert_close, from_torch, skip_no_cuda

import genesis
import genesis.nn.functional as F
from genesis.nn.functional.attention import cached_attention

pytestmark = [skip_no_cuda]

TORCH = {genesis.float32: torch.float32, genesis.float16: torch.float16,
         genesis.bfloat16: torch.bfloat16}


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)


def _reference(q, k, v, mask, scale):
    """torch in float32 (float64 for float32 inputs), GQA by repeated heads, rounded once."""
    ct = torch.float64 if q.dtype == torch.float32 else torch.float32
    groups = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(groups, 1) for t in (k, v))
    out = TF.scaled_dot_product_attention(q.to(ct), k.to(ct), v.to(ct), attn_mask=mask,
                                          scale=scale)
    return out.to(q.dtype)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16])
@pytest.mark.parametrize("batch,heads,kv_heads,keys,head", [
    (1, 32, 8, 384, 64), (16, 32, 8, 383, 64), (2, 8, 8, 1000, 128), (3, 12, 4, 77, 80)])
def test_one_query_row_matches_torch(dtype, batch, heads, kv_heads, keys, head):
    torch.manual_seed(0)
    q = torch.randn(batch, heads, 1, head).to(TORCH[dtype])
    k, v = (torch.randn(batch, kv_heads, keys, head).to(TORCH[dtype]) for _ in range(2))
    mask = torch.rand(batch, 1, 1, keys) < 0.8
    mask[..., 0] = True
    gq, gk, gv, gm = (from_torch(t, "cuda") for t in (q, k, v, mask))
    with genesis.no_grad():
        out = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=gm, enable_gqa=True)
    expected = _reference(q, k, v, mask, 1 / math.sqrt(head))
    rtol, atol = TOLERANCES[dtype]
    assert_close(out, expected, rtol=rtol, atol=atol)


def test_cached_attention_reads_the_valid_length_on_the_device():
    torch.manual_seed(1)
    q = torch.randn(2, 8, 1, 64).bfloat16()
    k, v = (torch.randn(2, 2, 512, 64).bfloat16() for _ in range(2))
    k[:, :, 300:] = float("nan")  # past the valid length: never read
    v[:, :, 300:] = float("nan")
    mask = torch.zeros(2, 1, 1, 512, dtype=torch.bool)
    mask[..., :300] = True
    gq, gk, gv, gm = (from_torch(t, "cuda") for t in (q, k, v, mask))
    length = genesis.tensor([300], dtype=genesis.int64, device="cuda")
    with genesis.no_grad():
        out = cached_attention(gq, gk, gv, gm, length)
    expected = _reference(q, k[:, :, :300], v[:, :, :300], None, 1 / 8)
    assert_close(out, expected, rtol=TOLERANCES[genesis.bfloat16][0], atol=1e-5)


def _hf_llama(tmp_path, dtype=torch.float32):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=97, hidden_size=128, intermediate_size=192,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=256)
    hf = transformers.LlamaForCausalLM(config).to(dtype).eval()
    hf.save_pretrained(tmp_path)
    return hf


def _prompts(batch, length):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 97, (batch, length))
    mask = np.ones((batch, length), dtype=np.int64)
    for row in range(1, batch):
        mask[row, :row] = 0
    return np.where(mask == 1, ids, 0), mask


def test_greedy_generation_matches_transformers_on_the_gpu(tmp_path):
    hf = _hf_llama(tmp_path)
    model = genesis.models.from_pretrained(str(tmp_path), device="cuda")
    ids, mask = _prompts(3, 9)
    expected = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask),
                           max_new_tokens=40, do_sample=False, pad_token_id=0)
    out = model.generate(genesis.tensor(ids, device="cuda"),
                         attention_mask=genesis.tensor(mask, device="cuda"), max_new_tokens=40,
                         pad_token_id=0)
    np.testing.assert_array_equal(out.cpu().numpy(), expected.numpy())


@pytest.mark.parametrize("sampling", [dict(), dict(do_sample=True, top_k=20, top_p=0.9)])
def test_decode_steps_copy_nothing_to_the_host(tmp_path, monkeypatch, sampling):
    """Each DecodeStep runs with the driver's device-to-host copy and stream sync refusing."""
    from genesis.backends.cuda.runtime import driver
    from genesis.models.generation import DecodeStep
    _hf_llama(tmp_path)
    model = genesis.models.from_pretrained(str(tmp_path), dtype=genesis.bfloat16,
                                           device="cuda")
    ids, mask = _prompts(4, 7)
    kwargs = dict(max_new_tokens=20, attention_mask=genesis.tensor(mask, device="cuda"),
                  eos_token_id=[1, 2], pad_token_id=0, **sampling)
    model.generate(genesis.tensor(ids, device="cuda"), **kwargs)  # compiles the kernels
    original, calls = DecodeStep.__call__, []

    def refuse(*args, **kwargs):
        raise AssertionError("a decode step waited for the device")

    def guarded(self):
        with monkeypatch.context() as m:
            m.setattr(driver, "memcpy_dtoh", refuse)
            m.setattr(driver, "stream_synchronize", refuse)
            original(self)
        calls.append(1)

    monkeypatch.setattr(DecodeStep, "__call__", guarded)
    kwargs["max_new_tokens"] += 1  # a new decode session: its step runs eagerly, then captured
    model.generate(genesis.tensor(ids, device="cuda"), **kwargs)
    assert calls


def test_a_repeated_generate_replays_the_captured_step(tmp_path, monkeypatch):
    """The second call with the same shapes replays the first call's graph (the step never runs
    eagerly again) and gives transformers' tokens for its own prompt."""
    from genesis.models.generation import DecodeStep
    hf = _hf_llama(tmp_path)
    model = genesis.models.from_pretrained(str(tmp_path), device="cuda")
    first, mask = _prompts(3, 9)
    second = (first * 7 + 3) % 97 * mask
    kwargs = dict(max_new_tokens=24, pad_token_id=0)
    model.generate(genesis.tensor(first, device="cuda"),
                   attention_mask=genesis.tensor(mask, device="cuda"), **kwargs)
    calls = []
    original = DecodeStep.__call__
    monkeypatch.setattr(DecodeStep, "__call__", lambda self: calls.append(1) or original(self))
    out = model.generate(genesis.tensor(second, device="cuda"),
                         attention_mask=genesis.tensor(mask, device="cuda"), **kwargs)
    expected = hf.generate(torch.tensor(second), attention_mask=torch.tensor(mask),
                           do_sample=False, **kwargs)
    assert not calls
    np.testing.assert_array_equal(out.cpu().numpy(), expected.numpy())



@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_fused_rotary_and_its_gradient_match_the_composed_ops(dtype):
    """apply_rotary through the fused kernel (queries and keys cut from one projection) equals
    the composed ops on the CPU in float32 on the same values, rounded once, forward and
    backward (a linear loss: the output gradients are exact in every dtype)."""
    from genesis.models.rotary import apply_rotary
    torch.manual_seed(2)
    qkv = torch.randn(2, 9, (4 + 2 * 2) * 32).to(TORCH[dtype])
    angles = torch.rand(2, 9, 32) * 8
    cos, sin = angles.cos().to(TORCH[dtype]), angles.sin().to(TORCH[dtype])
    weights = [torch.randn(2, heads, 9, 32).to(TORCH[dtype]) for heads in (4, 2)]
    results = []
    for device, ct in (("cpu", genesis.float32), ("cuda", dtype)):
        fused = from_torch(qkv, device).to(ct).requires_grad_()
        q, k, _ = fused.view(2, 9, 8, 32).transpose(1, 2).split([4, 2, 2], dim=1)
        outs = apply_rotary(q, k, *(from_torch(t, device).to(ct) for t in (cos, sin)))
        sum((o * from_torch(w, device).to(ct)).sum() for o, w in zip(outs, weights)).backward()
        results.append((*outs, fused.grad))
    for cpu, gpu in zip(*results):
        assert_close(gpu, cpu.to(dtype), rtol=TOLERANCES[dtype][0], atol=1e-5)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_fused_swiglu_gate_and_its_gradient_match_the_composed_ops(dtype):
    """silu_gate through the fused kernel equals silu(gate) * up on the CPU in float32 on the
    same values, rounded once; its gradient too (a linear loss)."""
    from genesis.models.fused import silu_gate
    torch.manual_seed(3)
    x = (torch.randn(2, 5, 2 * 96) * 3).to(TORCH[dtype])
    w = torch.randn(2, 5, 96).to(TORCH[dtype])
    results = []
    for device, ct in (("cpu", genesis.float32), ("cuda", dtype)):
        gate_up = from_torch(x, device).to(ct).requires_grad_()
        out = silu_gate(gate_up)
        (out * from_torch(w, device).to(ct)).sum().backward()
        results.append((out, gate_up.grad))
    (cpu_out, cpu_grad), (gpu_out, gpu_grad) = results
    for gpu, cpu in ((gpu_out, cpu_out), (gpu_grad, cpu_grad)):
        assert_close(gpu, cpu.to(dtype), rtol=TOLERANCES[dtype][0], atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_grouped_query_prefill_reads_keys_in_place(dtype, causal):
    """SDPA with enable_gqa and no gradient runs the fused forward on the grouped keys and
    values (no repeated copies) and matches torch, within the rounding of P to bfloat16
    (tests/attention_bounds.py)."""
    torch.manual_seed(4)
    q = torch.randn(2, 32, 300, 64).to(TORCH[dtype])
    k, v = (torch.randn(2, 8, 300, 64).to(TORCH[dtype]) for _ in range(2))
    with genesis.no_grad():
        out = F.scaled_dot_product_attention(*(from_torch(t, "cuda") for t in (q, k, v)),
                                             is_causal=causal, enable_gqa=True)
    ct = torch.float64 if dtype is genesis.float32 else torch.float32
    wide = [q.to(ct)] + [t.repeat_interleave(4, 1).to(ct) for t in (k, v)]
    expected = TF.scaled_dot_product_attention(*wide, is_causal=causal).to(TORCH[dtype])
    bound = half_rounding_bounds(*wide, torch.zeros_like(wide[0]), causal, None, dtype.name)[0]
    rtol, atol = TOLERANCES[dtype]
    got = out.cpu().to(genesis.float64).numpy()
    wanted = expected.double().numpy()
    assert (np.abs(got - wanted) <= atol + rtol * np.abs(wanted) + bound.numpy()).all()


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_fused_residual_norm_equals_add_then_norm(dtype):
    """add_norm without gradients (one kernel) gives the sum and the norm that x + y and
    nn.RMSNorm give on the GPU (the same float32 formula, rounded once)."""
    from genesis.models.fused import add_norm
    torch.manual_seed(5)
    x, y = (from_torch(torch.randn(2, 7, 2048).to(TORCH[dtype]), "cuda") for _ in range(2))
    norm = genesis.nn.RMSNorm(2048, eps=1e-5, device="cuda", dtype=dtype)
    with genesis.no_grad():
        genesis.nn.init.normal_(norm.weight)
        h, out = add_norm(x, y, norm)
        expected_h = x + y
        expected = norm(expected_h)
    assert_close(h, expected_h.cpu(), rtol=0, atol=0)
    assert_close(out, expected.cpu(), rtol=TOLERANCES[dtype][0], atol=1e-5)
