"""The core ops on "cuda" (the Triton kernels) against PyTorch on the CPU.

Every dtype an op takes, broadcast and non-contiguous operands (transposed, stepped, expanded),
Python scalars, odd sizes that are not multiples of any block size, 0-d and empty tensors,
in-place forms, reductions over any dims, softmax, LayerNorm/RMSNorm and gradients through them.
Each (op, dtype, layout) compiles its own kernel on first use (cached under
GENESIS_KERNEL_CACHE_DIR), so the matrix sweeps dtypes where the kernels differ: float ops over
the float dtypes (integer inputs are cast to float32 first), integer ops over the integers.

Skipped without a GPU. GENESIS_OPS_TEST_DEVICE=cpu runs the same cases on the CPU backend, to
check the tests themselves without a GPU (a few float32 reduction and log_softmax cases fail
there: numpy sums along non-contiguous axes one element after another, less accurately than
the float64 reference allows).
"""

import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, lay_out, skip_no_cuda,
                     to_torch)

import genesis
import genesis.nn.functional as F

DEVICE = os.environ.get("GENESIS_OPS_TEST_DEVICE", "cuda")
pytestmark = [skip_no_cuda] if DEVICE == "cuda" else []

LAYOUTS = ["contiguous", "transposed", "stepped", "expanded"]


def values(shape, dtype, rng, low=-3.0, high=3.0, nonzero=False):
    """Random numpy values for `dtype` (float64 for floats)."""
    if dtype is genesis.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        return rng.uniform(low, high, shape)
    arr = rng.integers(0 if dtype is genesis.uint8 else -6, 7, shape)
    if nonzero:
        arr[arr == 0] = 1
    return arr


def pair(arr, dtype, layout="contiguous"):
    """(genesis tensor on DEVICE laid out as `layout`, torch CPU tensor) with `arr`'s values."""
    host = genesis.tensor(arr, dtype=dtype)
    if dtype is genesis.bfloat16:
        bits = np.array(host.numpy(), order="C").view(np.int16)
        expected = torch.from_numpy(bits).view(torch.bfloat16)
    else:
        expected = to_torch(host)
    g = lay_out(host.to(DEVICE), layout)
    if layout == "expanded" and g.ndim and g.numel():
        expected = expected.reshape(-1)[: g.shape[-1]].expand(*g.shape)
    return g, expected


def check(fn_g, fn_t, *args, **tolerances):
    """Run both; torch's rejection must be mirrored by the same exception type."""
    def pick(i):
        return [a[i] if isinstance(a, tuple) else a for a in args]
    try:
        want = fn_t(*pick(1))
    except Exception as exc:  # noqa: BLE001  (any torch rejection must be mirrored)
        with pytest.raises(type(exc)):
            fn_g(*pick(0))
        return None
    got = fn_g(*pick(0))
    if isinstance(want, torch.Tensor):
        assert got.device.type == DEVICE
        assert_close(got, want, **tolerances)
    return got


UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "sigmoid", "relu", "erf", "erfc", "reciprocal", "square", "floor", "ceil",
         "trunc", "frac", "sign", "sgn", "round", "nan_to_num", "isnan", "isinf", "isfinite",
         "signbit", "logical_not", "bitwise_not"]
ACTIVATIONS = ["gelu", "silu", "softplus", "logsigmoid", "hardtanh", "relu6", "leaky_relu", "elu",
               "selu", "celu", "mish", "hardsigmoid", "hardswish", "softsign"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 1e-8, 30.0, -30.0, 100.0, -100.0,
           float("inf"), float("-inf"), float("nan")]


def _fn(name, lib):
    if name in ACTIVATIONS and lib is torch:
        return getattr(TF, name)
    return getattr(lib, name)


INTEGER_UNARY = ["neg", "abs", "relu", "square", "floor", "ceil", "trunc", "sign", "round",
                 "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not", "exp",
                 "sigmoid"]
