"""The CUDA kernels against the CPU kernels, on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_kernels_interpret.py`.
Each case builds the same (possibly strided) operands for both backends and calls the kernels
by their registered names, so the CUDA launch code, index math and formulas are checked against
the CPU kernels' contract without a GPU (libdevice is stood in for by numpy; see
triton_interpret.py).
"""

import inspect
import math

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti
from kernel_compile_cases import elementwise_case, reduce_case, softmax_case

import genesis.backends.cpu  # noqa: F401  (registers every CPU kernel, for the twin test)
from genesis import dispatch
from genesis.dtypes import half_source
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import elementwise as ew
from genesis.backends.cuda.kernels import norm
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.kernels import scan
from genesis.backends.cuda.kernels import softmax as sm
from genesis.backends.cuda.kernels._strided_indexing import RowLayout, placeholder

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
TOL = {np.dtype(np.float32): (1.3e-6, 1e-5), np.dtype(np.float16): (1e-3, 1e-5),
       BF16: (1.6e-2, 1e-5), np.dtype(np.float64): (1e-7, 1e-7)}
LAYOUTS = ["contiguous", "transposed", "broadcast", "sliced"]


# ops/linalg.py reduces einsum to matmuls on a device without an einsum kernel; shared memory
# is a property of CPU storages (ops/sharing.py: CUDA tensors count as shared, as in torch)
CPU_ONLY = {"einsum", "share_storage", "is_shared"}


def _cpu_kernels():
    """The CPU kernels written in genesis (numpy ufuncs registered as kernels have no Python
    signature of their own), without the CPU-only ones."""
    return sorted(name for (name, dev), fn in dispatch._KERNELS.items()
                  if dev == "cpu" and fn.__module__.startswith("genesis.backends.cpu")
                  and name not in CPU_ONLY)


@pytest.mark.parametrize("op", _cpu_kernels())
def test_every_cpu_kernel_has_a_cuda_twin_with_its_signature(op):
    """Runs everywhere (no interpreter needed): the contracts cannot drift apart unnoticed."""
    cuda = dispatch.kernel(op, "cuda")
    cpu = dispatch.kernel(op, "cpu")
    params = lambda fn: list(inspect.signature(fn).parameters)
    assert params(inspect.unwrap(cuda)) == params(inspect.unwrap(cpu))


_SM90_DIVISIONS = {
    "div": lambda target: elementwise_case("div", np.float32, target),
    "floor_divide": lambda target: elementwise_case("floor_divide", np.float16, target),
    "remainder": lambda target: elementwise_case("remainder", np.float32, target),
    "sigmoid": lambda target: elementwise_case("sigmoid", np.float32, target),
    "mean": lambda target: reduce_case("mean", np.float32, (1 << 20,), (0,), target),
    "var": lambda target: reduce_case("var", np.float32, (64, 1000), (1,), target),
    "softmax": lambda target: softmax_case(placeholder((64, 1000), np.float32), None,
                                           placeholder((64, 1000), np.float32), (1,), False,
                                           False, target),
}


@pytest.mark.parametrize("case", sorted(_SM90_DIVISIONS))
def test_float32_divisions_are_correctly_rounded(case, monkeypatch):
    """Compiled for sm_90 (no GPU needed): Triton's float32 `/` is an approximate division
    (div.full.f32, 2 ulp); PyTorch divides exactly, so a mean must be sum / n to the last bit."""
    if ti.ENABLED:
        pytest.skip("compiles real kernels: run without TRITON_INTERPRET")
    from triton.backends.compiler import GPUTarget

    from genesis.backends.cuda import launch
    ptx = []
    compile_kernel = launch.compile_kernel

    def compile_and_keep(*args, **kwargs):
        compiled = compile_kernel(*args, **kwargs)
        ptx.append(compiled.asm["ptx"])
        return compiled
    monkeypatch.setattr(launch, "compile_kernel", compile_and_keep)
    _SM90_DIVISIONS[case](GPUTarget("cuda", 90, 32))
    assert ptx and not any("div.full" in text for text in ptx)


@pytest.mark.parametrize("op,kinds", [("exp", ("array",)), ("add", ("array", "array")),
                                     ("mul", ("scalar", "array")), ("where", ("array",) * 3)])
def test_hot_contiguous_launches_have_only_trailing_constexprs(op, kinds):
    """So launch.BoundKernel appends the constexprs instead of rebuilding the argument tuple."""
    dtype = np.dtype(np.float32)
    operands = [placeholder((8,), np.bool_ if op == "where" and i == 0 else dtype)
                if kind == "array" else 1.0 for i, kind in enumerate(kinds)]
    operands += [None] * (3 - len(operands))
    out = placeholder((8,), dtype)
    launch = ew._contiguous_plan(op, out, operands, dtype)
    signature = launch.specialization(ew._contiguous_args(out, operands, (None,) * 3))[0]
    consts = [ty == "constexpr" for ty in signature.values()]
    assert consts == sorted(consts)


@pytest.fixture
def gpu(monkeypatch):
    """Kernels run interpreted; reductions use 64-element tiles and split rows (or columns) over
    at most 8 programs, so small inputs walk every path (several chunks, tails, split and merge), with
    split counters of their own (host memory)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(red, "_MAX_TILE", 64)
    monkeypatch.setattr(red, "_SPLIT_TARGET", 8)
    monkeypatch.setattr(red, "_COLUMN_SPLIT_TARGET", 8)
    monkeypatch.setattr(red, "_COUNTS", {})
    monkeypatch.setattr(sm, "ONE_PASS_LIMIT", 256)
    monkeypatch.setattr(sm, "_CHUNK", 64)
    with ti.device(ew, red, scan, sm, norm, array_ops):
        yield


def values(shape, dtype, rng, low=-3.0, high=3.0, nonzero=False):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if ew.is_float(dtype):
        return rng.uniform(low, high, shape).astype(dtype)
    lo = 0 if dtype.kind == "u" else -20
    out = rng.integers(lo, 21, shape).astype(dtype)
    if nonzero:
        out[out == 0] = 1
    return out


def operand(arr, layout):
    """(CPU array, CUDA array) with `arr`'s values in `layout` (2-D arrays)."""
    if layout == "contiguous" or arr.ndim != 2:
        return arr, ti.to_device(arr)
    if layout == "transposed":
        return arr, ti.to_device(arr, transpose=True)
    if layout == "broadcast":
        row = arr[:1]
        return np.broadcast_to(row, arr.shape), ti.view(ti.to_device(row), arr.shape,
                                                        (0, 1))
    wide = np.repeat(arr, 2, axis=1)
    dev = ti.to_device(wide)
    return wide[:, ::2], ti.view(dev, arr.shape, (wide.shape[1], 2))


