"""The fused rotary kernel against x * cos + rotate_half(x) * sin computed by torch in float32
(rounded once for half types), on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_rotary_interpret.py`.
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
from genesis.backends.cuda.kernels import rotary as ro
from genesis.backends.cuda.launch import LaunchCache

HALF = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(ro, "_plans", LaunchCache())
    with ti.device(ro):
        yield


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
@pytest.mark.parametrize("dtype", [np.dtype(np.float32)] + HALF, ids=str)
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
        expected = _reference(x, cos, sin, inverse)
        got = ti.to_host(actual)
        if dtype in HALF:
            assert ulp_distance(got, expected).max() <= 1
        else:
            rtol, atol = TOLERANCES[genesis.float32]
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
