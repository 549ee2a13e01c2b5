"""The matmul kernel against numpy, on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_matmul_interpret.py`.
Small tiles (16 x 16 x 16, grouped two tile-rows at a time) make small shapes walk several
tiles, partial tiles, K tails, grouping bands and the batch decomposition; the registered
"matmul" and "linear_act" kernels run with their own launch code.
"""

import math

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti
from triton.runtime import interpreter

from genesis.backends.cuda.kernels import matmul as mm

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1e-3, BF16: 8e-3,
       np.dtype(np.float64): 1e-12}
SMALL = mm._config(16, 16, 16, 4, 1, group=2)
ODD = mm._config(32, 16, 32, 4, 1, group=3)


@pytest.fixture
def gpu(monkeypatch):
    """Kernels run interpreted, with the SMALL config unless a test sets `config`; skinny
    products too (the gemv kernel has tests of its own: test_gemv_interpret.py)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "triton")
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    config = {"value": SMALL}
    monkeypatch.setattr(mm, "heuristic_config", lambda problem: config["value"])
    monkeypatch.setattr(mm, "_gemv_space", lambda problem: [])
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    with ti.device(mm):
        yield config


def values(shape, dtype, rng):
    if dtype.kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    lo, hi = (0, 8) if dtype.kind == "u" else (-8, 8)
    return rng.integers(lo, hi, shape).astype(dtype)


def reference(a, b):
    """numpy's matmul in float64 (integers: wrapping in their own type, as PyTorch)."""
    if a.dtype.kind in "iu":
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def check(actual, expected, dtype, k):
    host = ti.to_host(actual)
    assert host.shape == expected.shape and host.dtype == dtype
    if dtype.kind in "iu":
        np.testing.assert_array_equal(host, expected)
    else:
        # each product term is rounded once in the inputs' precision; the sum grows with k
        tol = TOL[dtype] * max(1, math.sqrt(k)) * 4
        np.testing.assert_allclose(host.astype(np.float64), expected, rtol=tol, atol=tol)


def strided(arr, layout):
    """(values, device array) with `arr`'s values laid out as asked (last two dims)."""
    if layout == "transposed" and arr.ndim >= 2:
        storage = np.ascontiguousarray(np.swapaxes(arr, -1, -2))
        dev = ti.to_device(storage)
        st = list(dev.element_strides())
        st[-1], st[-2] = st[-2], st[-1]
        return arr, ti.view(dev, arr.shape, st)
    if layout == "stepped":
        wide = np.repeat(arr, 2, axis=-1)
        dev = ti.to_device(wide)
        st = list(dev.element_strides())
        st[-1] = 2
        return wide[..., ::2], ti.view(dev, arr.shape, st)
    return arr, ti.to_device(arr)


SHAPES = [((1, 1), (1, 1)), ((17, 33), (33, 65)), ((40, 48), (48, 36)), ((5, 0), (0, 7)),
          ((0, 4), (4, 3)), ((3, 4), (4, 0)), ((33,), (33, 20)), ((20, 33), (33,)), ((9,), (9,)),
          ((2, 3, 19, 21), (21, 18)), ((4, 1, 7, 9), (3, 9, 5)), ((2, 9), (3, 9, 4)),
          ((2, 3, 2, 3, 5, 7), (7, 6)), ((2, 3, 2, 3, 5, 7), (2, 1, 2, 1, 7, 6))]