def check(actual, expected):
    host = ti.to_host(actual)
    assert host.shape == expected.shape and host.dtype == expected.dtype, \
        f"{host.shape} {host.dtype} != {expected.shape} {expected.dtype}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(host, expected)
    else:
        rtol, atol = TOL[expected.dtype]
        np.testing.assert_allclose(host.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)


def run_both(op, cpu_args, gpu_args, **kwargs):
    expected = dispatch.kernel(op, "cpu")(*cpu_args, **kwargs)
    check(dispatch.kernel(op, "cuda")(*gpu_args, **kwargs), np.asarray(expected))


def run_both_pair(op, cpu_args, gpu_args):
    """run_both for a kernel returning (values, indices)."""
    for actual, expected in zip(dispatch.kernel(op, "cuda")(*gpu_args),
                                dispatch.kernel(op, "cpu")(*cpu_args)):
        check(actual, np.asarray(expected))


FLOAT_UNARY = [op for op in ("neg", "abs", "exp", "exp2", "log", "log2", "log10", "log1p",
                             "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
                             "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu",
                             "erf", "erfc", "gelu", "gelu_tanh", "silu", "mish", "log_sigmoid",
                             "hardsigmoid", "hardswish", "floor", "ceil", "trunc", "frac", "sign",
                             "sgn", "reciprocal", "square", "isnan", "isinf", "isfinite",
                             "signbit", "logical_not")]
INT_UNARY = ["neg", "abs", "relu", "floor", "ceil", "trunc", "sign", "square", "isnan", "isinf",
             "isfinite", "signbit", "logical_not", "bitwise_not"]


@pytest.mark.parametrize("op", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_unary(gpu, op, dtype, rng):
    x = values((37, 29), dtype, rng)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    run_both(op, [x], [ti.to_device(x)])


@pytest.mark.parametrize("op", INT_UNARY)
@pytest.mark.parametrize("dtype", INTS + [np.dtype(np.bool_)], ids=str)
def test_int_unary(gpu, op, dtype, rng):
    if dtype == np.bool_ and op in ("neg", "abs", "relu", "floor", "ceil", "trunc", "square"):
        pytest.skip("rejected for bool by the ops layer")
    if dtype == np.uint8 and op == "bitwise_not":
        pytest.skip("the interpreter cannot build ~x's all-ones uint8 constant")
    x = values((13, 11), dtype, rng)
    run_both(op, [x], [ti.to_device(x)])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ["exp", "neg", "isnan"])
def test_unary_layouts(gpu, op, layout, rng):
    x, gx = operand(values((9, 70), np.dtype(np.float32), rng), layout)
    run_both(op, [x], [gx])


FLOAT_BINARY = ["add", "sub", "mul", "div", "floor_divide", "trunc_divide", "remainder", "fmod",
                "pow", "maximum", "minimum", "fmax", "fmin", "atan2", "eq", "ne", "lt", "le",
                "gt", "ge", "logical_and", "logical_or", "logical_xor", "hypot", "logaddexp",
                "xlogy", "copysign", "heaviside"]
INT_BINARY = ["add", "sub", "mul", "floor_divide", "trunc_divide", "remainder", "fmod", "pow",
              "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
              "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
              "bitwise_left_shift", "bitwise_right_shift"]


@pytest.mark.parametrize("op", FLOAT_BINARY)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_binary(gpu, op, dtype, rng):
    a, b = values((23, 31), dtype, rng), values((23, 31), dtype, rng)
    a[0, :4] = [np.nan, np.inf, 0.0, 2.0]
    b[0, :4] = [1.0, np.inf, 0.0, np.nan]
    a[1, :5] = b[1, :5]
    run_both(op, [a, b], [ti.to_device(a), ti.to_device(b)])


@pytest.mark.parametrize("op", INT_BINARY)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_binary(gpu, op, dtype, rng):
    a = values((17, 19), dtype, rng)
    b = values((17, 19), dtype, rng, nonzero=True)
    if op == "pow" or "shift" in op:
        b = np.abs(b) % (dtype.itemsize * 8 + 3) if op != "pow" else b % 9 - (dtype.kind == "i")
        b = b.astype(dtype)
    run_both(op, [a, b], [ti.to_device(a), ti.to_device(b)])


@pytest.mark.parametrize("op", ["add", "mul", "maximum", "eq", "logical_xor", "bitwise_and",
                                "bitwise_or", "bitwise_xor", "pow"])
def test_bool_binary(gpu, op, rng):
    a, b = values((7, 9), np.dtype(np.bool_), rng), values((7, 9), np.dtype(np.bool_), rng)
    run_both(op, [a, b], [ti.to_device(a), ti.to_device(b)])


@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", LAYOUTS)
def test_binary_layouts(gpu, layout_a, layout_b, rng):
    dtype = np.dtype(np.float32)
    a, ga = operand(values((11, 1100), dtype, rng), layout_a)
    b, gb = operand(values((11, 1100), dtype, rng), layout_b)
    run_both("sub", [a, b], [ga, gb])


def _four_d(arr, layout):
    """(CPU array, CUDA array) with the 4-D `arr`'s values laid out "contiguous",
    "channels_last" or "bias" (its [0, :, 0, 0] broadcast over the rest)."""
    n, c, h, w = arr.shape
    if layout == "contiguous":
        return arr, ti.to_device(arr)
    if layout == "bias":
        col = np.ascontiguousarray(arr[0, :, 0, 0])
        return np.broadcast_to(col[None, :, None, None], arr.shape), ti.view(
            ti.to_device(col), arr.shape, (0, 1, 0, 0))
    stored = np.ascontiguousarray(arr.transpose(0, 2, 3, 1))
    return stored.transpose(0, 3, 1, 2), ti.view(ti.to_device(stored), arr.shape,
                                                 (h * w * c, 1, w * c, c))


