"""The skinny-product kernel (kernels/gemv.py) against float64 products, on the CPU through
Triton's interpreter, run by the matmul dispatcher's own launch code (matmul, linear_act).

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_gemv_interpret.py`.
Small tiles (8 x 4 FMA, 16 x 16 DOT) make odd sizes walk several column blocks, K tails and
K splits (split on: about 64 programs; off: one split).
"""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import triton_interpret as ti
from triton.runtime import interpreter

from genesis.backends.cuda.kernels import gemv
from genesis.backends.cuda.kernels import matmul as mm
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
DTYPES = [F32, np.dtype(np.float16), BF16]
# The unit roundoff of each dtype: the result is rounded once from a float32 sum.
UNIT = {F32: 2.0 ** -24, np.dtype(np.float16): 2.0 ** -11, BF16: 2.0 ** -8}
ACTS = {None: lambda z: z, "relu": TF.relu, "gelu": TF.gelu,
        "gelu_tanh": lambda z: TF.gelu(z, approximate="tanh"), "silu": TF.silu}


def config(dot, split, k_major=True):
    """A small gemv config: FMA 8 x 4 or DOT 16 x 16 (BK x BN, swapped when b is contiguous
    along N), about 64 programs with `split`, one split without."""
    long, short = (16, 16) if dot else (8, 4)
    bk, bn = (long, short) if k_major else (short, long)
    return {"backend": "gemv", "BK": bk, "BN": bn, "DOT": dot, "programs": 64 if split else 0,
            "num_warps": 1, "num_stages": 1}


