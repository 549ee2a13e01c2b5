"""The fused cross-entropy kernels (kernels/loss.py) against the CPU kernels, through Triton's
interpreter. Run explicitly:
`TRITON_INTERPRET=1 python -m pytest tests/interpret/test_loss_interpret.py`.
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

import genesis.backends.cpu  # noqa: F401  (registers the CPU kernels)
from genesis import dispatch
from genesis.backends.cuda.kernels import elementwise as ew
from genesis.backends.cuda.kernels import loss
from genesis.backends.cuda.kernels import reduce as red

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, BF16: 1.6e-2,
       np.dtype(np.float64): 1e-10}
REDUCTIONS = ["none", "sum", "mean"]


@pytest.fixture
def gpu(monkeypatch):
    """Kernels run interpreted; rows wider than 64 classes take the online path in 16-wide
    chunks, so small inputs walk every path; reduction counters of their own (host memory)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(loss, "ONE_PASS_LIMIT", 64)
    monkeypatch.setattr(loss, "CHUNK", 16)
    monkeypatch.setattr(loss, "_MIN_TILE", 64)
    monkeypatch.setattr(loss, "_REDUCE_BLOCK", 4)
    monkeypatch.setattr(red, "_COUNTS", {})
    with ti.device(ew, loss):
        yield


def _inputs(rng, n, c, dtype, layout, weighted, ignore):
    """(CPU args, CUDA args) of cross_entropy_fwd: logits laid out as asked, int64 targets with
    the first rows ignored, optional weights."""
    x = rng.uniform(-4.0, 4.0, (n, c)).astype(dtype)
    t = rng.integers(0, c, n)
    t[:ignore] = -100
    w = rng.uniform(0.2, 2.0, c).astype(dtype) if weighted else None
    if layout == "transposed":
        gx = ti.view(ti.to_device(np.ascontiguousarray(x.T)), (n, c), (1, n))
    elif layout == "sliced":
        gx = ti.view(ti.to_device(np.repeat(x, 2, axis=1)), (n, c), (2 * c, 2))
    else:
        gx = ti.to_device(x)
    gw = None if w is None else ti.to_device(w)
    return (x, t, w), (gx, ti.to_device(t), gw)


def _close(actual, expected, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(ti.to_host(actual), np.float64),
                               np.asarray(expected, np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n, c, layout, weighted, ignore", [
    (5, 7, "contiguous", False, 0), (9, 1, "contiguous", False, 2), (3, 200, "contiguous", True, 1),
    (6, 40, "transposed", True, 2), (4, 33, "sliced", False, 1), (3, 4, "contiguous", False, 3)])
def test_forward_and_backward(gpu, n, c, layout, weighted, ignore, dtype, reduction, rng):
    cpu_args, gpu_args = _inputs(rng, n, c, dtype, layout, weighted, ignore)
    expected = dispatch.kernel("cross_entropy_fwd", "cpu")(*cpu_args, -100, reduction)
    for _ in range(2):  # the reduction's counter is back at 0 for the next launch
        actual = dispatch.kernel("cross_entropy_fwd", "cuda")(*gpu_args, -100, reduction)
        for a, e in zip(actual, expected):
            assert (a is None) == (e is None)
            if e is not None:
                assert a.dtype == e.dtype and a.shape == e.shape
                _close(a, e, e.dtype)
    g = rng.standard_normal(n if reduction == "none" else ()).astype(dtype)
    gg = ti.to_device(g)
    if reduction == "none":
        gg = ti.view(ti.to_device(np.repeat(g, 2)), (n,), (2,))
    dx = dispatch.kernel("cross_entropy_bwd", "cuda")(gg, *gpu_args, actual[1], actual[2],
                                                      -100, reduction)
    ref = dispatch.kernel("cross_entropy_bwd", "cpu")(g, *cpu_args, expected[1], expected[2],
                                                      -100, reduction)
    assert dx.dtype == ref.dtype and dx.shape == ref.shape
    _close(dx, ref, dtype)