def _dense_dims_strides(arr):
    return tuple(s // arr.itemsize for s, n in zip(arr.strides, arr.shape) if n > 1)


@pytest.mark.parametrize("op, layouts", [
    ("add", ("channels_last", "contiguous")), ("add", ("contiguous", "channels_last")),
    ("mul", ("channels_last", "bias")), ("sub", ("bias", "channels_last")),
    ("lt", ("channels_last", "contiguous")), ("where", ("contiguous", "channels_last", "bias")),
    ("where", ("channels_last", "contiguous", "contiguous"))])
def test_mixed_layouts_lay_the_result_out_as_the_cpu(gpu, op, layouts, rng):
    """Operands of different layouts: the result is dense in the order the first operand that
    tells two dims apart gives them (memory_formats.elementwise_order), on both backends."""
    shape = (2, 5, 3, 4)
    pairs = [_four_d(values(shape, np.dtype(np.bool_) if op == "where" and i == 0 else
                            np.dtype(np.float32), rng), layout)
             for i, layout in enumerate(layouts)]
    cpu_out = np.asarray(dispatch.kernel(op, "cpu")(*(c for c, _ in pairs)))
    gpu_out = dispatch.kernel(op, "cuda")(*(g for _, g in pairs))
    check(gpu_out, cpu_out)
    assert _dense_dims_strides(ti.to_host(gpu_out)) == _dense_dims_strides(cpu_out)


@pytest.mark.parametrize("half", [np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "div", "remainder", "maximum", "lt", "gelu_backward",
                                "relu_backward"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("half_first", [False, True])
def test_half_beside_float32(gpu, half, op, layout, half_first, rng):
    """A half-type array beside a float32 one is read as float32: the result is the float32
    op of the half values widened, bit for bit, with no cast kernel before it."""
    a = values((11, 70), np.dtype(np.float32), rng)
    h, gh = operand(values((11, 70), half, rng), layout)
    cpu = [h.astype(np.float32), a] if half_first else [a, h.astype(np.float32)]
    gpu_args = [gh, ti.to_device(a)] if half_first else [ti.to_device(a), gh]
    expected = np.asarray(dispatch.kernel(op, "cpu")(*cpu))
    actual = ti.to_host(dispatch.kernel(op, "cuda")(*gpu_args))
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("scalar_first", [False, True])
def test_python_scalars(gpu, dtype, scalar_first, rng):
    a = values((5, 300), dtype, rng)
    s = 2.5 if ew.is_float(dtype) else 300
    args = [s, a] if scalar_first else [a, s]
    run_both("sub", args, [s, ti.to_device(a)] if scalar_first else [ti.to_device(a), s])
    run_both("lt", args, [s, ti.to_device(a)] if scalar_first else [ti.to_device(a), s])


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 4099])
def test_sizes_around_blocks(gpu, n, rng):
    a, b = values((n,), np.dtype(np.float32), rng), values((n,), np.dtype(np.float16), rng)
    run_both("mul", [a, b.astype(np.float32)], [ti.to_device(a), ti.to_device(b.astype(np.float32))])
    run_both("add", [b, b], [ti.to_device(b), ti.to_device(b)])


def test_zero_dim(gpu):
    a = np.array(3.0, dtype=np.float32)
    run_both("mul", [a, 2.0], [ti.to_device(a), 2.0])


@pytest.mark.parametrize("value", [np.float32(2.5), np.array(-1.5), np.arange(6.0).reshape(2, 3).T],
                         ids=["scalar", "0-d", "transposed"])
def test_from_numpy_keeps_the_shape(gpu, monkeypatch, value):
    """A 0-d host array uploads as 0-d (np.ascontiguousarray would make it 1-d)."""
    import ctypes

    from genesis.backends.cuda import array_ops
    from genesis.backends.cuda.runtime import driver
    monkeypatch.setattr(array_ops, "activated", lambda index: 0)
    monkeypatch.setattr(array_ops, "current_stream_handle", lambda index: 0)
    monkeypatch.setattr(driver, "memcpy_htod", lambda dst, src, nbytes, stream=0:
                        ctypes.memmove(dst, src, nbytes))
    out = array_ops.from_numpy(value)
    expected = np.asarray(value)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(ti.to_host(out), expected)


@pytest.mark.parametrize("dtype", INTS + [np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("base", [2, -3])
def test_integer_pow_of_a_python_scalar(gpu, dtype, base, rng):
    """scalar ** tensor: the exponent loop starts from a block, not from the scalar base."""
    b = np.abs(values((6, 40), dtype, rng)) % 7 if dtype != np.bool_ else values((6, 40), dtype,
                                                                                  rng)
    b = b.astype(np.int64 if dtype == np.bool_ else dtype)
    base = base if dtype.kind == "i" or dtype == np.bool_ else abs(base)
    run_both("pow", [base, b], [base, ti.to_device(b)])


def test_many_dims_fall_back_to_leading_dim_loop(gpu, rng):
    base = values((3,) * 7, np.dtype(np.float32), rng)
    x = base[(slice(0, 2),) * 7]
    gx = ti.view(ti.to_device(base), x.shape, tuple(s // 4 for s in base.strides))
    run_both("exp", [x], [gx])


INTO_CASES = ["contiguous", "alias", "broadcast", "params", "where", "overlap", "strided_out",
              "permuted", "permuted_alias", "permuted_overlap"]


@pytest.mark.parametrize("case", INTO_CASES)
def test_elementwise_into(gpu, case, rng, monkeypatch):
    """The in-place writes: straight into the destination (an operand may be the destination
    itself; a transposed one too when its array operands are transposed alike), or computed
    aside and copied when the destination is strided or an operand overlaps it another way;
    the result is always the op of the values before the write. Over 1024 elements: several
    programs, so a direct write through an overlap would be seen."""
    if case in ("permuted", "permuted_alias"):
        monkeypatch.setattr(ew, "copy_", lambda *args: pytest.fail("copied, not written in place"))
    f32 = np.dtype(np.float32)
    x, y, z = (values((40, 33), f32, rng) for _ in range(3))
    out = ti.to_device(x)
    op, operands, params, expected = "add", (out, ti.to_device(y)), (), x + y
    if case == "alias":
        op, operands, expected = "mul", (out, out), x * x
    elif case == "broadcast":
        operands, expected = (out, ti.view(ti.to_device(y[:1]), (40, 33), (0, 1))), x + y[:1]
    elif case == "params":
        op, operands, params = "addcmul", (out, ti.to_device(y), ti.to_device(z)), (0.5,)
        expected = dispatch.kernel("addcmul", "cpu")(x, y, z, 0.5)
    elif case == "where":  # masked_fill_: a bool row broadcast, a scalar, out itself
        mask = rng.random((1, 33)) < 0.5
        op, operands = "where", (ti.view(ti.to_device(mask), (40, 33), (0, 1)), 2.5, out)
        expected = np.where(mask, np.float32(2.5), x)
    elif case == "overlap":  # out is rows 1..40 of a buffer, the operand rows 0..39 of it
        rows = np.concatenate([y[:1], x])
        base = ti.to_device(rows)
        out = ti.view(base, (40, 33), (33, 1), offset=33)
        operands, expected = (out, ti.view(base, (40, 33), (33, 1))), x + rows[:-1]
    elif case == "strided_out":
        out = ti.to_device(x, transpose=True)
        operands = (out, ti.to_device(y))
    elif case == "permuted":  # out and operand transposed alike: written flat, in place
        out = ti.to_device(x, transpose=True)
        operands = (out, ti.to_device(y, transpose=True))
    elif case == "permuted_alias":
        out = ti.to_device(x, transpose=True)
        op, operands, expected = "mul", (out, out), x * x
    elif case == "permuted_overlap":  # columns 1..33 of a transposed buffer, and 0..32
        cols = np.concatenate([y[:, :1], x], axis=1)
        base = ti.to_device(cols, transpose=True)
        out = ti.view(base, (40, 33), (1, 40), offset=40)
        operands, expected = (out, ti.view(base, (40, 33), (1, 40))), x + cols[:, :-1]
    assert dispatch.kernel("elementwise_into", "cuda")(op, out, operands, params) is out
    check(out, expected.astype(f32))


RESULT_LAYOUT_CASES = ["channels_last", "transposed", "channels_last_scalar", "mixed",
                       "predicate", "cast"]


@pytest.mark.parametrize("case", RESULT_LAYOUT_CASES)
def test_result_keeps_a_shared_dense_layout(gpu, case, rng):
    """A new result is laid out as PyTorch lays it out: channels-last in, channels-last out,
    whatever the result's dtype; with operands of different layouts, in the first one's order
    (a channels-last x plus a contiguous y is channels-last); its values are the op's either
    way."""
    f32 = np.dtype(np.float32)
    x, y = (values((2, 3, 4, 5), f32, rng) for _ in range(2))

    def channels_last(a):
        return ti.view(ti.to_device(np.ascontiguousarray(a.transpose(0, 2, 3, 1))),
                       a.shape, (60, 1, 15, 3))
    cl_strides = tuple(4 * s for s in (60, 1, 15, 3))
    op, operands, expected, strides = "add", (channels_last(x), channels_last(y)), x + y, cl_strides
    if case == "transposed":
        x2, y2 = x.reshape(8, 15), y.reshape(8, 15)
        operands = (ti.to_device(x2, transpose=True), ti.to_device(y2, transpose=True))
        expected, strides = x2 + y2, (4, 32)
    elif case == "channels_last_scalar":
        op, operands, expected = "mul", (channels_last(x), 2.0), x * np.float32(2.0)
    elif case == "mixed":  # a channels-last operand first, then a contiguous one
        operands = (channels_last(x), ti.to_device(y))
    elif case == "predicate":  # a bool result of float operands
        op, operands, expected, strides = ("lt", (channels_last(x), channels_last(y)), x < y,
                                           (60, 1, 15, 3))
    elif case == "cast":  # computed in another dtype than the operands'
        operands, strides = (channels_last(x), channels_last(y)), tuple(8 * s for s in
                                                                        (60, 1, 15, 3))
        out = ew.run(op, operands, dtype=np.dtype(np.float64))
        assert out.strides == strides
        check(out, (x.astype(np.float64) + y))
        return
    out = ew.run(op, operands)
    assert out.strides == strides
    check(out, expected)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", [d for d in FLOATS if d != BF16] + INTS + [np.dtype(np.bool_)],
                         ids=str)
def test_fill_in_place(gpu, dtype, layout, rng):
    """fill_ (a memset for zero, the fill kernel, or one filled element broadcast into a
    strided view) against the CPU kernel, on 0-d, empty and 2-D arrays. Not bfloat16: the
    interpreter stores the fill kernel's float64 value into bfloat16 as garbage (2.8e-40 for
    3.0); the GPU runs test_creation.py's fill_ cases in every dtype."""
    for shape in [(), (0, 4), (5, 7)]:
        for value in (0, 3, 2.5, True):
            host, dev = operand(values(shape, dtype, rng), layout)
            host = np.array(host)
            dispatch.kernel("fill_", "cpu")(host, value)
            assert dispatch.kernel("fill_", "cuda")(dev, value) is dev
            check(dev, host)


def test_integer_division_by_zero_is_defined(gpu):
    a = np.array([7, -7, 5], dtype=np.int32)
    b = np.array([0, 0, 2], dtype=np.int32)
    ga, gb = ti.to_device(a), ti.to_device(b)
    k = lambda op: ti.to_host(dispatch.kernel(op, "cuda")(ga, gb)).tolist()
    assert k("floor_divide") == [-1, -1, 2] and k("trunc_divide") == [-1, -1, 2]
    assert k("remainder") == [7, -7, 1] and k("fmod") == [7, -7, 1]


@pytest.mark.parametrize("op", ["floor_divide", "trunc_divide", "remainder", "fmod"])
@pytest.mark.parametrize("zero", [0, False])
def test_integer_division_by_a_scalar_zero_raises(gpu, op, zero):
    """As the CPU kernels (and PyTorch on the CPU): a Python divisor is checked on the host."""
    a = np.array([7, -7, 5], dtype=np.int16)
    for kernel, arg in ((dispatch.kernel(op, "cpu"), a), (dispatch.kernel(op, "cuda"),
                                                           ti.to_device(a))):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            kernel(arg, zero)
    run_both(op, [a.astype(np.float32), zero], [ti.to_device(a.astype(np.float32)), zero])


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_clamp_of_integers_with_float_bounds(gpu, dtype, rng):
    """hardtanh/relu6 pass float bounds whatever the dtype: truncated, as the CPU kernel."""
    x = values((5, 40), dtype, rng)
    run_both("clamp", [x, -1.0 if dtype.kind == "i" else 0.0, 6.7],
             [ti.to_device(x), -1.0 if dtype.kind == "i" else 0.0, 6.7])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_parametric(gpu, dtype, rng):
    x = values((6, 50), dtype, rng, -30, 30)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    gx = ti.to_device(x)
    run_both("elu", [x, 1.3, 1.05, 0.5], [gx, 1.3, 1.05, 0.5])
    run_both("leaky_relu", [x, 0.2], [gx, 0.2])
    run_both("softplus", [x], [gx], beta=2.0, threshold=15.0)
    run_both("hardshrink", [x, 0.4], [gx, 0.4])
    run_both("softshrink", [x, 3.7], [gx, 3.7])
    run_both("nan_to_num", [x], [gx], nan=1.5, posinf=7.0)
    for decimals in (0, 2, -1):
        run_both("round", [x], [gx], decimals=decimals)


def test_nan_to_num_defaults_use_the_dtype_range(gpu):
    x = np.array([np.inf, -np.inf, np.nan], dtype=np.float16)
    out = ti.to_host(dispatch.kernel("nan_to_num", "cuda")(ti.to_device(x)))
    assert out.tolist() == [65504.0, -65504.0, 0.0]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.int32)], ids=str)
@pytest.mark.parametrize("bounds", ["both", "low", "high", "arrays"])
def test_clamp(gpu, dtype, bounds, rng):
    x = values((8, 40), dtype, rng)
    if ew.is_float(dtype):
        x[0, 0] = np.nan
    lo, hi = (-1, 2) if dtype.kind != "f" else (-1.0, 2.0)
    if bounds == "arrays":
        low, high = values((8, 40), dtype, rng) - 1, values((8, 40), dtype, rng) + 1
        run_both("clamp", [x, low, high], [ti.to_device(x), ti.to_device(low), ti.to_device(high)])
        return
    low = lo if bounds in ("both", "low") else None
    high = hi if bounds in ("both", "high") else None
    run_both("clamp", [x, low, high], [ti.to_device(x), low, high])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_where(gpu, layout, rng):
    cond = rng.random((12, 33)) < 0.5
    a = values((12, 33), BF16, rng)
    c, gc = operand(cond, layout)
    run_both("where", [c, a, 1.5], [gc, ti.to_device(a), 1.5])
    run_both("where", [c, -2.0, a], [gc, -2.0, ti.to_device(a)])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ternary(gpu, dtype, rng):
    x, a, b = (values((10, 21), dtype, rng) for _ in range(3))
    gx, ga, gb = ti.to_device(x), ti.to_device(a), ti.to_device(b)
    run_both("lerp", [x, a, b], [gx, ga, gb])
    run_both("lerp", [x, a, 0.3], [gx, ga, 0.3])
    run_both("addcmul", [x, a, b, 0.5], [gx, ga, gb, 0.5])
    run_both("addcdiv", [x, a, b, -2.0], [gx, ga, gb, -2.0])


def test_addcmul_integers_wrap(gpu, rng):
    x, a, b = (values((4, 5), np.dtype(np.int8), rng) for _ in range(3))
    run_both("addcmul", [x, a, b, 3], [ti.to_device(x), ti.to_device(a), ti.to_device(b), 3])


def element_strides(arr):
    return tuple(s // arr.itemsize for s in arr.strides)


def strided_input(shape, dtype, layout, rng, low=-3.0, high=3.0):
    """(CPU array, CUDA array) of `shape` laid out "contiguous", "permuted" (dims reversed in
    memory) or "sliced" (every other element of the last dim)."""
    x = values(shape, dtype, rng, low, high)
    if layout == "contiguous" or not shape:
        return x, ti.to_device(x)
    if layout == "permuted":
        storage = np.ascontiguousarray(x.transpose())
        return x, ti.view(ti.to_device(storage), shape, element_strides(storage)[::-1])
    wide = np.repeat(x, 2, axis=-1)
    return x, ti.view(ti.to_device(wide), shape, element_strides(wide[..., ::2]))


REDUCE_DIMS = [((6, 5, 7), (1,)), ((6, 5, 7), (0, 2)), ((6, 5, 7), (0, 1, 2)), ((4, 300), (1,)),
               ((300, 5), (0,)), ((900,), (0,)), ((), ()), ((3, 0, 4), (1,)), ((5, 1, 3), (2,))]
REDUCE_LAYOUTS = ["contiguous", "permuted", "sliced"]


def genesis_dtype(dtype):
    from genesis import dtypes
    return dtypes.from_numpy_dtype(dtype)


def run_exact(op, x, gx, *args):
    """Compare with the CPU kernel run in float64 (numpy's float32 column sums add sequentially
    and drift further from the exact value than a tree does)."""
    actual = dispatch.kernel(op, "cuda")(gx, *args)
    expected = np.asarray(dispatch.kernel(op, "cpu")(x.astype(np.float64), *args))
    check(actual, expected.astype(ti.to_host(actual).dtype))


@pytest.mark.parametrize("shape,dims", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.float64)], ids=str)
def test_float_reductions(gpu, shape, dims, layout, dtype, rng):
    """Positive inputs: sums without cancellation, so float32 results are within float32's
    tolerance of the exact value whatever the summation order."""
    x, gx = strided_input(shape, dtype, layout, rng, 0.5, 1.5)
    keepdim = len(dims) != 1
    gd = genesis_dtype(dtype)
    run_exact("sum", x, gx, dims, keepdim, gd)
    run_exact("nansum", x, gx, dims, keepdim, gd)
    run_exact("mean", x, gx, dims, keepdim)
    run_exact("var", x, gx, dims, keepdim, 1, False)
    run_exact("var", x, gx, dims, keepdim, 0, True)
    run_exact("logsumexp", x, gx, dims, keepdim)
    for p in (2.0, 1.0, 0.0, 3.0):
        run_exact("norm", x, gx, dims, keepdim, p)
    if all(shape[d] for d in dims):
        run_exact("norm", x, gx, dims, keepdim, float("inf"))
        run_exact("norm", x, gx, dims, keepdim, float("-inf"))
        run_both("amax", [x, dims, keepdim], [gx, dims, keepdim])
        run_both("amin", [x, dims, keepdim], [gx, dims, keepdim])


