"""The fused kernels of the language models against torch in float32 (rounded once for half
types), on the CPU, through Triton's interpreter: rotary embeddings of queries and keys (and
their inverse, the backward), SwiGLU's silu(gate) * up, and the residual add + RMSNorm.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_model_kernels_interpret.py`.
Queries and keys are views of one fused (B, T, (H + 2 KVH) * D) projection, as Llama's are.
"""

import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti
from helpers import TOLERANCES, ulp_distance

import genesis
from genesis import dispatch
from genesis.backends.cuda.kernels import residual_norm, rotary, swiglu
from genesis.backends.cuda.launch import LaunchCache

HALF = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
DTYPES = [np.dtype(np.float32)] + HALF


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(swiglu, "BLOCK", 64)
    for module in (residual_norm, rotary, swiglu):
        monkeypatch.setattr(module, "_plans", LaunchCache())
    with ti.device(residual_norm, rotary, swiglu):
        yield


def _check(actual, expected):
    """Half types within one ulp, float32 within its tolerance."""
    if expected.dtype in HALF:
        assert ulp_distance(actual, expected).max() <= 1
    else:
        rtol, atol = TOLERANCES[genesis.float32]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def _reference(x, cos, sin, inverse):
    """torch's rotation of (B, H, T, D) `x` in float32 (angles negated when `inverse`)."""
    tx, tc, ts = (torch.from_numpy(a.astype(np.float32)) for a in (x, cos, sin))
    tc, ts = tc.unsqueeze(1), ts.unsqueeze(1)
    half = x.shape[-1] // 2
    if inverse:
        ts = -torch.cat([ts[..., half:], ts[..., :half]], -1)
    rotated = torch.cat([-tx[..., half:], tx[..., :half]], -1)
    return (tx * tc + rotated * ts).numpy().astype(x.dtype)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch,tokens,heads,kv_heads,head", [(1, 5, 4, 2, 16),
                                                              (2, 3, 6, 1, 24)])
def test_rotary_matches_torch(gpu, rng, dtype, inverse, batch, tokens, heads, kv_heads, head):
    width = (heads + 2 * kv_heads) * head
    fused = rng.standard_normal((batch, tokens, width)).astype(dtype)
    angles = rng.uniform(-4, 4, (batch, tokens, head))
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    dev = ti.to_device(fused)
    strides = (tokens * width, head, width, 1)
    q = ti.view(dev, (batch, heads, tokens, head), strides)
    k = ti.view(dev, (batch, kv_heads, tokens, head), strides, heads * head)
    q_out, k_out = dispatch.kernel("rotary", "cuda")(q, k, ti.to_device(cos), ti.to_device(sin),
                                                     inverse)
    assert q_out.strides[2] == heads * head * dtype.itemsize  # laid out (B, T, H, D)
    host = fused.reshape(batch, tokens, -1, head).transpose(0, 2, 1, 3)
    for actual, x in ((q_out, host[:, :heads]), (k_out, host[:, heads:heads + kv_heads])):
        _check(ti.to_host(actual), _reference(x, cos, sin, inverse))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch,heads,kv_heads,head,slot", [(1, 4, 2, 16, 0), (3, 6, 3, 24, 6)])
def test_rotary_cache_write_rotates_into_the_slot(gpu, rng, dtype, batch, heads, kv_heads, head,
                                                  slot):
    """A decode step's queries come back rotated; its rotated keys and its values land in the
    caches at the slot read from the device, and no other slot changes."""
    width = (heads + 2 * kv_heads) * head
    fused = rng.standard_normal((batch, 1, width)).astype(dtype)
    angles = rng.uniform(-4, 4, (batch, 1, head))
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    dev = ti.to_device(fused)
    strides = (width, head, width, 1)
    q, k, v = (ti.view(dev, (batch, n, 1, head), strides, offset * head) for n, offset in
               ((heads, 0), (kv_heads, heads), (kv_heads, heads + kv_heads)))
    keys, values = (rng.standard_normal((batch, kv_heads, 9, head)).astype(dtype)
                    for _ in range(2))
    dev_keys, dev_values = ti.to_device(keys), ti.to_device(values)
    q_out = dispatch.kernel("rotary_cache_write", "cuda")(
        q, k, v, ti.to_device(cos), ti.to_device(sin), dev_keys, dev_values,
        ti.to_device(np.array([slot], np.int64)))
    host = fused.reshape(batch, 1, -1, head).transpose(0, 2, 1, 3)
    _check(ti.to_host(q_out), _reference(host[:, :heads], cos, sin, False))
    keys[:, :, slot:slot + 1] = _reference(host[:, heads:heads + kv_heads], cos, sin, False)
    values[:, :, slot:slot + 1] = host[:, heads + kv_heads:]
    _check(ti.to_host(dev_keys), keys)
    np.testing.assert_array_equal(ti.to_host(dev_values), values)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows,width", [(1, 2), (3, 2 * 97), (5, 2 * 128)])
def test_silu_mul_matches_torch(gpu, rng, dtype, rows, width):
    x = (rng.standard_normal((rows, width + 6)) * 4).astype(dtype)  # rows strided past width
    dev = ti.view(ti.to_device(x), (rows, width), (width + 6, 1))
    out = ti.to_host(dispatch.kernel("silu_mul", "cuda")(dev))
    t = torch.from_numpy(x[:, :width].astype(np.float32))
    gate, up = t.chunk(2, -1)
    expected = (torch.nn.functional.silu(gate) * up).numpy().astype(dtype)
    _check(out, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows,width", [(1, 64), (3, 97)])
def test_add_rms_norm_matches_torch(gpu, rng, dtype, rows, width):
    x = rng.standard_normal((rows, width + 3)).astype(dtype)  # rows strided past width
    y = rng.standard_normal((rows, width)).astype(dtype)
    w = rng.standard_normal(width).astype(dtype)
    dev_x = ti.view(ti.to_device(x), (rows, width), (width + 3, 1))
    h, out = dispatch.kernel("add_rms_norm", "cuda")(dev_x, ti.to_device(y), ti.to_device(w),
                                                     1e-5)
    th = (torch.from_numpy(x[:, :width].astype(np.float32))
          + torch.from_numpy(y.astype(np.float32))).numpy().astype(dtype)
    v = torch.from_numpy(th.astype(np.float32))
    expected = (v * torch.rsqrt(v.square().mean(-1, keepdim=True) + 1e-5)
                * torch.from_numpy(w.astype(np.float32))).numpy().astype(dtype)
    np.testing.assert_array_equal(ti.to_host(h), th)
    _check(ti.to_host(out), expected)
