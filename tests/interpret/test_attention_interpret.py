"""The fused attention kernels against torch's scaled_dot_product_attention, on the CPU,
through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_attention_interpret.py`.
Small tiles (forward 32 queries x 16 keys, backward blocks of 32 walked 16 at a time) make short
sequences walk several blocks, the causal diagonal and the tails. The reference is torch in float32 (for half types:
on the same half values, rounded once at the end, as the kernels accumulate in float32, within
the rounding of P and dS to the half type and float32's where dQ and dK cancel:
tests/attention_bounds.py).
"""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti
from attention_bounds import cancellation_bounds, half_rounding_bounds
from helpers import TOLERANCES
from triton.runtime import interpreter

import genesis
from genesis import dispatch
from genesis.backends.cuda.kernels import attention as at
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def _small_tiles(dtype, head_dim, tf32):
    bd, _, _, precision = _tiles(dtype, head_dim, tf32)
    return bd, (32, 16, 4, 1), (32, 16, 4, 1), precision


_tiles = at._tiles


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(at, "_tiles", _small_tiles)
    monkeypatch.setattr(at, "_plans", LaunchCache())
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(at):
        yield


def _operand(arr, layout):
    """A device array with `arr`'s (B, H, T, D) values: contiguous, or a (B, T, H, D) buffer
    seen through transposed strides."""
    if layout == "contiguous":
        return ti.to_device(arr)
    _, h, t, d = arr.shape
    dev = ti.to_device(np.ascontiguousarray(arr.transpose(0, 2, 1, 3)))
    return ti.view(dev, arr.shape, (t * h * d, d, h * d, 1))


def _reference(q, k, v, g, causal, scale):
    """torch's output and input gradients in float32, rounded to the inputs' dtype."""
    tq, tk, tv = (torch.from_numpy(a.astype(np.float32)).requires_grad_() for a in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                           scale=scale)
    out.backward(torch.from_numpy(g.astype(np.float32)))
    return [t.detach().numpy().astype(q.dtype) for t in (out, tq.grad, tk.grad, tv.grad)]


def _check(actual, expected, bound=0.0):
    """Within the dtype's tolerance plus `bound`, the rounding of P and dS to a half type."""
    host = ti.to_host(actual).astype(np.float64)
    assert host.shape == expected.shape and ti.to_host(actual).dtype == expected.dtype
    rtol, atol = TOLERANCES[getattr(genesis, expected.dtype.name)]
    wanted = expected.astype(np.float64)
    excess = np.abs(host - wanted) - (atol + rtol * np.abs(wanted) + np.asarray(bound))
    assert excess.max(initial=0.0) <= 0, f"off by up to {excess.max():.3g} beyond the tolerance"


def _bounds(q, k, v, g, causal, scale):
    """Rounding bounds of (out, dq, dk, dv): a half type's P and dS, float32's cancellation."""
    wide = [a.astype(np.float32) for a in (q, k, v, g)]
    out, dq, dk, dv = half_rounding_bounds(*wide, causal, scale, q.dtype.name)
    cancel_q, cancel_k = cancellation_bounds(*wide, causal, scale)
    return [b.numpy() for b in (out, dq + cancel_q, dk + cancel_k, dv)]


def _run(rng, shape_q, shape_k, dtype, causal, scale=None, layout="contiguous"):
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_k))
    g = rng.standard_normal(shape_q).astype(dtype)
    scale = 1.0 / math.sqrt(shape_q[-1]) if scale is None else scale
    expected = _reference(q, k, v, g, causal, scale)
    dq, dk, dv = (_operand(a, layout) for a in (q, k, v))
    o_bound, *bounds = _bounds(q, k, v, g, causal, scale)
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(dq, dk, dv, causal, scale, True)
    _check(out, expected[0], o_bound)
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), dq, dk, dv, out if out_f is None else out_f, lse, causal, scale)
    for actual, exp, bound in zip(grads, expected[1:], bounds):
        _check(actual, exp, bound)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head", [16, 64])
@pytest.mark.parametrize("length", [1, 17, 64, 130])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_forward_and_gradients(gpu, rng, dtype, length, head, causal):
    _run(rng, (1, 2, length, head), (1, 2, length, head), dtype, causal)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lengths", [(17, 40), (40, 17)])
def test_queries_and_keys_of_different_lengths(gpu, rng, lengths, causal):
    (lq, lk), dtype = lengths, np.dtype(np.float32)
    _run(rng, (2, 1, lq, 32), (2, 1, lk, 32), dtype, causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_operands_and_scale(gpu, rng, dtype):
    _run(rng, (2, 3, 33, 16), (2, 3, 33, 16), dtype, True, scale=0.3, layout="transposed")


def test_padded_head_dim(gpu, rng):
    _run(rng, (1, 2, 20, 24), (1, 2, 20, 24), np.dtype(np.float16), True)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_grouped_query_forward(gpu, rng, dtype, causal):
    """Six query heads over two key/value heads (query head h reads key/value head h // 3),
    without repeating the keys and values."""
    q = rng.standard_normal((2, 6, 37, 32)).astype(dtype)
    k, v = (rng.standard_normal((2, 2, 37, 32)).astype(dtype) for _ in range(2))
    scale = 1.0 / math.sqrt(32)
    repeated = [np.repeat(a, 3, axis=1) for a in (k, v)]
    g = np.zeros(q.shape, dtype)
    expected = _reference(q, *repeated, g, causal, scale)[0]
    out, _, _ = dispatch.kernel("flash_attention", "cuda")(
        ti.to_device(q), ti.to_device(k), ti.to_device(v), causal, scale, False)
    _check(out, expected, _bounds(q, *repeated, g, causal, scale)[0])
