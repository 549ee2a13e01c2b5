"""matmul, F.linear (fused bias and activation epilogues) and einsum on "cuda" against a float64
reference computed by PyTorch on the CPU, for every dtype, layout and odd shape; the Triton and
cuBLASLt paths, the TF32 flag, autotuning with its disk cache, and gradients.

Error bound: each output element may differ from the float64 product of the (already rounded)
inputs by `tol * sum_k |a_ik| |b_kj|` (the scale of the products it sums), with `tol` set by
the precision: a few units of the output's rounding for float16/bfloat16/float32, 2^-10 for
TF32 inputs. Strict float32 must stay within 1e-5 of that scale, which TF32 does not.
"""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import skip_no_cuda, torch_act

import genesis
import genesis.nn.functional as F

pytestmark = [skip_no_cuda]

FLOATS = [genesis.float32, genesis.float16, genesis.bfloat16, genesis.float64]
INTS = [genesis.int8, genesis.uint8, genesis.int16, genesis.int32, genesis.int64]
TOL = {genesis.float32: 1e-5, genesis.float16: 2e-3, genesis.bfloat16: 1.6e-2,
       genesis.float64: 1e-12}
TF32_TOL = 2e-3


@pytest.fixture(autouse=True)
def _strict_and_default_backend(monkeypatch):
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.delenv("GENESIS_MATMUL_BACKEND", raising=False)


def values(shape, dtype, rng):
    if dtype.is_floating_point:
        return rng.uniform(-2, 2, shape)
    return rng.integers(0 if dtype is genesis.uint8 else -8, 8, shape)


def operand(arr, dtype, layout="contiguous"):
    """(genesis cuda tensor laid out as asked, float64/int64 torch reference of its values)."""
    host = genesis.tensor(arr, dtype=dtype)
    wide = genesis.float64 if dtype.is_floating_point else genesis.int64
    ref = torch.from_numpy(host.to(wide).numpy())
    g = host.to("cuda")
    if layout == "transposed" and g.ndim >= 2:
        g = g.mT.contiguous().mT
    elif layout == "stepped" and g.ndim:
        big = genesis.zeros(tuple(g.shape[:-1]) + (2 * g.shape[-1],), dtype=dtype, device="cuda")
        big[..., ::2] = g
        g = big[..., ::2]
    elif layout == "expanded" and g.ndim >= 2:
        g = g[..., :1, :].expand(*g.shape)
        ref = ref[..., :1, :].expand(*ref.shape)
    return g, ref


def check_product(out, ref, scale, dtype, tol=None):
    """`out` (genesis) within tol * scale of the float64 `ref` (integers: equal, wrapped)."""
    assert out.device.type == "cuda" and out.dtype is dtype
    assert tuple(out.shape) == tuple(ref.shape)
    host = out.cpu()
    if not dtype.is_floating_point:
        expected = ref.numpy().astype(host.numpy().dtype)
        np.testing.assert_array_equal(host.numpy(), expected)
        return
    got = host.float().numpy().astype(np.float64) if dtype is genesis.bfloat16 \
        else host.numpy().astype(np.float64)
    bound = (TOL[dtype] if tol is None else tol) * scale.numpy() + 1e-30
    err = np.abs(got - ref.numpy())
    assert np.all(err <= bound), f"max err/scale {np.max(err / (scale.numpy() + 1e-30)):.3g}"


def reference(a, b):
    """(a @ b, |a| @ |b|) in float64 (int64 for integers)."""
    return torch.matmul(a, b), torch.matmul(a.abs(), b.abs())