@pytest.mark.parametrize("dtype", INTS + [np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("shape,dims", [((9, 70), (1,)), ((70, 9), (0,)), ((4, 5, 6), (0, 2))],
                         ids=str)
def test_integer_reductions(gpu, dtype, shape, dims, rng):
    x, gx = strided_input(shape, dtype, "permuted", rng)
    i64 = genesis_dtype(np.dtype(np.int64))
    run_both("sum", [x, dims, True, i64], [gx, dims, True, i64])
    run_both("prod", [x % 3 if dtype != np.bool_ else x, dims, False, i64],
             [ti.to_device(x % 3) if dtype != np.bool_ else gx, dims, False, i64])
    run_both("amax", [x, dims, False], [gx, dims, False])
    run_both("amin", [x, dims, True], [gx, dims, True])
    run_both("any", [x, dims, False], [gx, dims, False])
    run_both("all", [x, dims, True], [gx, dims, True])
    run_both("count_nonzero", [x, dims], [gx, dims])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int16),
                                   np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
def test_arg_reductions(gpu, dtype, layout, rng):
    x, gx = strided_input((7, 150), dtype, layout, rng)
    if ew.is_float(dtype):
        x, gx = np.round(x), ti.to_device(np.round(x))
    for dim, keepdim in ((1, False), (0, True), (None, False), (None, True)):
        run_both("argmax", [x, dim, keepdim], [gx, dim, keepdim])
        run_both("argmin", [x, dim, keepdim], [gx, dim, keepdim])
    for dim in (0, 1):
        for op in ("max_dim", "min_dim"):
            run_both_pair(op, [x, dim, dim == 0], [gx, dim, dim == 0])


def test_arg_reductions_take_the_first_nan(gpu):
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 2.0, -1.0, -1.0]], dtype=np.float32)
    gx = ti.to_device(x)
    for op in ("argmax", "argmin"):
        run_both(op, [x, 1, False], [gx, 1, False])
        run_both(op, [x, None, False], [gx, None, False])