UNARY_CASES = ([(name, dtype) for name in UNARY + ACTIVATIONS for dtype in FLOAT_DTYPES]
               + [(name, dtype) for name in INTEGER_UNARY for dtype in INT_DTYPES + [genesis.bool]])


@pytest.mark.parametrize("name,dtype", UNARY_CASES, ids=str)
def test_unary(name, dtype, rng):
    arr = values((37, 29), dtype, rng)
    if dtype.is_floating_point:
        # torch's vectorized CPU gelu gives nan at +-inf (its intermediate overflows)
        special = [v for v in SPECIAL if name != "gelu" or abs(v) != float("inf")]
        arr[0, : len(special)] = special
    check(_fn(name, genesis), _fn(name, torch), pair(arr, dtype))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int32], ids=str)
@pytest.mark.parametrize("name", ["exp", "neg", "isnan", "gelu", "floor"])
def test_unary_layouts(name, dtype, layout, rng):
    check(_fn(name, genesis), _fn(name, torch), pair(values((33, 70), dtype, rng), dtype, layout))


@pytest.mark.parametrize("n", [0, 1, 1023, 1025, 2049, 4097, 100003])
def test_sizes_around_blocks(n, rng):
    for dtype in (genesis.float32, genesis.float16, genesis.int8, genesis.bool):
        a, b = pair(values((n,), dtype, rng), dtype), pair(values((n,), dtype, rng), dtype)
        check(genesis.maximum, torch.maximum, a, b)
    a = pair(values((), genesis.float32, rng), genesis.float32)
    check(genesis.exp, torch.exp, a)


BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum",
          "minimum", "fmax", "fmin", "atan2", "hypot", "logaddexp", "xlogy", "copysign",
          "heaviside", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
          "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
          "bitwise_right_shift"]
DIVISORS = ("div", "floor_divide", "remainder", "fmod")


def _binary_values(name, dtype, shape, rng, role):
    arr = values(shape, dtype, rng, nonzero=role == 1 and name in DIVISORS)
    if role == 1 and name in ("pow", "bitwise_left_shift", "bitwise_right_shift") \
            and not dtype.is_floating_point and dtype is not genesis.bool:
        arr = np.abs(arr) % 5
    return arr


FLOAT_BINARY = ["atan2", "hypot", "logaddexp", "xlogy", "copysign", "fmax", "fmin", "heaviside"]
INTEGER_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                  "bitwise_right_shift"]
BINARY_CASES = ([(name, dtype) for name in BINARY for dtype in ALL_DTYPES
                 if name not in FLOAT_BINARY + INTEGER_BINARY]
                + [(name, dtype) for name in FLOAT_BINARY
                   for dtype in FLOAT_DTYPES + [genesis.int32]]
                + [(name, dtype) for name in INTEGER_BINARY
                   for dtype in INT_DTYPES + [genesis.bool, genesis.float32]])


@pytest.mark.parametrize("name,dtype", BINARY_CASES, ids=str)
def test_binary(name, dtype, rng):
    a = pair(_binary_values(name, dtype, (17, 31), rng, 0), dtype)
    b = pair(_binary_values(name, dtype, (17, 31), rng, 1), dtype)
    check(getattr(genesis, name), getattr(torch, name), a, b)


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((2, 3, 1000), (1000,)), ((), (3,)),
                                    ((0, 3), (1, 3)), ((5, 1, 3), (4, 1)), ((64, 1), (64, 513))],
                         ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "div", "pow", "maximum", "lt", "atan2",
                                  "bitwise_xor"])
def test_binary_broadcasting(name, shapes, rng):
    dtype = genesis.int32 if name.startswith("bitwise") else genesis.float32
    a = pair(_binary_values(name, dtype, shapes[0], rng, 0), dtype)
    b = pair(_binary_values(name, dtype, shapes[1], rng, 1), dtype)
    check(getattr(genesis, name), getattr(torch, name), a, b)
    check(getattr(genesis, name), getattr(torch, name), b, a)


