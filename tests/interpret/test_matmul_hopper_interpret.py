"""The Hopper matmul kernel (TMA descriptors, persistent programs) against numpy, on the CPU,
through Triton's interpreter.

Run explicitly:
`TRITON_INTERPRET=1 python -m pytest tests/interpret/test_matmul_hopper_interpret.py`. The
dispatcher runs with GENESIS_MATMUL_BACKEND=hopper on a pretend sm_90 GPU of four SMs, so
each persistent program walks several tiles; small tiles (16 x 16 x 16, and 16 x 32 x 16 stored
in halves) make odd sizes walk partial tiles and K tails, which TMA reads as zeros. Split-K
configs cut K = 35 or 40 (three steps of 16) into 2 ranges, or into 4, the last one empty; the
tail configs split the tiles past the last full wave of four, in ranges of one step (37 x 45 in
16 x 16 tiles: 8 whole, then one in 3 ranges; in 16 x 32 tiles: 4 whole, then two in 2). The warp-specialized split configs (one split in 3,
one tail) finish whole tiles and split units by masked stores.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import triton_interpret as ti
from interpret.test_matmul_interpret import (ACTS, BF16, check, check_linear_act, reference,
                                             values)
from triton.runtime import interpreter

from genesis.backends.cuda.kernels import matmul as mm
from genesis.backends.cuda.kernels import matmul_hopper as mh

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
SMALL = mh._config(16, 16, 16, 4, 1, group=2)
SPLIT = mh._config(16, 32, 16, 4, 1, split=True, group=3)
SPLIT_K2 = mh._config(16, 32, 16, 4, 1, split=True, group=3, split_k=2)
SPLIT_K4 = mh._config(16, 16, 16, 4, 1, group=2, split_k=4)
TAIL = mh._config(16, 16, 16, 4, 1, group=2, split_k=0)
TAIL_SPLIT = mh._config(16, 32, 16, 4, 1, split=True, group=3, split_k=0)
SPECIALIZED_SPLIT_K3 = mh._config(16, 16, 16, 4, 1, group=2, split_k=3, ws=True)
SPECIALIZED_TAIL = mh._config(16, 32, 16, 4, 1, group=3, split_k=0, ws=True)
CONFIGS = {"16x16x16": SMALL, "16x32x16-split": SPLIT, "split-k2": SPLIT_K2, "split-k4": SPLIT_K4,
           "tail": TAIL, "tail-split": TAIL_SPLIT, "specialized-split-k3": SPECIALIZED_SPLIT_K3,
           "specialized-tail": SPECIALIZED_TAIL}
GPU = SimpleNamespace(properties=SimpleNamespace(capability=(9, 0), multi_processor_count=4))


@pytest.fixture
def gpu(monkeypatch):
    """Products run interpreted with the Hopper kernel forced (the config a test puts under
    "value"); "ran" counts its launches."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "hopper")
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    state = {"value": SMALL, "ran": 0}
    monkeypatch.setattr(mh, "get_context", lambda device=None: GPU)
    monkeypatch.setattr(mh, "config_space",
                        lambda problem: [state["value"]] if mh.supports(problem) else [])
    monkeypatch.setattr(mh, "split_k_space", lambda problem: [])
    monkeypatch.setattr(mh, "SPLIT_MIN_STEPS", 1)  # K ranges of one step of 16
    launch = mh.launch

    def counted(plan, stream, arrays):
        state["ran"] += 1
        launch(plan, stream, arrays)

    monkeypatch.setattr(mh, "launch", counted)
    monkeypatch.setattr(mm, "heuristic_config", lambda problem: mm._config(16, 16, 16, 4, 1))
    monkeypatch.setattr(mm, "_gemv_space", lambda problem: [])
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    monkeypatch.setattr(mm, "_plans", mm.LaunchCache())
    with ti.device(mm):
        yield state


def padded(arr, layout, width=48):
    """A device array of `arr`'s values whose storage rows (layout "row") or columns
    ("transposed") lie `width` elements apart: a stride TMA can read for any size."""
    stored = arr if layout == "row" else arr.T
    wide = np.zeros((stored.shape[0], width), arr.dtype)
    wide[:, :stored.shape[1]] = stored
    dev = ti.view(ti.to_device(wide), stored.shape, (width, 1))
    if layout == "row":
        return dev
    return ti.view(dev, arr.shape, (1, width))


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
@pytest.mark.parametrize("layout_a", ["row", "transposed"])
@pytest.mark.parametrize("layout_b", ["row", "transposed"])
@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=str)
def test_odd_sizes_and_layouts(gpu, monkeypatch, config, layout_a, layout_b, dtype, rng):
    """M, N and K that no tile divides, each operand read as stored or transposed, the result
    written into a slot with padded rows (float32 in TF32, the only float32 it runs)."""
    monkeypatch.setattr(mm.flags, "allow_tf32", True)
    gpu["value"] = config
    a, b = values((37, 35), dtype, rng), values((35, 45), dtype, rng)
    out = padded(np.zeros((37, 45), dtype), "row")
    result = mm.matmul_arrays(padded(a, layout_a), padded(b, layout_b), out=out)
    assert result is out and gpu["ran"] == 1
    check(out, reference(a, b), dtype, 35)


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
@pytest.mark.parametrize("activation", list(ACTS), ids=str)
@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_linear_bias_activation_and_preactivation(gpu, config, activation, dtype, rng):
    """F.linear's fused epilogue: x (2, 19, 40) @ W^T (W: 24 x 40, read transposed) + bias,
    the activation applied and the value before it kept."""
    gpu["value"] = config
    x, w, bias = (values(shape, dtype, rng) for shape in ((2, 19, 40), (24, 40), (24,)))
    check_linear_act(x, w, bias, activation)
    assert gpu["ran"] == 1


def test_strided_bias(gpu, rng):
    x, w = values((33, 24), BF16, rng), values((40, 24), BF16, rng)
    wide_bias = values((80,), BF16, rng)
    y, _ = mm.linear_act(ti.to_device(x), ti.to_device(w),
                         ti.view(ti.to_device(wide_bias), (40,), (2,)), "relu", False)
    assert gpu["ran"] == 1
    check(y, np.maximum(reference(x, w.T) + wide_bias[::2].astype(np.float64), 0), BF16, 24)


def test_products_it_cannot_run_go_to_the_tiles(gpu, rng):
    """Batch dims, a row stride TMA cannot take, row sums, a gated operand and float64: the
    pointer-load tile computes them."""
    a, b = values((2, 20, 24), BF16, rng), values((2, 24, 16), BF16, rng)
    check(mm.matmul(ti.to_device(a), ti.to_device(b)), reference(a, b), BF16, 24)
    odd_k = values((20, 23), BF16, rng)
    check(mm.matmul(ti.to_device(odd_k), ti.to_device(b[0, :23])), reference(odd_k, b[0, :23]),
          BF16, 23)
    sums = ti.to_device(np.zeros(20, BF16))
    check(mm.matmul_arrays(ti.to_device(a[0]), ti.to_device(b[0]), row_sum=sums),
          reference(a[0], b[0]), BF16, 24)
    gate_up = values((20, 48), BF16, rng)
    mm.matmul_arrays(ti.to_device(gate_up), ti.to_device(b[0]), gated=True)
    a64, b64 = a[0].astype(np.float64), b[0].astype(np.float64)
    np.testing.assert_allclose(ti.to_host(mm.matmul(ti.to_device(a64), ti.to_device(b64))),
                               reference(a64, b64), rtol=1e-12)
    assert gpu["ran"] == 0