@pytest.mark.parametrize("kind", ["sum", "var", "argmax", "logsumexp"])
def test_merges_longer_than_a_tile(gpu, kind, monkeypatch, rng):
    """More split states than one merge tile holds: the merge walks them in chunks."""
    monkeypatch.setattr(red, "_SPLIT_TARGET", 100)
    x = values((6000,), np.dtype(np.float64), rng, 0.5, 1.5)
    gx = ti.to_device(x)
    if kind == "argmax":
        run_both("argmax", [x, None, False], [gx, None, False])
    elif kind == "var":
        run_exact("var", x, gx, (0,), False, 1, False)
    else:
        run_exact(kind, x, gx, (0,), False, *(() if kind == "logsumexp" else
                                               (genesis_dtype(x.dtype),)))


def split_plan(shape, dims, states=1):
    """The reduction plan of a contiguous float32 array of `shape` reduced over `dims`."""
    x = placeholder(shape, np.float32)
    return red._Plan(RowLayout(shape, dims, [x.element_strides()]), states)


# (shape, dims): one odd-sized row; rows of two reduced dims; a column block with rows out of
# range (BM=8 over 5 rows); each splits in one launch under the gpu fixture's sizes.
ONE_LAUNCH_SPLITS = [((1001,), (0,)), ((3, 1001), (1,)), ((2, 3, 999), (0, 2)),
                     ((333, 5), (0,))]