@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int16], ids=str)
def test_binary_layouts(dtype, layout_a, layout_b, rng):
    a = pair(values((9, 130), dtype, rng), dtype, layout_a)
    b = pair(values((9, 130), dtype, rng, nonzero=True), dtype, layout_b)
    for name in ("add", "mul", "remainder", "lt"):
        check(getattr(genesis, name), getattr(torch, name), a, b)


def test_broadcast_over_more_columns_than_one_grid_axis_holds(rng):
    n = (1 << 24) + 1001
    x = pair(values((n,), genesis.float32, rng), genesis.float32)
    one = pair(np.array([2.5]), genesis.float32)
    check(lambda a, b: a * b.expand(n), lambda a, b: a * b.expand(n), x, one)


def test_many_non_mergeable_dims(rng):
    """More dims than the strided kernel takes: the launcher splits the leading one."""
    base = pair(values((3,) * 7, genesis.float32, rng), genesis.float32)
    index = (slice(0, 2),) * 7
    a = base[0][index], base[1][index]
    check(lambda x: x * 2 + 1, lambda x: x * 2 + 1, a)


@pytest.mark.parametrize("scalar", [2, -3, 2.5, True, 0.1], ids=repr)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_python_scalars(dtype, scalar, rng):
    if scalar == 0.1 and dtype in (genesis.float16, genesis.bfloat16):
        pytest.skip("torch's CPU kernels round the scalar to the half type first, its CUDA "
                    "kernels (and Genesis) use it in float32")
    x = pair(values((6, 200), dtype, rng, nonzero=True), dtype)
    for fn in (lambda t, s: t + s, lambda t, s: s - t, lambda t, s: t * s, lambda t, s: t / s,
               lambda t, s: t < s, lambda t, s: t ** 2, lambda t, s: s ** t):
        check(fn, fn, x, scalar)


def test_zero_dim_cpu_tensor_with_cuda_tensor(rng):
    x = pair(values((5,), genesis.float32, rng), genesis.float32)
    s = genesis.tensor(2.5)
    check(lambda t: t * s, lambda t: t * torch.tensor(2.5), x)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float32], ids=str)
def test_division_family_halves(name, dtype, rng):
    """On the GPU against torch in float32 rounded once, as its CUDA kernels compute half types
    (its CPU kernels, which the CPU backend follows, round every step of floor_divide and
    remainder: their float16 floor can be one off)."""
    a = pair(values((64, 65), dtype, rng, -30, 30), dtype)
    b = pair(values((64, 65), dtype, rng, -0.5, 0.5), dtype)
    fn = getattr(torch, name)
    check(getattr(genesis, name), fn if DEVICE == "cpu" else
          lambda x, y: fn(x.float(), y.float()).to(x.dtype), a, b)
    check(lambda x, y: genesis.div(x, y, rounding_mode="trunc"),
          lambda x, y: torch.div(x, y, rounding_mode="trunc"), a, b)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int32], ids=str)
def test_where_clamp_lerp_addcmul(dtype, rng):
    cond = pair(values((8, 300), genesis.bool, rng), genesis.bool, "transposed")
    a, b = pair(values((8, 300), dtype, rng), dtype), pair(values((1, 300), dtype, rng), dtype)
    check(genesis.where, torch.where, cond, a, b)
    check(lambda c, x: genesis.where(c, x, 0), lambda c, x: torch.where(c, x, 0), cond, a)
    check(lambda x: genesis.clamp(x, -1, 2), lambda x: torch.clamp(x, -1, 2), a)
    check(lambda x: genesis.clamp(x, max=1), lambda x: torch.clamp(x, max=1), a)
    check(genesis.clamp, torch.clamp, a, b, a)
    if dtype.is_floating_point:
        c = pair(values((8, 300), dtype, rng), dtype)
        check(genesis.lerp, torch.lerp, a, c, b)
        check(lambda x, y: genesis.lerp(x, y, 0.3), lambda x, y: torch.lerp(x, y, 0.3), a, c)
        check(lambda x, y, z: genesis.addcdiv(x, y, z, value=0.5),
              lambda x, y, z: torch.addcdiv(x, y, z, value=0.5), a, c, b)
    check(lambda x, y, z: genesis.addcmul(x, y, z, value=2),
          lambda x, y, z: torch.addcmul(x, y, z, value=2), a, a, b)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.int64], ids=str)