SHAPES = [((1, 1), (1, 1)), ((17, 33), (33, 65)), ((128, 64), (64, 96)), ((5, 0), (0, 7)),
          ((0, 4), (4, 3)), ((3, 4), (4, 0)), ((33,), (33, 20)), ((20, 33), (33,)), ((9,), (9,)),
          ((2, 3, 19, 21), (21, 18)), ((4, 1, 7, 9), (3, 9, 5)), ((2, 9), (3, 9, 4)),
          ((2, 3, 2, 3, 5, 7), (2, 1, 2, 1, 7, 6)), ((300, 257), (257, 130))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul_shapes_and_dtypes(shapes, dtype, rng):
    (a, ra), (b, rb) = (operand(values(s, dtype, rng), dtype) for s in shapes)
    check_product(genesis.matmul(a, b), *reference(ra, rb), dtype)


@pytest.mark.parametrize("shapes", [SHAPES[1], SHAPES[3], SHAPES[8], SHAPES[11], SHAPES[13]],
                         ids=str)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_matmul_integers(shapes, dtype, rng):
    """Integer products wrap in their own type, as PyTorch's."""
    (a, ra), (b, rb) = (operand(values(s, dtype, rng), dtype) for s in shapes)
    check_product(genesis.matmul(a, b), *reference(ra, rb), dtype)


@pytest.mark.parametrize("layout_a", ["contiguous", "transposed", "stepped", "expanded"])
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_matmul_layouts(layout_a, layout_b, dtype, rng):
    a, ra = operand(values((3, 40, 72), dtype, rng), dtype, layout_a)
    b, rb = operand(values((3, 72, 48), dtype, rng), dtype, layout_b)
    check_product(a @ b, *reference(ra, rb), dtype)


def test_matmul_mm_bmm_mv_dot(rng):
    dtype = genesis.float32
    (a, ra), (b, rb) = operand(values((6, 5), dtype, rng), dtype), \
        operand(values((5, 4), dtype, rng), dtype)
    check_product(genesis.mm(a, b), *reference(ra, rb), dtype)
    (x, rx), (y, ry) = operand(values((3, 6, 5), dtype, rng), dtype), \
        operand(values((3, 5, 2), dtype, rng), dtype)
    check_product(genesis.bmm(x, y), *reference(rx, ry), dtype)
    v, rv = operand(values((5,), dtype, rng), dtype)
    check_product(genesis.mv(a, v), *reference(ra, rv), dtype)
    check_product(genesis.dot(v, v), *reference(rv, rv), dtype)


@pytest.mark.parametrize("k", [1, 64, 1000])
def test_tf32_flag(monkeypatch, k, rng):
    (a, ra), (b, rb) = (operand(values(s, genesis.float32, rng), genesis.float32)
                        for s in ((96, k), (k, 80)))
    ref, scale = reference(ra, rb)
    strict = a @ b
    check_product(strict, ref, scale, genesis.float32)
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", True)
    fast = a @ b
    check_product(fast, ref, scale, genesis.float32, TF32_TOL)
    if k >= 64:
        assert not np.array_equal(fast.cpu().numpy(), strict.cpu().numpy()), \
            "allow_tf32 had no effect"


def _has_cublaslt():
    from genesis.backends.cuda import libraries
    return libraries.has_cublaslt()


needs_cublaslt = pytest.mark.skipif(not _has_cublaslt(), reason="needs nvmath-python (cublas)")


@needs_cublaslt
@pytest.mark.parametrize("backend", ["cublaslt", "triton"])
@pytest.mark.parametrize("shapes", [((64, 32), (32, 48)), ((4, 33, 17), (4, 17, 9)),
                                    ((2, 5, 40), (40, 24)), ((7,), (7, 5))], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16], ids=str)
def test_forced_backends(monkeypatch, backend, shapes, layout, dtype, rng):
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", backend)
    (a, ra), (b, rb) = (operand(values(s, dtype, rng), dtype, layout) for s in shapes)
    check_product(a @ b, *reference(ra, rb), dtype)