@pytest.mark.parametrize("shape,dims", ONE_LAUNCH_SPLITS, ids=str)
def test_splits_merged_by_the_last_program(gpu, shape, dims, rng):
    plan = split_plan(shape, dims)
    assert plan.splits > 1 and plan.fused
    x, gx = strided_input(shape, np.dtype(np.float32), "contiguous", rng, 0.5, 1.5)
    f32 = genesis_dtype(x.dtype)
    run_exact("sum", x, gx, dims, False, f32)
    run_exact("mean", x, gx, dims, True)
    run_exact("var", x, gx, dims, False, 1, False)
    run_exact("logsumexp", x, gx, dims, False)
    run_exact("norm", x, gx, dims, False, 2.0)
    run_both("amax", [x, dims, False], [gx, dims, False])
    if len(dims) == 1:
        run_both_pair("max_dim", [x, dims[0], False], [gx, dims[0], False])
    assert not ti.to_host(red._COUNTS[(0, 0)]).any()


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize("shape,dims", ONE_LAUNCH_SPLITS[:2], ids=str)
def test_split_half_sums_accumulate_in_float32(gpu, dtype, shape, dims, rng):
    """Eighths in [0.5, 1.5]: every float32 partial sum is exact, while a half-type partial
    (11 or 8 significant bits) would round. So the result is the exact sum rounded once."""
    x = (rng.integers(4, 13, shape) / 8).astype(dtype)
    gx = ti.to_device(x)
    out = ti.to_host(dispatch.kernel("sum", "cuda")(gx, dims, False, genesis_dtype(dtype)))
    exact = x.astype(np.float64).sum(dims).astype(dtype)
    np.testing.assert_array_equal(out.view(np.uint16), exact.view(np.uint16))
    mean = ti.to_host(dispatch.kernel("mean", "cuda")(gx, dims, False))
    cpu = np.asarray(dispatch.kernel("mean", "cpu")(x, dims, False))
    np.testing.assert_array_equal(mean.view(np.uint16), cpu.view(np.uint16))


def test_split_reductions_repeat_bit_for_bit(gpu, rng):
    """Signed values, so the summation order shows in the bits: a second call (and a call after
    another geometry used the counters) gives the same bits, and the counters end at zero."""
    x = rng.standard_normal(1001).astype(np.float32)
    gx = ti.to_device(x)
    f32 = genesis_dtype(x.dtype)
    first = ti.to_host(dispatch.kernel("sum", "cuda")(gx, (0,), False, f32)).copy()
    dispatch.kernel("var", "cuda")(ti.to_device(rng.standard_normal((3, 1001))), (1,), False,
                                   1, False)
    again = ti.to_host(dispatch.kernel("sum", "cuda")(gx, (0,), False, f32))
    assert first.tobytes() == again.tobytes()
    assert not ti.to_host(red._COUNTS[(0, 0)]).any()


def test_column_splits_merge_in_a_second_launch(gpu, monkeypatch, rng):
    """32 rows x 100 splits of states is more than one program should merge alone: the states
    go to a second launch (two merge tiles per row)."""
    monkeypatch.setattr(red, "_COLUMN_SPLIT_TARGET", 100)
    plan = split_plan((3000, 20), (0,))
    assert plan.splits == 100 and not plan.fused
    x, gx = strided_input((3000, 20), np.dtype(np.float64), "contiguous", rng, 0.5, 1.5)
    run_exact("sum", x, gx, (0,), False, genesis_dtype(x.dtype))
    run_exact("var", x, gx, (0,), True, 1, False)
    run_both_pair("max_dim", [x, 0, False], [gx, 0, False])