def test_inplace(dtype, rng):
    base = values((40, 50), dtype, rng)
    other = values((40, 50), dtype, rng, nonzero=True)
    for op in ("add_", "mul_", "sub_", "clamp_", "neg_"):
        g, t = pair(base, dtype)
        args = [pair(other, dtype)] if op in ("add_", "mul_", "sub_") else []
        if op == "clamp_":
            args = [-1, 1]
        g_view, t_view = g[::2], t[::2]
        getattr(g_view, op)(*[a[0][::2] if isinstance(a, tuple) else a for a in args])
        getattr(t_view, op)(*[a[1][::2] if isinstance(a, tuple) else a for a in args])
        assert_close(g, t)


def _float16(t):
    """float64 `t` rounded once to float16 (torch's own cast rounds through float32, twice)."""
    return torch.from_numpy(t.numpy().astype(np.float16))


class ExactGelu(torch.autograd.Function):
    """float16 gelu whose value and gradient (PyTorch's formulas) are computed in float64 and
    rounded once: the reference for Genesis's float16 gelu, whose gradient does the same."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x = x.double()
        return _float16(x * 0.5 * (1 + torch.erf(x * math.sqrt(0.5))))

    @staticmethod
    def backward(ctx, dy):
        x = ctx.saved_tensors[0].double()
        cdf = 0.5 * (1 + torch.erf(x * math.sqrt(0.5)))
        pdf = torch.exp(x * x * -0.5) / math.sqrt(2 * math.pi)
        return _float16(dy.double() * (cdf + x * pdf))


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16], ids=str)
def test_elementwise_gradients(dtype, rng):
    """The two paths into a.grad nearly cancel, so an ulp of either float16 path breaks float16
    tolerance: every float16 rounding must fall where the reference's does. Mul, add, div, tanh
    and the broadcast sums round as PyTorch's CPU kernels (bit for bit); PyTorch's float16 gelu
    does not round the true value: it computes in float32 with a SIMD erf polynomial (error up
    to 1.5e-7) and Sleef's expf, which flips ~0.4% of forward and ~0.05% of gradient roundings
    (a.grad off beyond tolerance in ~1% of draws). Genesis computes gelu's float16 gradient in
    float64, rounded once, and is compared with that (ExactGelu)."""
    gelu = ExactGelu.apply if dtype is genesis.float16 else TF.gelu
    a, ta = pair(values((20, 30), dtype, rng), dtype)
    b, tb = pair(values((30,), dtype, rng), dtype)
    a.requires_grad_(), ta.requires_grad_(), b.requires_grad_(), tb.requires_grad_()
    (genesis.tanh(a * b) + F.gelu(a) / (b * b + 1)).sum().backward()
    (torch.tanh(ta * tb) + gelu(ta) / (tb * tb + 1)).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad, rtol=1e-2 if dtype is genesis.float16 else None)


REDUCE_CASES = [((6, 5, 7), 1), ((6, 5, 7), (0, 2)), ((6, 5, 7), None), ((300, 1000), 1),
                ((1000, 300), 0), ((3, 0, 4), 1), ((5, 1, 3), 2), ((), None)]


def _dim_args(dim, keepdim):
    """Keyword arguments of a reduction over `dim` (None: all dims, where keepdim is not
    accepted by torch's sum/mean)."""
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


def exact(fn):
    """`fn` run by torch in float64 on the same values and rounded once to the input's dtype:
    the reference for float reductions, whose float32 results depend on the summation order."""
    def run(t, *args):
        out = fn(t.double(), *args)
        return out.to(t.dtype) if out.dtype == torch.float64 else out
    return run


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("case", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_reductions(case, layout, dtype, rng):
    """Positive values: without cancellation every summation order is within float32's
    tolerance of the exact result."""
    shape, dim = case
    x = pair(values(shape, dtype, rng, 0.5, 1.5), dtype, layout)
    for keepdim in (False, True):
        for name in ("sum", "mean", "nansum", "logsumexp", "var", "std", "amax", "amin"):
            if name == "logsumexp" and dim is None:
                continue
            check(lambda t: getattr(genesis, name)(t, **_dim_args(dim, keepdim)),
                  exact(lambda t: getattr(torch, name)(t, **_dim_args(dim, keepdim))), x)
        for p in (2, 1, float("inf"), 0, 3):
            check(lambda t: genesis.linalg.vector_norm(t, p, dim, keepdim),
                  exact(lambda t: torch.linalg.vector_norm(t, p, dim, keepdim)), x)


@pytest.mark.parametrize("dtype", INT_DTYPES + [genesis.bool], ids=str)
@pytest.mark.parametrize("case", REDUCE_CASES[:5], ids=str)
def test_integer_reductions(case, dtype, rng):
    shape, dim = case
    x = pair(values(shape, dtype, rng), dtype, "transposed")
    small = pair(values(shape, dtype, rng) % 2 if dtype is not genesis.bool
                 else values(shape, dtype, rng), dtype)
    for name in ("sum", "amax", "amin", "any", "all", "count_nonzero"):
        kwargs = {} if dim is None else {"dim": dim}
        check(lambda t: getattr(genesis, name)(t, **kwargs), lambda t: getattr(torch, name)(
            t, **kwargs), x)
    check(lambda t: genesis.prod(t, 1), lambda t: torch.prod(t, 1), small)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.int32], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_max_min_argmax(dtype, layout, rng):
    x = pair(np.round(values((70, 130), dtype, rng)), dtype, layout)
    for dim in (0, 1):
        for keepdim in (False, True):
            for name in ("max", "min"):
                got = getattr(genesis, name)(x[0], dim, keepdim)
                want = getattr(torch, name)(x[1], dim, keepdim)
                assert_close(got.values, want.values)
                assert_close(got.indices, want.indices)
            for name in ("argmax", "argmin"):
                check(lambda t: getattr(genesis, name)(t, dim, keepdim),
                      lambda t: getattr(torch, name)(t, dim, keepdim), x)
    check(genesis.argmax, torch.argmax, x)
    check(genesis.max, torch.max, x)


def test_argmax_nan_and_ties():
    arr = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 2.0, -1.0, -1.0]])
    x = pair(arr, genesis.float32)
    for name in ("argmax", "argmin"):
        check(lambda t: getattr(genesis, name)(t, 1), lambda t: getattr(torch, name)(t, 1), x)


