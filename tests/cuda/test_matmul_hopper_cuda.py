"""The Hopper matmul kernel (kernels/matmul_hopper.py) on an sm_90 GPU, forced
(GENESIS_MATMUL_BACKEND=hopper) and compared with PyTorch's float64 products on the CPU: every
config in GPT-2's three product layouts at sizes no tile divides, the split-K configs, the fused
bias and activation epilogue, CUDA graph capture, and the products it leaves to the tiles.

Error bound as tests/cuda/test_matmul_cuda.py's: within `tol * sum_k |a_ik| |b_kj|` of the
float64 product of the rounded inputs.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_replays_as_eager, skip_no_cuda, warm_up_on_side_stream

import genesis

pytestmark = [skip_no_cuda]

TOL = {genesis.float16: 2e-3, genesis.bfloat16: 1.6e-2, genesis.float32: 2e-3}  # float32: TF32


@pytest.fixture
def mm(monkeypatch, tmp_path):
    """The matmul module with the Hopper kernel forced, untimed, on a fresh cache."""
    from genesis.backends.cuda.kernels import matmul as mm
    from genesis.backends.cuda.kernels import matmul_hopper as mh
    if not mh.is_hopper(0):
        pytest.skip("needs an sm_90 GPU (H100/H200)")
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "hopper")
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    return mm


def use_config(monkeypatch, config):
    from genesis.backends.cuda.kernels import matmul_hopper as mh
    monkeypatch.setattr(mh, "config_space", lambda p: [config] if mh.supports(p) else [])
    monkeypatch.setattr(mh, "split_k_space", lambda p: [])


def kernels_of(fn):
    from genesis.cuda.profiler import GPUProfiler
    with GPUProfiler() as prof:
        fn()
    return list(prof.get_stats())


def operand(shape, dtype, rng, transposed=False):
    """(genesis cuda tensor, float64 torch tensor of its rounded values); `transposed`: stored
    as the transpose (unit row stride)."""
    host = genesis.tensor(rng.uniform(-2, 2, shape), dtype=dtype)
    ref = torch.from_numpy(host.to(genesis.float64).numpy())
    g = host.to("cuda")
    return (g.mT.contiguous().mT if transposed else g), ref


def check(out, ref, scale, dtype):
    got = out.cpu().to(genesis.float64).numpy()
    err = np.abs(got - ref.numpy())
    bound = TOL[dtype] * scale.numpy() + 1e-30
    assert np.all(err <= bound), f"max err/scale {np.max(err / (scale.numpy() + 1e-30)):.3g}"


# GPT-2's products at sizes no tile divides: x @ W^T (W read transposed), dX = dY @ W, and
# dW = dY^T @ X (dY read transposed).
LAYOUTS = {"x@W^T": (False, True), "dY@W": (False, False), "dY^T@X": (True, False)}


def _space(dtype):
    from genesis.backends.cuda.kernels import matmul_hopper as mh
    return mh._TF32_SPACE if dtype is genesis.float32 else mh._HALF_SPACE


@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16, genesis.float32], ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("index", range(12))
def test_every_config_in_every_layout(mm, monkeypatch, dtype, layout, index, rng):
    space = _space(dtype)
    if index >= len(space):
        pytest.skip("no such config")
    use_config(monkeypatch, space[index])
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", dtype is genesis.float32)
    a_t, b_t = LAYOUTS[layout]
    (a, ra), (b, rb) = (operand((1000, 264), dtype, rng, a_t),
                        operand((264, 776), dtype, rng, b_t))
    assert any("_matmul_tma_kernel" in n for n in kernels_of(lambda: a @ b))
    check(a @ b, ra @ rb, ra.abs() @ rb.abs(), dtype)


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=str)
@pytest.mark.parametrize("specialized", [False, True])
def test_linear_bias_and_activation_epilogue(mm, monkeypatch, specialized, dtype, activation,
                                             rng):
    """act(x @ W^T + b) and x @ W^T + b from one launch, as F.linear's fused path asks, by the
    first config and by a warp-specialized one."""
    from genesis.ops.common import wrap
    use_config(monkeypatch, next(c for c in _space(dtype) if c["WARP_SPECIALIZE"] == specialized))
    (x, rx), (w, rw), (bias, rbias) = (operand(s, dtype, rng) for s in ((4, 250, 768),
                                                                        (776, 768), (776,)))
    y, z = mm.linear_act(x._data, w._data, bias._data, activation, True)
    assert any("_matmul_tma_kernel" in n
               for n in kernels_of(lambda: mm.linear_act(x._data, w._data, bias._data,
                                                         activation, True)))
    zr = rx @ rw.mT + rbias
    scale = rx.abs() @ rw.abs().mT + rbias.abs()
    act = {"relu": TF.relu, "gelu": TF.gelu, "silu": TF.silu,
           "gelu_tanh": lambda t: TF.gelu(t, approximate="tanh")}[activation]
    check(wrap(z, x.device), zr, scale, dtype)
    check(wrap(y, x.device), act(zr), scale, dtype)


def _split_space(dtype):
    from genesis.backends.cuda.kernels import matmul_hopper as mh
    return mh._TF32_SPLIT_SPACE if dtype is genesis.float32 else mh._HALF_SPLIT_SPACE


@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16, genesis.float32], ids=str)
@pytest.mark.parametrize("index", range(8))
def test_split_k_configs(mm, monkeypatch, dtype, index, rng):
    """Split products against float64: a weight gradient dY^T @ X (696 x 264 from 2100 rows: 18
    tiles, each cut into 2-4 K ranges, or 4 by a tail config, the partials summed by a second
    kernel); with a tail config a 1528 x 1528 product (144 tiles: 132 whole, 12 cut in 5 ranges
    of K = 2600, 10 in TF32); and
    through F.linear's epilogue (bias, GELU and the kept value) a long-K product. Sizes whose
    strides TMA can read."""
    from genesis.ops.common import wrap
    space = _split_space(dtype)
    if index >= len(space):
        pytest.skip("no such config")
    use_config(monkeypatch, space[index])
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", dtype is genesis.float32)
    shapes = [((696, 2100), (2100, 264))]
    if space[index]["SPLIT_K"] == 0:
        shapes.append(((1528, 2600), (2600, 1528)))
    for a_shape, b_shape in shapes:
        (a, ra), (b, rb) = operand(a_shape, dtype, rng, True), operand(b_shape, dtype, rng)
        names = kernels_of(lambda: a @ b)
        assert any("_matmul_tma_kernel" in n for n in names)
        assert any("_sum_partials_kernel" in n for n in names)
        check(a @ b, ra @ rb, ra.abs() @ rb.abs(), dtype)
    if dtype is genesis.float32:
        return
    (x, rx), (w, rw), (bias, rbias) = (operand(s, dtype, rng) for s in ((200, 2112),
                                                                        (264, 2112), (264,)))
    y, z = mm.linear_act(x._data, w._data, bias._data, "gelu", True)
    zr = rx @ rw.mT + rbias
    scale = rx.abs() @ rw.abs().mT + rbias.abs()
    check(wrap(z, x.device), zr, scale, dtype)
    check(wrap(y, x.device), TF.gelu(zr), scale, dtype)


def test_graph_capture_replays_the_hopper_kernel(mm, rng):
    """Its descriptors live in the graph's scratch: replays see new inputs and equal eager."""
    dtype = genesis.bfloat16
    (x, _), (w, _) = (operand(s, dtype, rng) for s in ((512, 768), (2304, 768)))

    def fn():
        return x @ w.mT

    warm_up_on_side_stream(fn)  # tuned first: the profile then sees the chosen kernel alone
    assert any("_matmul_tma_kernel" in n for n in kernels_of(fn))
    assert_replays_as_eager(fn, lambda: x.copy_(operand((512, 768), dtype, rng)[0]))