@pytest.mark.parametrize("backend", ["auto", "cublaslt", "triton"])
@pytest.mark.parametrize("rows", [384, 37])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16], ids=str)
def test_weight_gradient_with_fused_bias_gradient(monkeypatch, backend, rows, dtype, rng):
    """linear's backward without a graph: dW = g^T x and db = g summed over rows from one
    product (cuBLASLt's BGRADB epilogue, or the Triton kernel's row sums)."""
    if backend == "cublaslt" and not _has_cublaslt():
        pytest.skip("needs nvmath-python (cublas)")
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", backend)
    (g, rg), (x, rx) = (operand(values((rows, n), dtype, rng), dtype) for n in (320, 256))
    w, _ = operand(values((320, 256), dtype, rng), dtype)
    from genesis.backends.cuda.kernels import matmul as mm
    from genesis.ops.common import wrap
    dx, dw, db = mm.linear_act_backward(g._data, x._data, w._data, False, True, True)
    dw, db = wrap(dw, g.device), wrap(db, g.device)
    assert dx is None
    check_product(dw, *reference(rg.mT, rx), dtype)
    check_product(db, rg.sum(0), rg.abs().sum(0), dtype)


@needs_cublaslt
@pytest.mark.parametrize("backend", ["cublaslt", "triton"])
def test_backend_visible_in_profiler(monkeypatch, backend, rng):
    from genesis.cuda.profiler import GPUProfiler
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", backend)
    a, _ = operand(values((64, 64), genesis.float16, rng), genesis.float16)
    a @ a
    with GPUProfiler() as prof:
        a @ a
    names = list(prof.get_stats())
    lt = any(n == "cublaslt.matmul" for n in names)
    tri = any("_matmul_kernel" in n for n in names)
    assert (lt, tri) == (backend == "cublaslt", backend == "triton"), names


def test_autotune_writes_disk_cache(monkeypatch, tmp_path, rng):
    from genesis.backends.cuda.kernels import matmul as mm
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "3")
    monkeypatch.setattr(mm, "_chosen", {})
    monkeypatch.setattr(mm, "_fast", {})
    monkeypatch.setattr(mm, "_tuner", mm.AutoTuner("matmul"))
    dtype = genesis.bfloat16
    (a, ra), (b, rb) = (operand(values(s, dtype, rng), dtype) for s in ((512, 520), (520, 512)))
    check_product(a @ b, *reference(ra, rb), dtype)
    stored = json.loads((tmp_path / "autotune" / "matmul.json").read_text())["entries"]
    assert len(stored) == 1
    (entry,) = stored.values()
    assert entry["ms"] > 0 and entry["config"]
    check_product(a @ b, *reference(ra, rb), dtype)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((2, 5, 7), (7, 3)), ((2, 1, 4, 6),
                                                                             (3, 6, 2)),
                                    ((6,), (6, 4)), ((4, 6), (6,)), ((6,), (6,))], ids=str)
def test_matmul_gradients(dtype, shapes, rng):
    arrays = [values(s, dtype, rng) for s in shapes]
    ga = [genesis.tensor(x, dtype=dtype, device="cuda", requires_grad=True) for x in arrays]
    ta = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in arrays]
    out = genesis.matmul(*ga)
    tout = torch.matmul(*ta)
    gout = rng.uniform(-1, 1, tuple(tout.shape))
    out.backward(genesis.tensor(gout, dtype=dtype, device="cuda"))
    tout.backward(torch.tensor(gout))
    for g, t in zip(ga, ta):
        np.testing.assert_allclose(g.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]


EPILOGUES = ([(genesis.float32, a) for a in ACTS] + [(genesis.bfloat16, a) for a in ACTS]
             + [(genesis.float16, None), (genesis.float16, "gelu_tanh"), (genesis.float64, None),
                (genesis.float64, "gelu")])


@pytest.mark.parametrize("dtype,activation", EPILOGUES, ids=str)
@pytest.mark.parametrize("shape", [(7,), (5, 37), (2, 9, 37)], ids=str)
def test_linear_activation_forward(dtype, activation, shape, rng):
    from genesis.nn.functional.linear import linear_activation
    (x, rx), (w, rw), (b, rb) = (operand(values(s, dtype, rng), dtype)
                                 for s in (shape, (23, shape[-1]), (23,)))
    out = linear_activation(x, w, b, activation) if activation else F.linear(x, w, b)
    z = TF.linear(rx, rw, rb)
    scale = torch.matmul(rx.abs(), rw.abs().mT) + rb.abs()
    # the activations' slopes are at most 1.13 (gelu): the bound carries over with that factor
    check_product(out, torch_act(z, activation), 1.2 * scale, dtype)


