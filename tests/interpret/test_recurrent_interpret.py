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


def _check(op, host_args, rng_dtype, **host_kwargs):
    """The CUDA kernel `op` on device copies of `host_args` (and `host_kwargs`) equals the CPU
    kernel's result."""
    expected = dispatch.kernel(op, "cpu")(*host_args, **host_kwargs)
    actual = dispatch.kernel(op, "cuda")(*(ti.to_device(a) for a in host_args),
                                         **{k: ti.to_device(a) for k, a in host_kwargs.items()})
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
    _check("lstm_cell_bwd", (dh, dc, gi, gh, c), dtype, dh2=dc)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gru_cell_kernels(gpu, dtype, shape):
    rng = np.random.default_rng()
    rows, hidden = shape
    gi, gh, h, dh = _arrays(rng, dtype, (rows, 3 * hidden), (rows, 3 * hidden), (rows, hidden),
                            (rows, hidden))
    _check("gru_cell_fwd", (gi, gh, h), dtype)
    _check("gru_cell_bwd", (dh, gi, gh, h), dtype)
    _check("gru_cell_bwd", (dh, gi, gh, h), dtype, dh2=h)
    _check("gru_cell_bwd", (dh, gi, gh, h), dtype, dh2=h, dh3=dh)


def test_empty_state_launches_nothing(gpu):
    gi, gh, c = (np.zeros((0, 8), np.float32), np.zeros((0, 8), np.float32),
                 np.zeros((0, 2), np.float32))
    h_out, c_out = dispatch.kernel("lstm_cell_fwd", "cuda")(*(ti.to_device(a)
                                                              for a in (gi, gh, c)))
    assert h_out.shape == (0, 2) and c_out.shape == (0, 2)


def _slot(buffer, k):
    """Slot k (a contiguous (B, W) view) of a host-backed (slots, B, W) buffer."""
    slots, rows, width = buffer.shape
    return ti.view(buffer, (rows, width), (width, 1), k * rows * width)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
def test_kernels_write_into_slots_of_sequence_buffers(gpu, dtype):
    """With `out`, the results land in the given slots (as a sequence-level scan passes them)
    and the rest of each buffer keeps its values; the same launch serves every slot."""
    rng = np.random.default_rng()
    rows, hidden = 3, 5
    gi, gh, c, dh, dc = _arrays(rng, dtype, (rows, 4 * hidden), (rows, 4 * hidden),
                                (rows, hidden), (rows, hidden), (rows, hidden))
    states = ti.to_device(np.full((3, rows, hidden), 7.0, dtype))
    gates = ti.to_device(np.full((3, rows, 4 * hidden), 7.0, dtype))
    fwd, bwd = dispatch.kernel("lstm_cell_fwd", "cuda"), dispatch.kernel("lstm_cell_bwd", "cuda")
    args = [ti.to_device(a) for a in (gi, gh, c)]
    for k in (1, 2):
        assert fwd(*args, out=(_slot(states, k), _slot(states, 0)))[0].ptr == _slot(states,
                                                                                     k).ptr
        bwd(*(ti.to_device(a) for a in (dh, dc)), *args, out=(_slot(gates, k), _slot(states, 0)))
    h_new, c_new = dispatch.kernel("lstm_cell_fwd", "cpu")(gi, gh, c)
    d_gates, dc_prev = dispatch.kernel("lstm_cell_bwd", "cpu")(dh, dc, gi, gh, c)
    host_states, host_gates = ti.to_host(states), ti.to_host(gates)
    tol = TOL[dtype]
    for actual, expected in ((host_states[1], h_new), (host_states[2], h_new),
                             (host_gates[1], d_gates), (host_gates[2], d_gates),
                             (host_states[0], dc_prev)):
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=tol, atol=tol)
    assert (host_gates[0] == 7).all()
    d_gi, d_gh, dh_prev = (ti.to_device(np.zeros(s, dtype)) for s in
                           ((rows, 3 * hidden), (rows, 3 * hidden), (rows, hidden)))
    gru_args = [ti.to_device(a[:, :3 * hidden].copy()) for a in (gi, gh)] + [ti.to_device(c)]
    dispatch.kernel("gru_cell_fwd", "cuda")(*gru_args, out=(_slot(states, 1),))
    dispatch.kernel("gru_cell_bwd", "cuda")(ti.to_device(dh), *gru_args, out=(d_gi, d_gh,
                                                                              dh_prev))
    cpu_args = (gi[:, :3 * hidden], gh[:, :3 * hidden], c)
    expected = (dispatch.kernel("gru_cell_fwd", "cpu")(*cpu_args),
                *dispatch.kernel("gru_cell_bwd", "cpu")(dh, *cpu_args))
    for actual, e in zip((host_states[1], ti.to_host(d_gi), ti.to_host(d_gh),
                          ti.to_host(dh_prev)), expected):
        np.testing.assert_allclose(actual.astype(np.float64), e.astype(np.float64), rtol=tol,
                                   atol=tol)
