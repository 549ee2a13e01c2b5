"""The fused LSTM/GRU gate kernels (kernels/recurrent.py) against the CPU kernels, through
Triton's interpreter. Run explicitly:
`TRITON_INTERPRET=1 python -m pytest tests/cuda/test_recurrent_interpret.py`.
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

import genesis.backends.cpu  # noqa: F401  (registers the CPU kernels)
from genesis import dispatch
from genesis.backends.cuda.kernels import recurrent
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, BF16: 1.6e-2,
       np.dtype(np.float64): 1e-10}
SHAPES = [(1, 1), (3, 5), (7, 13)]


@pytest.fixture(params=[False, True], ids=["index32", "index64"])
def gpu(request, monkeypatch):
    """Kernels run interpreted in 16-element programs, so small states span several programs
    and a ragged last one; the second run computes offsets in 64 bits."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(recurrent, "BLOCK", 16)
    monkeypatch.setattr(recurrent, "_plans", LaunchCache())
    if request.param:
        monkeypatch.setattr(recurrent, "INDEX32_LIMIT", 1)
    with ti.device(recurrent):
        yield


def _arrays(rng, dtype, *shapes):
    return [rng.uniform(-3.0, 3.0, shape).astype(dtype) for shape in shapes]


def _check(op, host_args, rng_dtype):
    """The CUDA kernel `op` on device copies of `host_args` equals the CPU kernel's result."""
    expected = dispatch.kernel(op, "cpu")(*host_args)
    actual = dispatch.kernel(op, "cuda")(*(ti.to_device(a) for a in host_args))
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    tol = TOL[rng_dtype]
    for a, e in zip(actual, expected):
        host = ti.to_host(a)
        assert host.dtype == e.dtype and host.shape == e.shape
        np.testing.assert_allclose(host.astype(np.float64), e.astype(np.float64), rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lstm_cell_kernels(gpu, dtype, shape):
    rng = np.random.default_rng()
    rows, hidden = shape
    gi, gh, c, dh, dc = _arrays(rng, dtype, (rows, 4 * hidden), (rows, 4 * hidden),
                                (rows, hidden), (rows, hidden), (rows, hidden))
    _check("lstm_cell_fwd", (gi, gh, c), dtype)
    _check("lstm_cell_bwd", (dh, dc, gi, gh, c), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gru_cell_kernels(gpu, dtype, shape):
    rng = np.random.default_rng()
    rows, hidden = shape
    gi, gh, h, dh = _arrays(rng, dtype, (rows, 3 * hidden), (rows, 3 * hidden), (rows, hidden),
                            (rows, hidden))
    _check("gru_cell_fwd", (gi, gh, h), dtype)
    _check("gru_cell_bwd", (dh, gi, gh, h), dtype)


def test_empty_state_launches_nothing(gpu):
    gi, gh, c = (np.zeros((0, 8), np.float32), np.zeros((0, 8), np.float32),
                 np.zeros((0, 2), np.float32))
    h_out, c_out = dispatch.kernel("lstm_cell_fwd", "cuda")(*(ti.to_device(a)
                                                              for a in (gi, gh, c)))
    assert h_out.shape == (0, 2) and c_out.shape == (0, 2)