@pytest.mark.parametrize("n", [1000, 1 << 20, (1 << 24) + 7])
def test_large_sums_are_accurate_and_deterministic(n, rng):
    arr = values((n,), genesis.float32, rng).astype(np.float32)
    x = genesis.tensor(arr, device=DEVICE)
    first = x.sum().item()
    exact = float(np.sum(arr.astype(np.float64)))
    bound = 2 * np.log2(n) * np.finfo(np.float32).eps * float(np.abs(arr).sum())
    assert abs(first - exact) <= bound
    assert all(x.sum().item() == first for _ in range(3))
    assert x.mean().item() == np.float32(first) / np.float32(n)


# Rows split over many programs. Merged by the last program in the same launch: one odd row,
# 3 rows, a block of 4 columns (x 1025 splits), 4 rows past 64 MB (evict-first loads). Merged
# by a second launch: 64 columns x 512 splits of states.
SPLIT_CASES = [(((1 << 22) + 3,), None), ((3, (1 << 20) + 1), 1), (((1 << 20) + 7, 3), 0),
               ((4, (1 << 22) + 1), 1), ((32768, 64), 0)]


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("shape,dim", SPLIT_CASES, ids=str)
def test_split_reductions(shape, dim, dtype, rng):
    """Every state family through the split paths, against the float64 result rounded once;
    a sum repeats bit for bit."""
    x = pair(values(shape, dtype, rng, 0.5, 1.5), dtype)
    kwargs = _dim_args(dim, False)
    first = check(lambda t: genesis.sum(t, **kwargs), exact(lambda t: torch.sum(t, **kwargs)), x)
    for _ in range(3):
        assert torch.equal(to_torch(genesis.sum(x[0], **kwargs)), to_torch(first))
    for name in ("mean", "var", "amax", "argmax") + (("logsumexp",) if dim is not None else ()):
        check(lambda t: getattr(genesis, name)(t, **kwargs),
              exact(lambda t: getattr(torch, name)(t, **kwargs)), x)


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("shape,dim", [((64, 8193), 1), ((8193, 3), 0), (((1 << 20) + 5,), 0)],
                         ids=str)
