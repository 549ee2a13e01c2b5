"""The fused LSTM/GRU gate kernels (kernels/recurrent.py) against the CPU kernels, through
Triton's interpreter. Run explicitly:
`TRITON_INTERPRET=1 python -m pytest tests/cuda/test_recurrent_interpret.py`.
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti
from triton.runtime import interpreter

import genesis.backends.cpu  # noqa: F401  (registers the CPU kernels)
from genesis import dispatch
from genesis.backends.cuda.kernels import matmul as mm
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


@pytest.fixture
def scan_gpu(gpu, monkeypatch):
    """As `gpu`, with the matmul kernel interpreted too (16 x 16 x 16 tiles, no gemv)."""
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "triton")
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    monkeypatch.setattr(mm, "heuristic_config", lambda problem: mm._config(16, 16, 16, 4, 1))
    monkeypatch.setattr(mm, "_gemv_space", lambda problem: [])
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(mm):
        yield


class _At:
    """Slot t + k of the named buffer at step t."""

    def __init__(self, name, k=0):
        self.name, self.k = name, k


def _resolve(spec, buffers, t):
    """The arguments `spec` stands for at step t (`out` a tuple)."""
    if isinstance(spec, tuple):
        return tuple(_resolve(s, buffers, t) for s in spec)
    if isinstance(spec, _At):
        return _slot(buffers[spec.name], t + spec.k)
    return buffers.get(spec) if isinstance(spec, str) else spec


def _advance(spec, buffers):
    if isinstance(spec, tuple):
        return tuple(_advance(s, buffers) for s in spec)
    if isinstance(spec, _At):
        rows, width = buffers[spec.name].shape[1:]
        return rows * width
    return 0


_LSTM_WIDTHS = {"gi": 4, "gh": 4, "h": 1, "c": 1, "dg": 4, "dc": 1, "dh2": 1}
_GRU_WIDTHS = {"gi": 3, "gh": 3, "h": 1, "dgi": 3, "dgh": 3, "dz": 1, "dh2": 1, "dh3": 1}
# (op, its arguments, the widths of the buffers, in hidden sizes) of each step a
# sequence-level scan runs: _At a slot of a buffer, a name one fixed array (the first slot of
# its buffer, or W (4H, H), its transpose w_t, the bias).
_SCAN_CASES = [
    ("matmul", (_At("h", 1), "w_t", None, _At("gh")), _LSTM_WIDTHS),
    ("matmul", (_At("dg"), "w", "bias", "dh2"), _LSTM_WIDTHS),
    ("lstm_cell_fwd", (_At("gi"), _At("gh"), _At("c", 1), (_At("h"), _At("c"))), _LSTM_WIDTHS),
    ("lstm_cell_bwd", (_At("h"), "dc", _At("gi"), _At("gh"), _At("c", 1), (_At("dg"), "dh2"),
                       "dh2"), _LSTM_WIDTHS),
    ("gru_cell_fwd", (_At("gi"), _At("gh"), _At("h"), (_At("h", 1),)), _GRU_WIDTHS),
    ("gru_cell_bwd", (_At("h"), _At("gi"), _At("gh"), _At("h", 1), (_At("dgi"), _At("dgh"), "dz"),
                      "dh2", "dh3"), _GRU_WIDTHS),
]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5)], ids=str)
@pytest.mark.parametrize("case", _SCAN_CASES, ids=lambda case: case[0])
def test_scan_step_matches_the_kernels_on_each_steps_views(scan_gpu, dtype, shape, case):
    """scan_step's launches, bound once with only their addresses moving, write what the
    registered op writes given each step's views, over steps taken in reverse (as a backward
    loop) so that reads see earlier steps' writes. A product whose slots would move off
    16-byte alignment has no such form (None: the scan makes views)."""
    rng = np.random.default_rng()
    rows, hidden = shape
    steps = 3
    op, spec, widths = case
    host = {name: rng.uniform(-1, 1, (steps + 1, rows, width * hidden)).astype(dtype)
            for name, width in widths.items()}
    fixed = {"w": rng.uniform(-1, 1, (4 * hidden, hidden)).astype(dtype),
             "bias": rng.uniform(-1, 1, (hidden,)).astype(dtype)}
    runs = []
    for bound in (True, False):
        buffers = {name: ti.to_device(a) for name, a in host.items()}
        buffers.update({name: _slot(buffers[name], 0) for name in ("dc", "dh2", "dh3", "dz")
                        if name in buffers})
        buffers.update({name: ti.to_device(a) for name, a in fixed.items()})
        buffers["w_t"] = ti.view(buffers["w"], (hidden, 4 * hidden), (1, hidden))
        advances = _advance(spec, buffers)
        step = dispatch.kernel("scan_step", "cuda")(op, _resolve(spec, buffers, 0),
                                                    advances) if bound else None
        unaligned = op == "matmul" and any(a * dtype.itemsize % 16 for a in advances)
        if bound and unaligned:
            assert step is None
            return
        kernel = dispatch.kernel(op, "cuda")
        for t in reversed(range(steps)):
            if bound:
                step(t)
            else:
                kernel(*_resolve(spec, buffers, t))
        runs.append({name: ti.to_host(buffers[name]).copy() for name in host})
    for name in host:
        np.testing.assert_array_equal(runs[0][name], runs[1][name], err_msg=name)