def test_zero_dim_arg_reductions(gpu):
    x = np.array(4.5, dtype=np.float32)
    gx = ti.to_device(x)
    run_both("argmax", [x, None, False], [gx, None, False])
    values, index = dispatch.kernel("max_dim", "cuda")(gx, 0, False)
    assert ti.to_host(values).tolist() == 4.5 and ti.to_host(index).tolist() == 0


def test_special_values(gpu):
    x = np.array([[np.nan, 1.0], [np.inf, 1.0], [-np.inf, -np.inf], [np.inf, -np.inf]],
                 dtype=np.float32)
    gx = ti.to_device(x)
    run_both("logsumexp", [x, (1,), False], [gx, (1,), False])
    run_both("amax", [x, (1,), False], [gx, (1,), False])
    run_both("amin", [x, (1,), False], [gx, (1,), False])
    run_both("nansum", [x, (1,), False, genesis_dtype(x.dtype)],
             [gx, (1,), False, genesis_dtype(x.dtype)])


def test_empty_reductions(gpu):
    x = np.zeros((3, 0), dtype=np.float32)
    gx = ti.to_device(x)
    f32 = genesis_dtype(x.dtype)
    for op, args in (("sum", (f32,)), ("prod", (f32,))):
        run_both(op, [x, (1,), False, *args], [gx, (1,), False, *args])
    run_both("mean", [x, (1,), False], [gx, (1,), False])
    run_both("var", [x, (1,), False, 1, False], [gx, (1,), False, 1, False])
    run_both("logsumexp", [x, (1,), False], [gx, (1,), False])
    run_both("all", [x, (1,), False], [gx, (1,), False])
    run_both("any", [x, (0,), False], [gx, (0,), False])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.int32),
                                   np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((5, 150), 1), ((150, 5), 0), ((4, 3, 5), 1), ((), 0)],
                         ids=str)
def test_scans(gpu, dtype, layout, shape, dim, rng):
    x, gx = strided_input(shape, dtype, layout, rng, 0.5, 1.5)
    acc = genesis_dtype(np.dtype(np.int64) if dtype.kind in "biu" else dtype)
    for reverse in (False, True):
        run_both("cumsum", [x, dim, reverse, acc], [gx, dim, reverse, acc])
    small = x if dtype == np.bool_ or ew.is_float(dtype) else x % 3
    run_both("cumprod", [small, dim, acc], [ti.to_device(small) if small is not x else gx, dim,
                                            acc])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)],
                         ids=str)
@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((5, 150), 1), ((7, 700), 1), ((150, 5), 0), ((300, 9), 0),
                                       ((4, 3, 5), 1), ((6,), 0), ((), 0)], ids=str)
def test_softmax(gpu, dtype, layout, shape, dim, rng):
    """Short rows take the one-pass kernel, long ones (the limit is lowered here) the online
    one; rows along a strided dim too."""
    x, gx = strided_input(shape, dtype, layout, rng, -8.0, 8.0)
    for op in ("softmax", "log_softmax"):
        run_both(op, [x, dim], [gx, dim])


def softmax_backward_reference(op, g, y, dim):
    g, y = g.astype(np.float64), y.astype(np.float64)
    if op == "softmax_backward":
        return y * (g - np.sum(g * y, axis=dim, keepdims=True))
    return g - np.exp(y) * np.sum(g, axis=dim, keepdims=True)


@pytest.mark.parametrize("op", ["softmax_backward", "log_softmax_backward"])
@pytest.mark.parametrize("shape,dim", [((5, 150), 1), ((7, 700), 1), ((300, 9), 0)], ids=str)
@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
def test_softmax_backward(gpu, op, shape, dim, layout, rng):
    g, gg = strided_input(shape, np.dtype(np.float32), layout, rng)
    y = np.asarray(dispatch.kernel(op.replace("_backward", ""), "cpu")(values(
        shape, np.dtype(np.float32), rng), dim))
    expected = softmax_backward_reference(op, g, y, dim).astype(np.float32)
    check(dispatch.kernel(op, "cuda")(gg, ti.to_device(y), dim), expected)


def test_softmax_special_rows(gpu):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [np.inf, 0.0, 1.0],
                  [np.nan, 0.0, 1.0]], dtype=np.float32)
    for op in ("softmax", "log_softmax"):
        run_both(op, [x, 1], [ti.to_device(x), 1])