def test_split_half_sums_round_once(shape, dim, dtype, rng):
    """Eighths in [0.5, 1.5] (in [1/128, 3/128] for a long float16 row, whose sum float16 must
    hold): every float32 partial sum is exact and a half-type one would round, so float32
    accumulation gives the exact sum rounded once, bit for bit."""
    arr = rng.integers(4, 13, shape) / 8
    if dtype is genesis.float16 and len(shape) == 1:
        arr = arr / 64
    x, want = pair(arr, dtype)
    got = to_torch(genesis.sum(x, dim))
    assert torch.equal(got, want.double().sum(dim).to(want.dtype))


@pytest.mark.skipif(DEVICE != "cuda", reason="streams")
def test_split_reductions_on_two_streams(rng):
    """Launches on two streams may overlap; each stream has its own split counters."""
    arr = values(((1 << 22) + 3,), genesis.float32, rng)
    x = genesis.tensor(arr, dtype=genesis.float32, device="cuda")
    want = x.sum().item()
    streams = [genesis.cuda.Stream() for _ in range(2)]
    for s in streams:
        s.wait_stream(genesis.cuda.current_stream())
    sums = []
    for _ in range(8):
        for s in streams:
            with genesis.cuda.stream(s):
                sums.append(x.sum())
    for s in streams:
        s.synchronize()
    assert all(t.item() == want for t in sums)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int32], ids=str)
@pytest.mark.parametrize("shape,dim", [((6, 2000), 1), ((2000, 6), 0), ((3, 40000), 1),
                                       ((4, 5, 6), 1)], ids=str)
def test_scans(dtype, shape, dim, rng):
    x = pair(values(shape, dtype, rng, 0.9, 1.1), dtype, "transposed")
    check(lambda t: genesis.cumsum(t, dim), lambda t: torch.cumsum(t, dim), x,
          rtol=1e-4 if dtype is genesis.float32 else None)
    if dtype is not genesis.int32:
        small = pair(values((4, 50), dtype, rng, 0.9, 1.1), dtype)
        check(lambda t: genesis.cumprod(t, 1), lambda t: torch.cumprod(t, 1), small)