@pytest.mark.parametrize("activation", ACTS, ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradients(activation, with_bias, rng):
    from genesis.nn.functional.linear import linear_activation
    arrays = [rng.uniform(-2, 2, s) for s in ((2, 5, 7), (4, 7), (4,))]
    if not with_bias:
        arrays = arrays[:2]
    ga = [genesis.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    ta = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = linear_activation(*ga, activation=activation) if len(ga) == 3 \
        else linear_activation(ga[0], ga[1], None, activation)
    expected = torch_act(TF.linear(*ta), activation)
    g = rng.uniform(-1, 1, tuple(expected.shape))
    out.backward(genesis.tensor(g, device="cuda"))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-10)
    for a, t in zip(ga, ta):
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(5, 2, 7), (7,)], ids=str)
def test_linear_gradients_of_views_without_bias_grad(shape, rng):
    """The backward's one-call path: an input whose batch dims do not merge (a transposed
    view: its rows are copied first) or a vector, a bias that needs no gradient."""
    arrays = [rng.uniform(-2, 2, s) for s in (shape, (4, 7), (4,))]
    (gx, gw), (tx, tw) = ([lib.tensor(a, **kw, requires_grad=True) for a in arrays[:2]]
                          for lib, kw in ((genesis, {"device": "cuda"}), (torch, {})))
    gb, tb = genesis.tensor(arrays[2], device="cuda"), torch.tensor(arrays[2])
    view = (lambda t: t.transpose(0, 1)) if len(shape) == 3 else (lambda t: t)
    out, expected = F.linear(view(gx), gw, gb), TF.linear(view(tx), tw, tb)
    g = rng.uniform(-1, 1, tuple(expected.shape))
    out.backward(genesis.tensor(g, device="cuda"))
    expected.backward(torch.tensor(g))
    for a, t in ((gx, tx), (gw, tw)):
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert gb.grad is None


def test_linear_double_backward(rng):
    from genesis.nn.functional.linear import linear_activation
    x = genesis.tensor(rng.uniform(-2, 2, (3, 5)), device="cuda", requires_grad=True)
    w = genesis.tensor(rng.uniform(-1, 1, (4, 5)), device="cuda", requires_grad=True)
    b = genesis.tensor(rng.uniform(-1, 1, (4,)), device="cuda", requires_grad=True)
    assert genesis.autograd.gradgradcheck(lambda x, w, b: linear_activation(x, w, b, "gelu"),
                                          (x, w, b))


def test_nn_linear_on_cuda(rng):
    layer = genesis.nn.Linear(16, 8).to("cuda")
    ref = torch.nn.Linear(16, 8).double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.weight.detach().cpu().numpy().astype(np.float64)))
        ref.bias.copy_(torch.from_numpy(layer.bias.detach().cpu().numpy().astype(np.float64)))
    x = rng.uniform(-1, 1, (4, 16))
    out = layer(genesis.tensor(x, dtype=genesis.float32, device="cuda"))
    expected = ref(torch.from_numpy(x.astype(np.float32).astype(np.float64)))
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    out.sum().backward()
    assert layer.weight.grad.device.type == "cuda"


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
           ("ii->i", [(4, 4)]), ("i,j->ij", [(3,), (4,)]),
           ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]), ("...ij,...jk", [(2, 3, 4), (4, 5)])]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_on_cuda(equation, shapes, rng):
    arrays = [rng.uniform(-2, 2, s) for s in shapes]
    ga = [genesis.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    ta = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = genesis.einsum(equation, *ga)
    expected = torch.einsum(equation, *ta)
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-10)
    g = rng.uniform(-1, 1, tuple(expected.shape))
    out.backward(genesis.tensor(g, device="cuda"))
    expected.backward(torch.tensor(g))
    for a, t in zip(ga, ta):
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