@pytest.mark.parametrize("config", [SMALL, ODD], ids=["16x16x16", "32x16x32"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS + [np.dtype(np.int32)], ids=str)
def test_matmul_shapes(gpu, config, shapes, dtype, rng):
    gpu["value"] = config
    a, b = (values(s, dtype, rng) for s in shapes)
    out = mm.matmul(ti.to_device(a), ti.to_device(b))
    check(out, reference(a, b), dtype, shapes[0][-1])


@pytest.mark.parametrize("layout_a", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
def test_matmul_layouts(gpu, layout_a, layout_b, dtype, rng):
    a, da = strided(values((3, 21, 35), dtype, rng), layout_a)
    b, db = strided(values((3, 35, 19), dtype, rng), layout_b)
    check(mm.matmul(da, db), reference(a, b), dtype, 35)


def test_matmul_broadcast_views(gpu, rng):
    """A batch dim broadcast by stride 0 in one operand, and a batch of permuted matrices."""
    dtype = np.dtype(np.float32)
    row = values((1, 12, 10), dtype, rng)
    da = ti.view(ti.to_device(row), (4, 12, 10), (0, 10, 1))
    base = values((11, 4, 10), dtype, rng)
    db = ti.view(ti.to_device(base), (4, 10, 11), (10, 1, 40))
    expected = reference(np.broadcast_to(row, (4, 12, 10)), base.transpose(1, 2, 0))
    check(mm.matmul(da, db), expected, dtype, 10)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_matmul_integers_wrap(gpu, dtype, rng):
    a, b = values((13, 40), dtype, rng), values((40, 17), dtype, rng)
    check(mm.matmul(ti.to_device(a), ti.to_device(b)), reference(a, b), dtype, 40)


def test_matmul_tf32_flag_changes_precision(gpu, monkeypatch, rng):
    a, b = values((16, 32), np.dtype(np.float32), rng), values((32, 16), np.dtype(np.float32), rng)
    for flag in (False, True):
        monkeypatch.setattr(mm.flags, "allow_tf32", flag)
        check(mm.matmul(ti.to_device(a), ti.to_device(b)), reference(a, b), a.dtype, 32)
    assert {geometry[0][8] for geometry in mm._chosen} == {"ieee", "tf32"}


_erf = np.vectorize(math.erf)
ACTS = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0),
        "gelu": lambda z: 0.5 * z * (1 + _erf(z / math.sqrt(2))),
        "gelu_tanh": lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                       * (z + 0.044715 * z ** 3))),
        "silu": lambda z: z / (1 + np.exp(-z))}