def test_products_tma_cannot_read_run_the_tiles(mm, rng):
    dtype = genesis.bfloat16
    for shapes in [((300, 257), (257, 130)), ((2, 64, 64), (2, 64, 64))]:
        (a, ra), (b, rb) = (operand(s, dtype, rng) for s in shapes)
        names = kernels_of(lambda: a @ b)
        assert not any("_matmul_tma_kernel" in n for n in names), names
        check(a @ b, ra @ rb, ra.abs() @ rb.abs(), dtype)


def test_auto_times_it_beside_the_others(monkeypatch, tmp_path, rng):
    """Left to the dispatcher, a GPT-2 product times the Hopper kernel with the tiles and
    cuBLASLt, and its result is right whichever wins."""
    from genesis.backends.cuda.kernels import matmul as mm
    from genesis.backends.cuda.kernels import matmul_hopper as mh
    if not mh.is_hopper(0):
        pytest.skip("needs an sm_90 GPU (H100/H200)")
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "2")
    monkeypatch.delenv("GENESIS_MATMUL_BACKEND", raising=False)
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    monkeypatch.setattr(mm, "_tuner", mm.AutoTuner("matmul"))
    timed = []
    launch = mm._launch
    monkeypatch.setattr(mm, "_launch", lambda p, s, **c: (timed.append(c.get("backend")),
                                                          launch(p, s, **c)))
    dtype = genesis.bfloat16
    (x, rx), (w, rw) = (operand(s, dtype, rng) for s in ((8192, 768), (768, 768)))
    check(x @ w.mT, rx @ rw.mT, rx.abs() @ rw.abs().mT, dtype)
    assert "hopper" in timed