def norm_reference(x, w, b, eps, rms):
    """(y, mean, rstd, and a function giving (dx, dw, db) from dy), in float64."""
    x = x.astype(np.float64)
    mean = np.zeros(x.shape[:-1]) if rms else x.mean(-1)
    var = (x * x).mean(-1) if rms else x.var(-1)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean[..., None]) * rstd[..., None]
    wv = np.ones(x.shape[-1]) if w is None else w.astype(np.float64)
    y = xhat * wv + (0 if b is None else b.astype(np.float64))

    def grads(dy):
        dy = dy.astype(np.float64)
        wdy = dy * wv
        c1 = (xhat * wdy).mean(-1, keepdims=True)
        c2 = 0 if rms else wdy.mean(-1, keepdims=True)
        dx = (wdy - xhat * c1 - c2) * rstd[..., None]
        return dx, (dy * xhat).reshape(-1, x.shape[-1]).sum(0), dy.reshape(-1, x.shape[-1]).sum(0)
    return y, mean, rstd, grads


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.float64)], ids=str)
@pytest.mark.parametrize("shape", [(6, 100), (3, 5, 700), (1, 64), (0, 8), (33, 7)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_norms(gpu, rms, dtype, shape, affine, rng, monkeypatch):
    """Rows longer than the (lowered) one-pass limit take the chunked kernels."""
    monkeypatch.setattr(norm, "ONE_PASS_LIMIT", 256)
    monkeypatch.setattr(norm, "_CHUNK", 128)
    monkeypatch.setattr(norm, "_BACKWARD_PROGRAMS", 4)
    x = values(shape, dtype, rng)
    w = values(shape[-1:], dtype, rng) if affine else None
    b = values(shape[-1:], dtype, rng) if affine and not rms else None
    dev = lambda a: None if a is None else ti.to_device(a)
    y, mean, rstd, grads = norm_reference(x, w, b, 1e-5, rms)
    if rms:
        gy, grstd = dispatch.kernel("rms_norm_fwd", "cuda")(dev(x), dev(w), 1, 1e-5)
    else:
        gy, gmean, grstd = dispatch.kernel("layer_norm_fwd", "cuda")(dev(x), dev(w), dev(b), 1,
                                                                    1e-5)
        check(gmean, mean.reshape(-1).astype(ti.to_host(gmean).dtype))
    check(gy, y.astype(dtype))
    check(grstd, rstd.reshape(-1).astype(ti.to_host(grstd).dtype))
    dy = values(shape, dtype, rng)
    dx, dw, db = grads(dy)
    if rms:
        gdx, gdw = dispatch.kernel("rms_norm_bwd", "cuda")(dev(dy), dev(x), dev(w), grstd, 1,
                                                           affine)
    else:
        gdx, gdw, gdb = dispatch.kernel("layer_norm_bwd", "cuda")(
            dev(dy), dev(x), dev(w), gmean, grstd, 1, affine, affine)
        if affine:
            check(gdb, db.astype(dtype))
    check(gdx, dx.astype(dtype))
    if affine:
        check(gdw, dw.astype(dtype))
    else:
        assert gdw is None


def _layout_view(arr, layout):
    """(numpy array with arr's values, CUDA view holding them) laid out as `layout`:
    "contiguous", "permuted" (dims reversed in memory), "stepped" (every other element along
    each dim), "broadcast" (the first index of dim 0, expanded) or "batch_t" (the last two dims
    swapped in memory)."""
    if layout == "contiguous" or arr.ndim == 0:
        return arr, ti.to_device(arr)
    if layout == "permuted":
        storage = np.ascontiguousarray(arr.transpose())
        return arr, ti.view(ti.to_device(storage), arr.shape, element_strides(storage)[::-1])
    if layout == "batch_t":
        storage = np.ascontiguousarray(np.swapaxes(arr, -1, -2))
        st = list(element_strides(storage))
        st[-1], st[-2] = st[-2], st[-1]
        return arr, ti.view(ti.to_device(storage), arr.shape, tuple(st))
    if layout == "broadcast":
        row = np.ascontiguousarray(arr[:1])
        return np.broadcast_to(row, arr.shape), ti.view(ti.to_device(row), arr.shape,
                                                        (0,) + element_strides(row)[1:])
    big = np.zeros(tuple(2 * s for s in arr.shape), arr.dtype)
    big[tuple(slice(None, None, 2) for _ in arr.shape)] = arr
    return arr, ti.view(ti.to_device(big), arr.shape, tuple(2 * s for s in element_strides(big)))


COPY_SHAPES = [(), (5,), (70, 130), (3, 70, 90), (2, 3, 2, 3, 2, 3), (2,) * 7]


def _check_copy(shape, src_layout, dst_layout, src_dtype, dst_dtype, rng):
    from genesis.backends.cuda.kernels import copy
    x, src = _layout_view(values(shape, np.dtype(src_dtype), rng), src_layout)
    _, dst = _layout_view(np.zeros(shape, dst_dtype), dst_layout)
    copy.strided_copy(dst, src, 0)
    expected = ((x != 0) if np.dtype(dst_dtype) == np.bool_
                else half_source(x, dst_dtype).astype(dst_dtype))
    np.testing.assert_array_equal(ti.to_host(dst), expected)


@pytest.mark.parametrize("shape", COPY_SHAPES, ids=str)
@pytest.mark.parametrize("src_layout", ["contiguous", "permuted", "stepped", "broadcast",
                                        "batch_t"])
@pytest.mark.parametrize("dst_layout", ["contiguous", "permuted"])
def test_strided_copy(gpu, shape, src_layout, dst_layout, rng):
    """Every layout pair (with a cast): 1-D, row tiles, transposing tiles (several blocks each
    way, masked edges), outer dims and the leading-dim loop past MAX_DIMS."""
    if len(shape) < 2 and "batch_t" in (src_layout, dst_layout):
        pytest.skip("needs two dims")
    _check_copy(shape, src_layout, dst_layout, np.float32, BF16, rng)


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float16, np.float64),
                                    (np.int64, np.bool_), (np.bool_, np.int8),
                                    (np.float64, np.float16), (np.int64, BF16)], ids=str)
@pytest.mark.parametrize("layouts", [("permuted", "contiguous"), ("stepped", "permuted")],
                         ids=str)
def test_strided_copy_dtypes(gpu, dtypes, layouts, rng):
    _check_copy((3, 70, 90), *layouts, *dtypes, rng)


@pytest.mark.parametrize("src_dtype,dst_dtype,value,expected", [
    (np.float64, np.float16, 1 + 2 ** -11 + 2 ** -40, 1.0),
    (np.float64, BF16, 1 + 2 ** -8 + 2 ** -40, 1.0),
    (np.int64, BF16, 2 ** 24 + 2 ** 16 + 1, 2.0 ** 24)], ids=str)
def test_copy_into_half_types_rounds_through_float32(gpu, src_dtype, dst_dtype, value, expected):
    """float64 and int64 go into a half type through float32, rounded twice, as c10 converts
    (one rounding gives the next half value up for these)."""
    from genesis.backends.cuda.kernels import copy
    src = ti.to_device(np.full(5, value, src_dtype))
    dst = ti.to_device(np.zeros(5, dst_dtype))
    copy.strided_copy(dst, src, 0)
    assert (ti.to_host(dst).astype(np.float64) == expected).all()
    mantissa, exponent = math.frexp(value)
    bits = 11 if np.dtype(dst_dtype) == np.float16 else 8  # the significand's, with the hidden one
    assert round(mantissa * 2 ** bits) / 2 ** bits * 2 ** exponent != expected  # rounded once


@pytest.mark.parametrize("shape,perm", [((130, 200), (1, 0)), ((4, 33, 65), (0, 2, 1)),
                                        ((9, 300), (1, 0))], ids=str)
def test_transpose_copy_half_tiles(gpu, shape, perm, rng):
    """Half types take 128 x 128 transposing tiles: blocks past both edges."""
    from genesis.backends.cuda.kernels import copy
    x = values(shape, np.dtype(np.float16), rng)
    storage = ti.to_device(x)
    src = ti.view(storage, tuple(shape[p] for p in perm),
                  tuple(element_strides(x)[p] for p in perm))
    dst = ti.to_device(np.zeros(src.shape, np.float16))
    copy.strided_copy(dst, src, 0)
    np.testing.assert_array_equal(ti.to_host(dst), x.transpose(perm))
