"""The decode attention kernels (one query row per head against a key/value cache) against
torch's scaled_dot_product_attention, on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_decode_attention_interpret.py`.
Blocks of 16 keys and at most 4 splits make short caches walk several blocks, several splits
(the last one to finish combining them and resetting its counter), a split past the valid
length and the key tail. The reference is torch in float32 on the same
half values (the kernels compute in float32 and round once); half results are compared in ulps
(with the dtype's absolute floor, where values near zero are subnormal).
"""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti
from helpers import TOLERANCES, ulp_distance
from triton.runtime import interpreter

import genesis
from genesis import dispatch
from genesis.backends.cuda.kernels import decode_attention as da
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
HALF = [np.dtype(np.float16), BF16]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(da, "BLOCK_N", 16)
    monkeypatch.setattr(da, "MAX_SPLITS", 4)
    monkeypatch.setattr(da, "_plans", LaunchCache())
    monkeypatch.setattr(red, "_COUNTS", {})
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(da, red):
        yield


def _reference(q, k, v, mask, length, scale):
    """torch's SDPA in float32 over the first `length` keys (GQA by repeated heads), masked
    rows as zeros, rounded once to the inputs' dtype."""
    groups = q.shape[1] // k.shape[1]
    tq, tk, tv = (torch.from_numpy(a.astype(np.float32)) for a in (q, k, v))
    tk, tv = (t.repeat_interleave(groups, 1)[:, :, :length] for t in (tk, tv))
    allowed = torch.ones(q.shape[0], length, dtype=torch.bool)
    if mask is not None:
        allowed = torch.from_numpy(mask[:, :length])
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=allowed[:, None, None, :], scale=scale)
    out = torch.where(allowed.any(-1)[:, None, None, None], out, 0.0)
    return out.numpy().astype(q.dtype)


def _run(rng, batch, heads, kv_heads, keys, head, dtype, masked=False, length=None,
         scale=None):
    q = rng.standard_normal((batch, heads, 1, head)).astype(dtype)
    k, v = (rng.standard_normal((batch, kv_heads, keys, head)).astype(dtype) for _ in range(2))
    mask = None
    if masked:
        mask = rng.random((batch, keys)) < 0.7
        mask[-1] = False  # a row that sees nothing
    scale = 1.0 / math.sqrt(head) if scale is None else scale
    valid = keys if length is None else length
    expected = _reference(q, k, v, mask, valid, scale)
    dev_length = None if length is None else ti.to_device(np.array([length], np.int64))
    dev_mask = None if mask is None else ti.to_device(mask)
    out = dispatch.kernel("decode_attention", "cuda")(
        ti.to_device(q), ti.to_device(k), ti.to_device(v), dev_mask, dev_length, scale)
    actual = ti.to_host(out)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert not any(ti.to_host(counts).any() for counts in red._COUNTS.values())  # reset
    if dtype in HALF:  # 2 ulps, or the dtype's absolute floor near zero (subnormal ulps)
        atol = TOLERANCES[getattr(genesis, dtype.name)][1]
        near = np.abs(actual.astype(np.float64) - expected.astype(np.float64)) <= atol
        assert ((ulp_distance(actual, expected) <= 2) | near).all()
    else:
        rtol, atol = TOLERANCES[genesis.float32]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("keys", [1, 15, 33, 97])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32)] + HALF, ids=str)
def test_odd_cache_lengths(gpu, rng, dtype, keys):
    _run(rng, 1, 4, 2, keys, 32, dtype)


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (8, 2), (8, 1), (20, 4)])
def test_gqa_ratios(gpu, rng, heads, kv_heads):
    _run(rng, 2, heads, kv_heads, 40, 16, BF16)


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_splits_with_a_valid_length_and_mask(gpu, rng, dtype):
    """Batch 1 with 2 kv heads takes 4 splits of 32 keys over 100 cached keys; only 45 are
    valid, so the last splits are empty."""
    assert da.split_plan(1, 2, 100) == (4, 32)
    _run(rng, 1, 4, 2, 100, 64, dtype, masked=True, length=45)


def test_padded_head_dim_and_scale(gpu, rng):
    _run(rng, 3, 6, 3, 21, 24, np.dtype(np.float16), masked=True, scale=0.3)


def test_unsupported_operands_are_clear_errors(gpu, rng):
    q = ti.to_device(np.zeros((1, 3, 1, 16), np.float32))
    k = ti.to_device(np.zeros((1, 2, 8, 16), np.float32))
    with pytest.raises(RuntimeError, match="decode_attention: unsupported operands"):
        dispatch.kernel("decode_attention", "cuda")(q, k, k, None, None, 1.0)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32)] + HALF, ids=str)
def test_kv_cache_write_at_a_device_position(gpu, rng, dtype):
    """Two tokens of (2, 3, T, 24) keys and values, from a transposed (B, T, H, D) projection,
    land at slots 5 and 6 of a 9-slot cache; nothing else changes."""
    caches = [rng.standard_normal((2, 3, 9, 24)).astype(dtype) for _ in range(2)]
    step = [rng.standard_normal((2, 2, 3, 24)).astype(dtype) for _ in range(2)]
    dev_caches = [ti.to_device(c) for c in caches]
    dev_step = [ti.view(ti.to_device(s), (2, 3, 2, 24), (144, 24, 72, 1)) for s in step]
    dispatch.kernel("kv_cache_write", "cuda")(*dev_caches, *dev_step,
                                              ti.to_device(np.array([5], np.int64)))
    for cache, dev, new in zip(caches, dev_caches, step):
        expected = cache.copy()
        expected[:, :, 5:7] = new.transpose(0, 2, 1, 3)
        np.testing.assert_array_equal(ti.to_host(dev), expected)
