"""The fused SwiGLU gate (silu(gate) * up) against torch in float32 rounded once, on the CPU,
through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_swiglu_interpret.py`.
"""

import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti
from helpers import TOLERANCES, ulp_distance

import genesis
from genesis import dispatch
from genesis.backends.cuda.kernels import swiglu
from genesis.backends.cuda.launch import LaunchCache

HALF = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(swiglu, "BLOCK", 64)
    monkeypatch.setattr(swiglu, "_plans", LaunchCache())
    with ti.device(swiglu):
        yield


@pytest.mark.parametrize("dtype", [np.dtype(np.float32)] + HALF, ids=str)
@pytest.mark.parametrize("rows,width", [(1, 2), (3, 2 * 97), (5, 2 * 128)])
def test_silu_mul_matches_torch(gpu, rng, dtype, rows, width):
    x = (rng.standard_normal((rows, width + 6)) * 4).astype(dtype)  # rows strided past width
    dev = ti.view(ti.to_device(x), (rows, width), (width + 6, 1))
    out = ti.to_host(dispatch.kernel("silu_mul", "cuda")(dev))
    t = torch.from_numpy(x[:, :width].astype(np.float32))
    gate, up = t.chunk(2, -1)
    expected = (torch.nn.functional.silu(gate) * up).numpy().astype(dtype)
    if dtype in HALF:
        assert ulp_distance(out, expected).max() <= 1
    else:
        rtol, atol = TOLERANCES[genesis.float32]
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)