@pytest.mark.parametrize("activation", list(ACTS), ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_act(gpu, activation, dtype, with_bias, rng):
    x, w = values((2, 9, 37), dtype, rng), values((23, 37), dtype, rng)
    check_linear_act(x, w, values((23,), dtype, rng) if with_bias else None, activation)


def check_linear_act(x, w, bias, activation):
    """linear_act of host arrays x, w and bias (or None), keeping the pre-activation value,
    against numpy."""
    y, z = mm.linear_act(ti.to_device(x), ti.to_device(w),
                         None if bias is None else ti.to_device(bias), activation, True)
    zr = reference(x, w.T) + (0 if bias is None else bias.astype(np.float64))
    check(y, ACTS[activation](zr), x.dtype, x.shape[-1])
    if activation is None:
        assert z is None
    else:
        check(z, zr, x.dtype, x.shape[-1])


def test_linear_act_strided_weight_and_1d_input(gpu, rng):
    dtype = np.dtype(np.float32)
    w, dw = strided(values((13, 10), dtype, rng), "transposed")
    x = values((10,), dtype, rng)
    bias, db = strided(values((26,), dtype, rng), "contiguous")
    dbias = ti.view(db, (13,), (2,))
    y, z = mm.linear_act(ti.to_device(x), dw, dbias, "relu", False)
    assert z is None
    check(y, np.maximum(reference(x, w.T) + bias[::2], 0), dtype, 10)


@pytest.mark.parametrize("config", [SMALL, ODD], ids=["16x16x16", "32x16x32"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_row_sums_beside_the_product(gpu, config, dtype, rng):
    """a's rows summed over k by the product's own kernel: the first tile column writes them,
    over every k tile, for a transposed a (a weight gradient's dY^T) and a contiguous one."""
    gpu["value"] = config
    for layout in ("transposed", "contiguous"):
        a, da = strided(values((37, 45), dtype, rng), layout)
        b = values((45, 50), dtype, rng)
        sums = ti.to_device(np.zeros(37, dtype))
        out = mm.matmul_arrays(da, ti.to_device(b), row_sum=sums)
        check(out, reference(a, b), dtype, 45)
        check(sums, a.astype(np.float64).sum(1), dtype, 45)


def test_row_sums_reject_what_they_cannot_hold(gpu, rng):
    a, b = values((6, 5), np.dtype(np.float32), rng), values((5, 4), np.dtype(np.float32), rng)
    for bad in (np.zeros(5, np.float32), np.zeros(6, np.float16), np.zeros((6, 1), np.float32)):
        with pytest.raises(ValueError, match="row_sum"):
            mm.matmul_arrays(ti.to_device(a), ti.to_device(b), row_sum=ti.to_device(bad))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("need_x", [True, False])
def test_linear_backward_fuses_the_bias_gradient(gpu, dtype, need_x, rng):
    g, x, w = values((2, 9, 23), dtype, rng), values((2, 9, 37), dtype, rng), values((23, 37), dtype, rng)
    dx, dw, db = mm.linear_act_backward(ti.to_device(g), ti.to_device(x), ti.to_device(w),
                                        need_x, True, True)
    g2, x2 = g.reshape(-1, 23), x.reshape(-1, 37)
    check(dw, reference(g2.T, x2), dtype, 18)
    check(db, g2.astype(np.float64).sum(0), dtype, 18)
    if need_x:
        check(dx, reference(g, w), dtype, 23)
    else:
        assert dx is None


@pytest.mark.parametrize("config", [SMALL, ODD], ids=["16x16x16", "32x16x32"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gated_operand(gpu, config, dtype, rng):
    """matmul_arrays(gated=True) of the tiled kernel: silu(gate) * up as a, rounded to its dtype,
    for a batch of (rows, 2K) gate/up arrays and a strided one."""
    gpu["value"] = config
    gate_up, b = values((2, 19, 2 * 35), dtype, rng), values((35, 24), dtype, rng)
    gate, up = np.split(gate_up.astype(np.float64), 2, axis=-1)
    a = (gate / (1 + np.exp(-gate)) * up).astype(dtype)
    check(mm.matmul_arrays(ti.to_device(gate_up), ti.to_device(b), gated=True),
          reference(a, b), dtype, 35)
    wide_rows = ti.view(ti.to_device(np.concatenate([gate_up[0], gate_up[0]], 1)), (19, 70),
                        (140, 1))
    check(mm.matmul_arrays(wide_rows, ti.to_device(b), gated=True), reference(a[0], b), dtype,
          35)
    with pytest.raises(ValueError, match="gated"):
        mm.matmul_arrays(ti.to_device(gate_up[..., 1:]), ti.to_device(b), gated=True)


BROKEN = mm._config(64, 64, 64, 4, 2)


@pytest.fixture
def broken_config(monkeypatch):
    """BROKEN fails to build, as a config needing too much shared memory fails to launch."""
    build = mm._matmul_plan

    def plan(problem, config, target=None):
        if config == BROKEN:
            raise RuntimeError("out of resource: shared memory")
        return build(problem, config, target)

    monkeypatch.setattr(mm, "_matmul_plan", plan)


def test_failing_config_falls_back_to_the_next(gpu, broken_config, monkeypatch, rng):
    monkeypatch.setattr(mm, "_plan", lambda problem, choice: ([], [BROKEN, SMALL]))
    a, b = values((20, 30), np.dtype(np.float32), rng), values((30, 10), np.dtype(np.float32), rng)
    with pytest.warns(RuntimeWarning, match="failed .*shared memory.*trying the next"):
        out = mm.matmul(ti.to_device(a), ti.to_device(b))
    check(out, reference(a, b), a.dtype, 30)
    check(mm.matmul(ti.to_device(a), ti.to_device(b)), reference(a, b), a.dtype, 30)


def test_tuning_skips_failures_and_stores_the_winner(gpu, broken_config, monkeypatch, tmp_path,
                                                     rng):
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    costs = {16: 2.0, 32: 1.0}

    def timer(run):
        run()
        return costs[seen[-1]]

    seen = []
    launch = mm._launch
    monkeypatch.setattr(mm, "_launch", lambda p, s, **c: (seen.append(c.get("BM")),
                                                          launch(p, s, **c)))
    monkeypatch.setattr(mm, "_tuner", mm.AutoTuner("matmul", timer=timer))
    monkeypatch.setattr(mm, "_plan", lambda problem, choice: ([BROKEN, SMALL, ODD], [SMALL]))
    monkeypatch.setattr(mm.Problem, "tuning_key", lambda self: ("fake", self.M))
    a, b = values((20, 30), np.dtype(np.float32), rng), values((30, 10), np.dtype(np.float32), rng)
    with pytest.warns(RuntimeWarning, match="skipping config"):
        out = mm.matmul(ti.to_device(a), ti.to_device(b))
    check(out, reference(a, b), a.dtype, 30)
    assert mm._tuner.lookup(("fake", 20, "triton")) == ODD  # forced backends: keys of their own
    assert (tmp_path / "autotune" / "matmul.json").exists()


def test_repeated_geometry_takes_the_fast_path_with_new_arrays(gpu, rng):
    dtype = np.dtype(np.float32)
    for _ in range(3):
        a, b = values((2, 20, 30), dtype, rng), values((30, 10), dtype, rng)
        check(mm.matmul(ti.to_device(a), ti.to_device(b)), reference(a, b), dtype, 30)
    assert len(mm._fast) == 1
    (_, _, problem, _), = mm._fast.values()
    assert problem.arrays is None  # no array (device memory) is kept alive by the cache


def test_linear_act_unfoldable_batch(gpu, rng):
    """x's batch dims do not stack into one tall matrix: a batched product with the weight
    broadcast (batch stride 0) and the bias in the epilogue."""
    dtype = np.dtype(np.float32)
    base = values((9, 2, 12), dtype, rng)
    dx = ti.view(ti.to_device(base), (2, 9, 12), (12, 24, 1))
    w, bias = values((5, 12), dtype, rng), values((5,), dtype, rng)
    y, z = mm.linear_act(dx, ti.to_device(w), ti.to_device(bias), "silu", True)
    zr = reference(base.transpose(1, 0, 2), w.T) + bias
    check(z, zr, dtype, 12)
    check(y, ACTS["silu"](zr), dtype, 12)


def _batch_major(arr):
    """(values, device array) of `arr` (2, 9, m) stored as (9, 2, m): its batch dims do not merge."""
    dev = ti.to_device(np.ascontiguousarray(arr.transpose(1, 0, 2)))
    m = arr.shape[-1]
    return arr, ti.view(dev, arr.shape, (m, 2 * m, 1))


@pytest.mark.parametrize("layout", ["contiguous", "unmergeable", "1d"])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, False), (True, False, True)],
                         ids=str)
def test_linear_act_backward(gpu, layout, needs, rng):
    """dx = g @ W, dW = g^T x over all rows, db = column sums of g, for inputs whose rows are a
    view (contiguous), need a copy (batch dims that do not merge) or are one vector."""
    from genesis.backends.cuda import array_ops
    from genesis.backends.cuda.kernels import reduce
    dtype = np.dtype(np.float32)
    w = values((5, 12), dtype, rng)
    if layout == "1d":
        (x, dx), (g, dg) = ((a, ti.to_device(a)) for a in (values((12,), dtype, rng),
                                                           values((5,), dtype, rng)))
    elif layout == "unmergeable":
        (x, dx), (g, dg) = (_batch_major(values((2, 9, m), dtype, rng)) for m in (12, 5))
    else:
        (x, dx), (g, dg) = ((a, ti.to_device(a)) for a in (values((2, 9, 12), dtype, rng),
                                                           values((2, 9, 5), dtype, rng)))
    with ti.device(reduce, array_ops):
        grads = mm.linear_act_backward(dg, dx, ti.to_device(w), *needs)
    g2, x2 = g.reshape(-1, 5), x.reshape(-1, 12)
    expected = (reference(g, w), reference(g2.T, x2), g2.astype(np.float64).sum(0))
    for got, want, need, k in zip(grads, expected, needs, (5, len(g2), len(g2))):
        if need:
            check(got, want, dtype, k)
        else:
            assert got is None


def test_matmul_into_a_slot_with_bias(gpu, rng):
    """`out` (a slot of a larger buffer, as a recurrent step's) receives a @ b + bias, the
    rest of the buffer keeps its values, and the fast path writes each new slot."""
    dtype = np.dtype(np.float32)
    buffer = ti.to_device(np.full((3, 4, 10), 5.0, dtype))
    b, bias = values((30, 10), dtype, rng), values((10,), dtype, rng)
    for k in (1, 2):
        a = values((4, 30), dtype, rng)
        slot = ti.view(buffer, (4, 10), (10, 1), k * 40)
        assert mm.matmul(ti.to_device(a), ti.to_device(b), ti.to_device(bias), slot) is slot
        check(slot, reference(a, b) + bias, dtype, 30)
    assert (ti.to_host(buffer)[0] == 5).all()
    with pytest.raises(ValueError, match="cannot hold"):
        mm.matmul(ti.to_device(a), ti.to_device(b), out=ti.to_device(np.zeros((4, 9), dtype)))