@pytest.fixture
def gpu(monkeypatch):
    """Kernels run interpreted, skinny products untimed with the config a test sets in
    `config["value"]`; gemv launches are counted; split counters of their own (host memory)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "triton")
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    state = {"value": config(False, False), "launches": 0}
    monkeypatch.setattr(mm, "_gemv_space",
                        lambda problem: [state["value"]] if gemv.supports(problem) else [])
    launch = gemv.gemv_launch

    def counted(plan, stream, arrays):
        state["launches"] += 1
        launch(plan, stream, arrays)

    monkeypatch.setattr(gemv, "gemv_launch", counted)
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    monkeypatch.setattr(mm, "_plans", LaunchCache())
    monkeypatch.setattr(red, "_COUNTS", {})
    with ti.device(mm, gemv):
        yield state


def values(shape, dtype, rng):
    return rng.uniform(-2, 2, shape).astype(dtype)


def wide(arr):
    return torch.from_numpy(np.asarray(arr, np.float64))


def check(actual, expected, dtype, scale):
    """Each element within a few rounding units of the output dtype of `scale` (the sum of
    |a_ik b_kj| it comes from, plus |bias|), float32 accumulation included."""
    host = ti.to_host(actual)
    assert host.dtype == dtype and host.shape == tuple(expected.shape)
    bound = 4 * UNIT[dtype] * scale.numpy() + 64 * UNIT[F32] * scale.numpy()
    error = np.abs(host.astype(np.float64) - expected.numpy())
    assert np.all(error <= bound), f"max error {error.max()} (bound {bound.max()})"


def linear_case(gpu, rng, dtype, m, n, k, bias=True, activation=None, a_layout="contiguous"):
    """linear_act on x (m, k) laid out as asked, W (n, k), bias (n,) against torch in float64;
    the pre-activation value is checked too."""
    x, w = values((m, k), dtype, rng), values((n, k), dtype, rng)
    b = values((n,), dtype, rng) if bias else None
    if a_layout == "transposed":
        dx = ti.to_device(x, transpose=True)
    elif a_layout == "stepped":
        dx = ti.view(ti.to_device(np.repeat(x, 2, axis=1)), (m, k), (2 * k, 2))
    else:
        dx = ti.to_device(x)
    y, z = mm.linear_act(dx, ti.to_device(w), None if b is None else ti.to_device(b),
                         activation, True)
    zr = TF.linear(wide(x), wide(w), None if b is None else wide(b))
    scale = wide(np.abs(x)) @ wide(np.abs(w)).T + (0 if b is None else wide(np.abs(b)))
    check(y, ACTS[activation](zr), dtype, scale + ACTS[activation](zr).abs())
    if activation is not None:
        check(z, zr, dtype, scale)
    assert gpu["launches"] >= 1


@pytest.mark.parametrize("m,dot", [(1, False)] + [(m, True) for m in range(1, 17)], ids=str)
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
def test_rows(gpu, m, dot, split, rng):
    """Every row count the kernel takes (FMA tiles take one row)."""
    gpu["value"] = config(dot, split)
    linear_case(gpu, rng, F32, m, 23, 37)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,dot", [(1, False), (1, True), (5, True), (16, True)], ids=str)
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_dtypes(gpu, dtype, m, dot, split, bias, rng):
    gpu["value"] = config(dot, split)
    linear_case(gpu, rng, dtype, m, 21, 50, bias=bias)


@pytest.mark.parametrize("activation", list(ACTS), ids=str)
@pytest.mark.parametrize("dot", [False, True], ids=["fma", "dot"])
def test_activations(gpu, activation, dot, rng):
    gpu["value"] = config(dot, True)
    linear_case(gpu, rng, BF16, 1 if not dot else 3, 19, 40, activation=activation)


@pytest.mark.parametrize("a_layout", ["transposed", "stepped"])
@pytest.mark.parametrize("dot", [False, True], ids=["fma", "dot"])
def test_strided_input(gpu, a_layout, dot, rng):
    gpu["value"] = config(dot, True)
    linear_case(gpu, rng, F32, 1 if not dot else 6, 17, 33, a_layout=a_layout)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
@pytest.mark.parametrize("m,dot", [(1, False), (4, True)], ids=str)
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
def test_b_contiguous_along_n(gpu, dtype, m, dot, split, rng):
    """x @ W with W (k, n) row-major: the tile lies along N."""
    gpu["value"] = config(dot, split, k_major=False)
    a, b = values((m, 45), dtype, rng), values((45, 27), dtype, rng)
    out = mm.matmul(ti.to_device(a), ti.to_device(b))
    check(out, wide(a) @ wide(b), dtype, wide(np.abs(a)) @ wide(np.abs(b)))
    assert gpu["launches"] == 1


@pytest.mark.parametrize("dot", [False, True], ids=["fma", "dot"])
def test_transposed_weight_and_strided_bias(gpu, dot, rng):
    """A Linear whose weight is a transposed view (b contiguous along N) and whose bias is
    every other element of a vector."""
    gpu["value"] = config(dot, True, k_major=False)
    m = 1 if not dot else 3
    x, w, b = values((m, 29), F32, rng), values((19, 29), F32, rng), values((38,), F32, rng)
    y, z = mm.linear_act(ti.to_device(x), ti.to_device(w, transpose=True),
                         ti.view(ti.to_device(b), (19,), (2,)), "relu", True)
    zr = wide(x) @ wide(w).T + wide(b[::2])
    scale = wide(np.abs(x)) @ wide(np.abs(w)).T + wide(np.abs(b[::2]))
    check(z, zr, F32, scale)
    check(y, TF.relu(zr), F32, scale)
    assert gpu["launches"] == 1


def test_vector_and_folded_batch(gpu, rng):
    """A 1-D input (one row) and a (2, 3, k) input folded into 6 rows both run gemv."""
    gpu["value"] = config(True, True)
    w = values((13, 24), F32, rng)
    for shape in [(24,), (2, 3, 24)]:
        x = values(shape, F32, rng)
        y, _ = mm.linear_act(ti.to_device(x), ti.to_device(w), None, None, False)
        check(y, wide(x) @ wide(w).T, F32, wide(np.abs(x)) @ wide(np.abs(w)).T)
    assert gpu["launches"] == 2


@pytest.mark.parametrize("dot", [False, True], ids=["fma", "dot"])
def test_empty_k(gpu, dot, rng):
    """K = 0: the bias alone (then the activation)."""
    gpu["value"] = config(dot, True)
    m = 3 if dot else 1
    w, b = np.zeros((9, 0), F32), values((9,), F32, rng)
    y, _ = mm.linear_act(ti.to_device(np.zeros((m, 0), F32)), ti.to_device(w), ti.to_device(b),
                         "relu", False)
    np.testing.assert_array_equal(ti.to_host(y), np.broadcast_to(np.maximum(b, 0), (m, 9)))


@pytest.mark.parametrize("dot", [False, True], ids=["fma", "dot"])
def test_split_sums_in_blocks(gpu, monkeypatch, dot, rng):
    """The last program sums the partials two splits a load (the last block partial)."""
    monkeypatch.setattr(gemv, "_SUM_TILE", 2 * (16 * 16 if dot else 4))
    gpu["value"] = config(dot, True)
    linear_case(gpu, rng, F32, 4 if dot else 1, 30, 90)


def test_split_is_reproducible_and_resets_its_counters(gpu, rng):
    """Two runs of a split product give the same bits; the counters are back at 0."""
    gpu["value"] = config(False, True)
    x, w = ti.to_device(values((1, 64), BF16, rng)), ti.to_device(values((30, 64), BF16, rng))
    first, second = (ti.to_host(mm.linear_act(x, w, None, None, False)[0]).copy()
                     for _ in range(2))
    np.testing.assert_array_equal(first.view(np.uint16), second.view(np.uint16))
    counts, = red._COUNTS.values()
    assert not ti.to_host(counts).any()


def test_split_sizes():
    """Splits aim at `programs` programs, whole BK steps each; none when the blocks suffice."""
    assert gemv.split(128, 32, 1024) == (8, 4)
    assert gemv.split(192, 8, 1024) == (4, 2)
    assert gemv.split(2000, 8, 1024) == (1, 8)
    assert gemv.split(16, 5, 64) == (3, 2)
    assert gemv.split(16, 5, 0) == (1, 5)
    for blocks, steps, programs in [(3, 7, 64), (100, 33, 4096), (7, 1, 64)]:
        splits, per = gemv.split(blocks, steps, programs)
        assert (splits - 1) * per < steps <= splits * per


def test_config_space_lays_tiles_along_the_contiguous_axis():
    """W^T (unit stride along K) and W (unit stride along N) get the same tiles, transposed:
    the same extent along the contiguous axis."""
    from genesis.backends.cuda.kernels._strided_indexing import placeholder

    def space(b_strides):
        arrays = {"a": placeholder((1, 64), BF16), "b": placeholder((64, 32), BF16, b_strides),
                  "c": placeholder((1, 32), BF16)}
        strides = {"a": (64, 1), "b": b_strides, "c": (32, 1)}
        return gemv.config_space(mm.Problem(1, 32, 64, (), strides, arrays))

    k_major, n_major = space((1, 64)), space((32, 1))
    assert [(c["BK"], c["BN"]) for c in k_major] == [(c["BN"], c["BK"]) for c in n_major]
    assert {c["DOT"] for c in k_major} == {False, True}
    assert k_major[0]["BK"] * 2 >= 512  # whole 512-byte runs of a row of W
    assert math.prod(k_major[0][x] for x in ("BK", "BN")) >= 4096


def swiglu_reference(gate_up, dtype):
    """silu(gate) * up of a (..., 2K) array, rounded to `dtype` as silu_mul's output is."""
    gate, up = np.split(gate_up.astype(np.float64), 2, axis=-1)
    return (gate / (1 + np.exp(-gate)) * up).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,dot", [(1, False), (1, True), (6, True)], ids=str)
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
def test_gated_down_projection(gpu, dtype, m, dot, split, rng):
    """linear_silu_gate: the gate computed as the product loads a, over K tails and splits."""
    gpu["value"] = config(dot, split)
    gate_up, w, b = values((m, 2 * 37), dtype, rng), values((21, 37), dtype, rng), \
        values((21,), dtype, rng)
    y = mm.linear_silu_gate(ti.to_device(gate_up), ti.to_device(w), ti.to_device(b))
    a = swiglu_reference(gate_up, dtype)
    expected = TF.linear(wide(a), wide(w), wide(b))
    check(y, expected, dtype, wide(np.abs(a)) @ wide(np.abs(w)).T + wide(np.abs(b)))
    assert gpu["launches"] == 1