SOFTMAX_CASES = [((4, 100), 1), ((8, 16384), 1), ((3, 40000), 1), ((100, 3), 0), ((300, 70), 0),
                 ((2, 3, 4), 1), ((7,), 0), ((), 0)]


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16,
                                   genesis.float64], ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward(case, dtype, log, rng):
    """Against torch in float64, rounded once: what the GPU kernels compute for every dtype.
    The backward is a function of the saved output, rounded to the dtype (as PyTorch's CUDA
    kernels use it), so its reference is torch's backward formula in float64 on that output."""
    if DEVICE == "cpu" and dtype in (genesis.float16, genesis.bfloat16):
        pytest.skip("the CPU backend's composite backward rounds half types at every step")
    shape, dim = case
    name = "log_softmax" if log else "softmax"
    g, t = pair(values(shape, dtype, rng, -10, 10), dtype, "transposed")
    g = g.detach().requires_grad_()
    out, want = getattr(genesis, name)(g, dim), getattr(torch, name)(t.double(), dim)
    saved = want.to(pair(values((), dtype, rng), dtype)[1].dtype)
    assert_close(out, saved)
    grad = pair(values(shape, dtype, rng), dtype)
    out.backward(grad[0])
    backward = (torch.ops.aten._log_softmax_backward_data if log
                else torch.ops.aten._softmax_backward_data)
    expected = backward(grad[1].double(), saved.double(), dim, torch.float64)
    assert_close(g.grad, expected.to(saved.dtype))


def test_softmax_special_rows():
    arr = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [np.inf, 0.0, 1.0],
                    [np.nan, 0.0, 1.0]])
    x = pair(arr, genesis.float32)
    for name in ("softmax", "log_softmax"):
        check(lambda t: getattr(genesis, name)(t, 1), lambda t: getattr(torch, name)(t, 1), x)


NORM_SHAPES = [((8, 768), 1), ((4, 3, 1000), 1), ((2, 3, 4, 5), 2), ((2, 20000), 1), ((5, 7), 1)]


@pytest.mark.parametrize("case", NORM_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_and_rms_norm(case, dtype, rms, affine, rng):
    """Against torch in float64 on the same values, rounded once, as the fused kernels compute."""
    if DEVICE == "cpu" and dtype is not genesis.float32:
        pytest.skip("the CPU backend's composite norms round half types at every step")
    shape, nd = case
    norm_shape = shape[len(shape) - nd:]
    arrays = [values(shape, dtype, rng), values(norm_shape, dtype, rng, 0.5, 1.5),
              values(norm_shape, dtype, rng)]
    mine = [pair(a, dtype)[0].requires_grad_() for a in arrays]
    exact = [pair(a, dtype)[1].double().requires_grad_() for a in arrays]
    x, w, b = mine if affine else (mine[0], None, None)
    tx, tw, tb = exact if affine else (exact[0], None, None)
    if rms:
        out, want = F.rms_norm(x, norm_shape, w, 1e-5), TF.rms_norm(tx, norm_shape, tw, 1e-5)
    else:
        out = F.layer_norm(x, norm_shape, w, b, 1e-5)
        want = TF.layer_norm(tx, norm_shape, tw, tb, 1e-5)
    tdtype = pair(arrays[0], dtype)[1].dtype
    assert_close(out, want.to(tdtype))
    grad, tgrad = pair(values(shape, dtype, rng), dtype)
    out.backward(grad)
    want.backward(tgrad.double())
    for m, e in zip((x, w, b), (tx, tw, tb)):
        if m is not None and m.grad is not None:
            assert_close(m.grad, e.grad.to(tdtype), atol=1e-4)


def test_layer_norm_second_order(rng):
    x = genesis.tensor(rng.uniform(-1, 1, (3, 8)), dtype=genesis.float64, device=DEVICE,
                       requires_grad=True)
    w = genesis.tensor(rng.uniform(0.5, 1.5, (8,)), dtype=genesis.float64, device=DEVICE,
                       requires_grad=True)
    tx, tw = to_torch(x, True), to_torch(w, True)
    (gx,) = genesis.autograd.grad(F.layer_norm(x, (8,), w).pow(2).sum(), (x,), create_graph=True)
    (tgx,) = torch.autograd.grad(TF.layer_norm(tx, (8,), tw).pow(2).sum(), (tx,),
                                 create_graph=True)
    gx.sum().backward()
    tgx.sum().backward()
    assert_close(w.grad, tw.grad)
