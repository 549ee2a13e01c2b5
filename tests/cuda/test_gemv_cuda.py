"""The skinny-product kernel (kernels/gemv.py) on the GPU against a float64 reference computed
by PyTorch on the CPU: the projections of a 1.1B Llama's decoding step (bf16, 1 to 16 rows)
through F.linear, every config of gemv's space, bias and activation epilogues in each dtype,
b contiguous along N, reproducible split sums, CUDA graph capture and the tuned dispatch.

Error bound as tests/cuda/test_matmul_cuda.py: each element within `tol * sum_k |x_ik w_jk|`
(+ |bias|) of the float64 result, `tol` a few rounding units of the output dtype.
"""

import json

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_replays_as_eager, skip_no_cuda, torch_act

import genesis
import genesis.nn.functional as F
from genesis.nn.functional.linear import linear_activation

pytestmark = [skip_no_cuda]

TOL = {genesis.float32: 1e-5, genesis.float16: 2e-3, genesis.bfloat16: 1.6e-2}
TF32_TOL = 2e-3
# (name, N, K) of the projections of a 1.1B Llama (hidden 2048, 8 of 32 heads for K and V,
# intermediate 8192, vocabulary 32000), gate and up fused.
DECODE = [("qkv", 3072, 2048), ("o_proj", 2048, 2048), ("gate_up", 16384, 2048),
          ("down", 2048, 8192), ("lm_head", 32000, 2048)]


@pytest.fixture(autouse=True)
def _untimed(monkeypatch):
    """Strict float32, the default backend, no timing (each test says otherwise), and no
    launch kept from an earlier test."""
    from genesis.backends.cuda.kernels import matmul as mm
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.delenv("GENESIS_MATMUL_BACKEND", raising=False)
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})


def operand(shape, dtype, rng, scale=1.0):
    """(genesis cuda tensor, float64 torch tensor of its rounded values)."""
    host = genesis.tensor(rng.uniform(-scale, scale, shape), dtype=dtype)
    return host.to("cuda"), torch.from_numpy(host.to(genesis.float64).numpy())


def check(out, ref, scale, dtype, tol=None):
    assert out.device.type == "cuda" and out.dtype is dtype
    assert tuple(out.shape) == tuple(ref.shape)
    got = out.cpu().to(genesis.float64).numpy()
    bound = (TOL[dtype] if tol is None else tol) * scale.numpy() + 1e-30
    err = np.abs(got - ref.numpy())
    assert np.all(err <= bound), f"max err/scale {np.max(err / (scale.numpy() + 1e-30)):.3g}"


def linear_case(m, n, k, dtype, rng, bias=False, activation=None, tol=None):
    """linear_activation of an (m, k) input and (n, k) weight against torch in float64."""
    (x, rx), (w, rw) = operand((m, k), dtype, rng), operand((n, k), dtype, rng, k ** -0.5)
    b, rb = operand((n,), dtype, rng) if bias else (None, None)
    out = linear_activation(x, w, b, activation)
    z = TF.linear(rx, rw, rb)
    scale = TF.linear(rx.abs(), rw.abs(), None if rb is None else rb.abs())
    check(out, torch_act(z, activation), scale + torch_act(z, activation).abs(), dtype, tol)
    return x, w, b, out


def gemv_ran(fn):
    """True when the profiler saw gemv's kernel run `fn`."""
    from genesis.cuda.profiler import GPUProfiler
    with GPUProfiler() as prof:
        fn()
    return any("_gemv_kernel" in name for name in prof.get_stats())


@pytest.mark.parametrize("m", [1, 2, 7, 16])
@pytest.mark.parametrize("name,n,k", DECODE, ids=[d[0] for d in DECODE])
def test_decode_shapes(name, n, k, m, rng):
    x, w, _, _ = linear_case(m, n, k, genesis.bfloat16, rng, bias=name == "qkv")
    assert gemv_ran(lambda: F.linear(x, w))


def _space(m, n, k, dtype, k_major=True):
    """gemv's configs for an (m, k) @ (k, n) product, b contiguous along K or N."""
    from genesis.backends.cuda.kernels import gemv
    from genesis.backends.cuda.kernels import matmul as mm
    from genesis.backends.cuda.kernels._strided_indexing import placeholder
    b_strides = (1, k) if k_major else (n, 1)
    arrays = {"a": placeholder((m, k), dtype), "b": placeholder((k, n), dtype, b_strides),
              "c": placeholder((m, n), dtype)}
    problem = mm.Problem(m, n, k, (), {"a": (k, 1), "b": b_strides, "c": (n, 1)}, arrays)
    return gemv.config_space(problem)


@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("name,n,k", [DECODE[1], DECODE[3], DECODE[4]],
                         ids=["o_proj", "down", "lm_head"])
def test_every_config(monkeypatch, name, n, k, m, rng):
    """Each config of the space (split or not, FMA or DOT) on decode shapes."""
    from genesis.backends.cuda.kernels import matmul as mm
    dtype = genesis.bfloat16
    for config in _space(m, n, k, np.dtype(ml_dtypes.bfloat16)):
        monkeypatch.setattr(mm, "_plan", lambda problem, choice, c=config: ([], [c]))
        monkeypatch.setattr(mm, "_chosen", {})
        monkeypatch.setattr(mm, "_fast", {})
        linear_case(m, n, k, dtype, rng)


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float32],
                         ids=str)
@pytest.mark.parametrize("m", [1, 5])
def test_bias_and_activation(activation, dtype, m, rng):
    linear_case(m, 1000, 1536, dtype, rng, bias=True, activation=activation)


@pytest.mark.parametrize("m", [1, 16])
def test_float32_precision_flag(monkeypatch, m, rng):
    """Strict float32 within 1e-5; with allow_tf32 (tl.dot then rounds to TF32) within TF32's
    bound."""
    linear_case(m, 2048, 2048, genesis.float32, rng)
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", True)
    linear_case(m, 2048, 2048, genesis.float32, rng, tol=TF32_TOL)


@pytest.mark.parametrize("m", [1, 16])
def test_b_contiguous_along_n(m, rng):
    """x @ W with W (K, N) row-major."""
    dtype = genesis.bfloat16
    (x, rx), (w, rw) = operand((m, 4096), dtype, rng), operand((4096, 2048), dtype, rng, 1 / 64)
    check(x @ w, rx @ rw, rx.abs() @ rw.abs(), dtype)
    assert gemv_ran(lambda: x @ w)


@pytest.mark.parametrize("m", [1, 16])
def test_split_sums_are_reproducible(m, rng):
    """o_proj splits K (128 column blocks under the 1024 programs aimed at): repeated calls give
    the same bits."""
    (x, _), (w, _) = operand((m, 2048), genesis.bfloat16, rng), \
        operand((2048, 2048), genesis.bfloat16, rng, 1 / 45)
    first = F.linear(x, w).cpu().numpy()
    for _ in range(5):
        assert np.array_equal(F.linear(x, w).cpu().numpy(), first)


def test_graph_replay_equals_eager(rng):
    """A decode step's products (split and not) captured in a CUDA graph: replays give the
    eager bits and see new inputs."""
    dtype = genesis.bfloat16
    (x, _), (w_o, _), (w_up, _), (w_down, _) = (
        operand(s, dtype, rng, 1 / 45) for s in ((1, 2048), (2048, 2048), (16384, 2048),
                                                 (2048, 8192)))

    def step():
        h = F.linear(x, w_o)
        up = F.linear(h, w_up)
        return F.linear(up[:, :8192] * up[:, 8192:], w_down)

    assert_replays_as_eager(step, lambda: x.copy_(operand((1, 2048), dtype, rng)[0]))


def test_tuned_dispatch(monkeypatch, tmp_path, rng):
    """With timing on, a skinny product is tuned under a "gemv" key (gemv configs, cuBLASLt and
    short Triton tiles timed), the winner stored, the result right."""
    from genesis.backends.cuda.kernels import matmul as mm
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "1")
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "3")
    monkeypatch.setattr(mm, "_tuner", mm.AutoTuner("matmul"))
    linear_case(1, 2048, 2048, genesis.bfloat16, rng)
    stored = json.loads((tmp_path / "autotune" / "matmul.json").read_text())["entries"]
    (key, entry), = stored.items()
    assert json.loads(key)[-1] == "gemv" and entry["ms"] > 0
    linear_case(1, 2048, 2048, genesis.bfloat16, rng)


@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("tuned", [False, True], ids=["untimed", "tuned"])
def test_gated_down_projection(monkeypatch, tmp_path, m, tuned, rng):
    """SwiGLU's gate inside the down projection (models/fused.py silu_gate_down, no gradients,
    here for up to 16 rows): a 1.1B Llama's decode shape against silu(gate) * up rounded to
    bf16, then the float64 product; every config of the gated space when timed."""
    from genesis.backends.cuda.kernels import matmul as mm
    from genesis.models import fused
    from genesis.models.fused import silu_gate_down
    monkeypatch.setattr(fused, "FUSED_GATE_ROWS", 16)
    if tuned:
        monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "1")
        monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(mm, "_tuner", mm.AutoTuner("matmul"))
    dtype = genesis.bfloat16
    (gate_up, r_gate_up), (w, rw) = operand((m, 2 * 5632), dtype, rng, 3.0), \
        operand((2048, 5632), dtype, rng, 5632 ** -0.5)
    down = genesis.nn.Linear(5632, 2048, bias=False, device="cuda", dtype=dtype)
    down.weight.data.copy_(w)
    with genesis.no_grad():
        out = silu_gate_down(gate_up, down)
    gate, up = r_gate_up.chunk(2, -1)
    a = (TF.silu(gate) * up).to(torch.bfloat16).double()
    check(out, TF.linear(a, rw), TF.linear(a.abs(), rw.abs()), dtype)
    from genesis.cuda.profiler import GPUProfiler
    with genesis.no_grad(), GPUProfiler() as prof:
        silu_gate_down(gate_up, down)
    names = list(prof.get_stats())
    assert len(names) == 1 and "silu_mul" not in names[0], names
    assert tuned or "_gemv_kernel" in names[0], names
