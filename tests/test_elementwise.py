"""Elementwise ops against PyTorch: values and result dtypes for every dtype, broadcasting,
non-contiguous and empty inputs, Python scalars, in-place forms, gradients and error cases.

Whenever PyTorch rejects an input (an op it does not implement for a dtype, say), Genesis must
reject it with the same exception type.
"""

import math
import operator

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import genesis
from genesis.autograd import gradcheck, gradgradcheck
from helpers import (ALL_DTYPES, FLOAT_DTYPES, assert_close, lay_out, make_pair, to_torch,
                     ulp_distance)

BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
          "maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "logaddexp", "xlogy",
          "float_power", "copysign", "heaviside", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "bitwise_left_shift", "bitwise_right_shift"]
UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "sigmoid", "relu", "erf", "erfc", "reciprocal", "square", "floor", "ceil",
         "trunc", "frac", "sign", "sgn", "round", "nan_to_num", "isnan", "isinf", "isfinite",
         "signbit", "logical_not", "bitwise_not", "gelu", "silu", "softplus", "logsigmoid",
         "hardtanh", "relu6", "leaky_relu", "elu", "selu", "celu", "mish", "hardsigmoid",
         "hardswish", "softsign"]
FUNCTIONAL = {"gelu", "silu", "softplus", "logsigmoid", "hardtanh", "relu6", "leaky_relu", "elu",
              "selu", "celu", "mish", "hardsigmoid", "hardswish", "softsign"}
ALIASES = {"negative": "neg", "absolute": "abs", "arcsin": "asin", "arccos": "acos",
           "arctan": "atan", "arctan2": "atan2", "subtract": "sub", "multiply": "mul",
           "divide": "div", "greater": "gt", "greater_equal": "ge", "less": "lt",
           "less_equal": "le", "not_equal": "ne", "clip": "clamp"}
DIVISORS = {"div", "true_divide", "floor_divide", "remainder", "fmod"}
OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "div": operator.truediv, "floor_divide": operator.floordiv,
             "remainder": operator.mod, "pow": operator.pow, "bitwise_and": operator.and_,
             "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "eq": operator.eq,
             "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
             "ge": operator.ge, "bitwise_left_shift": operator.lshift,
             "bitwise_right_shift": operator.rshift}
INPLACE_OPERATORS = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
                     "div": operator.itruediv, "floor_divide": operator.ifloordiv,
                     "remainder": operator.imod, "pow": operator.ipow,
                     "bitwise_and": operator.iand, "bitwise_or": operator.ior,
                     "bitwise_xor": operator.ixor}


def torch_fn(name):
    return getattr(F, name) if name in FUNCTIONAL else getattr(torch, name)


def values(shape, dtype, rng, name=None, role=0):
    """Random numpy values for `dtype` (float64 for floats), kept to the op's integer domain."""
    if dtype is genesis.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        return rng.uniform(-3, 3, shape)
    low = 0 if dtype is genesis.uint8 else -6
    arr = rng.integers(low, 7, shape)
    if role == 1 and name in DIVISORS:
        arr[arr == 0] = 1
    if role == 1 and name in ("pow", "bitwise_left_shift", "bitwise_right_shift"):
        arr = np.abs(arr) % 4
    return arr


def pair(arr, dtype, layout="contiguous", device="cpu"):
    """(genesis, torch) tensors holding `arr` as `dtype`, bit for bit (NaN signs included);
    genesis on `device`, laid out as `layout`."""
    g = lay_out(genesis.tensor(arr, dtype=dtype, device=device), layout)
    if dtype is genesis.bfloat16:
        bits = np.array(g.cpu().numpy(), order="C").view(np.int16)
        return g, torch.from_numpy(bits).view(torch.bfloat16)
    return g, to_torch(g)


def off_cpu(operands):
    """Whether a (genesis, torch) pair among `operands` has its genesis tensor off the CPU."""
    return any(isinstance(o, tuple) and o[0].device.type != "cpu" for o in operands)


def undefined_off_cpu(exc, operands):
    """Integer division by zero raises on the CPU (torch's CPU oracle raises); on a GPU its
    result is undefined (checking would need a synchronization; torch's CUDA kernels do not
    check either), so there is nothing to compare. The CPU cases keep the check."""
    return "ZeroDivisionError" in str(exc) and off_cpu(operands)


HALVES = (torch.float16, torch.bfloat16)
# Off the CPU these compute half types in float32 and round once, as torch's CUDA kernels do;
# torch's CPU kernels (and Genesis's CPU backend) round every step: a float16 floor can be one off,
# and xlogy rounds log(y) before the product.
ROUNDED_ONCE_OFF_CPU = {"floor_divide", "remainder", "xlogy"}


def in_float32(values):
    """torch operands with half-precision tensors widened to float32."""
    return [v.float() if isinstance(v, torch.Tensor) and v.dtype in HALVES else v for v in values]


def check(fn_g, fn_t, *args, rounded_once=False):
    """Run both; if torch raises, genesis must raise the same exception type, else match.
    With `rounded_once`, a half-precision result off the CPU is compared with torch computing in
    float32 and rounding once (see ROUNDED_ONCE_OFF_CPU)."""
    t_args = [a[1] if isinstance(a, tuple) else a for a in args]
    try:
        want = fn_t(*t_args)
    except Exception as exc:  # noqa: BLE001  (any torch rejection must be mirrored)
        if undefined_off_cpu(exc, args):
            return None
        with pytest.raises(type(exc)):
            fn_g(*[a[0] if isinstance(a, tuple) else a for a in args])
        return None
    if rounded_once and off_cpu(args) and want.dtype in HALVES:
        want = fn_t(*in_float32(t_args)).to(want.dtype)
    got = fn_g(*[a[0] if isinstance(a, tuple) else a for a in args])
    assert_close(got, want)
    return got


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=str)
def test_xlogy_of_half_types_rounds_log_first_on_the_cpu(dtype, rng):
    """torch's CPU xlogy of a half type rounds log(y) to it before the product, and so does
    Genesis's CPU backend: the results are equal bit for bit (a scalar y included)."""
    x = genesis.tensor(rng.uniform(-3.0, 3.0, 2000)).to(dtype)
    y = genesis.tensor(rng.uniform(0.0, 5.0, 2000)).to(dtype)
    for other, t_other in ((y, to_torch(y)), (2.7, 2.7)):
        got = to_torch(genesis.xlogy(x, other)).float().numpy()
        want = torch.xlogy(to_torch(x), t_other).float().numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_forward_all_dtypes(name, dtype, rng, device):
    a = pair(values((3, 5), dtype, rng, name, 0), dtype, device=device)
    b = pair(values((3, 5), dtype, rng, name, 1), dtype, device=device)
    check(getattr(genesis, name), torch_fn(name), a, b, rounded_once=name in ROUNDED_ONCE_OFF_CPU)


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,)),
                                    ((0, 3), (1, 3)), ((5, 1, 3), (4, 1)), ((2, 0), ())],
                         ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasting(name, shapes, rng, device):
    dtype = genesis.int32 if name.startswith("bitwise") else genesis.float32
    a = pair(values(shapes[0], dtype, rng, name, 0), dtype, device=device)
    b = pair(values(shapes[1], dtype, rng, name, 1), dtype, device=device)
    check(getattr(genesis, name), torch_fn(name), a, b)
    check(getattr(genesis, name), torch_fn(name), b, a)


MISMATCHED = [("add", lambda m: m.zeros(2, 3) + m.zeros(4, 5)),
              ("mul", lambda m: m.zeros(2, 3) * m.zeros(4, 1, 5)),
              ("add", lambda m: m.zeros(3) + m.zeros(2, 1, 4)),
              ("where", lambda m: m.where(m.zeros(2, 3) > 0, m.zeros(3), m.zeros(4))),
              ("add", lambda m: m.zeros(2, 3).add_(m.zeros(4, 3))),
              ("lerp", lambda m: m.lerp(m.zeros(2, 3), m.zeros(4, 3), 0.5)),
              ("addcmul", lambda m: m.addcmul(m.zeros(2, 3), m.zeros(4, 3), m.zeros(3))),
              ("broadcast_tensors", lambda m: m.broadcast_tensors(
                  m.zeros(2, 3, 4), m.zeros(5, 1, 4)))]


@pytest.mark.parametrize("name, call", MISMATCHED, ids=[str(i) for i in range(len(MISMATCHED))])
def test_shapes_that_do_not_broadcast_are_refused_in_torchs_words(name, call):
    """torch joins the operands left to right and names the first mismatch from the right
    ("The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension
    1"); genesis says the same between the op's name and the operands' shapes."""
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(genesis)
    assert str(got.value).startswith(f"{name}: {expected.value} (shapes [")


@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int16], ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "div", "pow", "maximum", "remainder", "lt",
                                  "bitwise_xor", "atan2"])
def test_binary_noncontiguous(name, dtype, layout, rng, device):
    a = pair(values((4, 3), dtype, rng, name, 0), dtype, layout, device=device)
    b = pair(values((4, 3), dtype, rng, name, 1), dtype, "transposed", device=device)
    assert not a[0].is_contiguous()
    check(getattr(genesis, name), torch_fn(name), a, b, rounded_once=name in ROUNDED_ONCE_OFF_CPU)


SCALARS = [2, -3, 2.5, -0.5, True, False, 0]


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operators_with_python_scalars(name, dtype, scalar, rng, device):
    op = OPERATORS[name]
    x = pair(values((2, 3), dtype, rng, name, 1), dtype, device=device)
    if scalar == 0 and name not in DIVISORS:
        scalar = 0
    rounded_once = name in ROUNDED_ONCE_OFF_CPU
    check(op, op, x, scalar, rounded_once=rounded_once)
    check(lambda s, t: op(s, t), lambda s, t: op(s, t), scalar, x, rounded_once=rounded_once)


NUMPY_SCALARS = [np.float32(2.5), np.float16(-0.5), np.float64(1.5), np.int64(-3), np.int32(2),
                 np.uint8(3), np.bool_(True)]


@pytest.mark.parametrize("scalar", NUMPY_SCALARS, ids=lambda s: f"{type(s).__name__}({s})")
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operators_and_functions_with_numpy_scalars(name, scalar, rng, device):
    """A numpy scalar on either side of an operator (in place too), or as a function's other
    operand, reads as the Python number torch reads it as (np.bool_ as a float): a tensor of
    torch's dtype comes back, not numpy's array."""
    op, inplace = OPERATORS[name], INPLACE_OPERATORS.get(name)
    for dtype in (genesis.float32, genesis.int32, genesis.bool, genesis.float16):
        x = pair(values((2, 3), dtype, rng, name, 1), dtype, device=device)
        check(op, op, x, scalar)
        check(lambda s, t: op(s, t), lambda s, t: op(s, t), scalar, x)
        check(getattr(genesis, name), torch_fn(name), x, scalar)
        if inplace is not None:
            check(lambda t, s: inplace(t.clone(), s), lambda t, s: inplace(t.clone(), s), x,
                  scalar)


def test_functions_with_numpy_scalars_differentiate(rng, device):
    """Numpy scalars as operands and as `alpha` give torch's values and gradients."""
    g, t = pair(values((3,), genesis.float32, rng, "mul", 1), genesis.float32, device=device)
    g.requires_grad_()
    t.requires_grad_()
    outs = [(fn(g, np.float32(1.5)), fn(t, np.float32(1.5)))
            for fn in (lambda x, s: s * x + x ** s, lambda x, s: x.pow(s) / s)]
    outs.append((genesis.add(g, np.int64(2), alpha=np.float32(0.5)),
                 torch.add(t, np.int64(2), alpha=np.float32(0.5))))
    for got, want in outs:
        assert_close(got, want)
        got.sum().backward()
        want.sum().backward()
    assert_close(g.grad, t.grad)


@pytest.mark.parametrize("scalar", [3, 1.5, True], ids=repr)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "fmod",
                                  "remainder", "atan2", "eq", "logical_and", "bitwise_or",
                                  "xlogy", "copysign", "float_power", "floor_divide"])
def test_functions_with_python_scalar_other(name, scalar, rng, device):
    for dtype in (genesis.float32, genesis.int32, genesis.bool, genesis.float16):
        x = pair(values((4,), dtype, rng, name, 1), dtype, device=device)
        check(lambda t, s: getattr(genesis, name)(t, s), lambda t, s: torch_fn(name)(t, s),
              x, scalar, rounded_once=name in ROUNDED_ONCE_OFF_CPU)


TIER_DTYPES = [genesis.bool, genesis.uint8, genesis.int8, genesis.int32, genesis.int64,
               genesis.float16, genesis.bfloat16, genesis.float32, genesis.float64]


@pytest.mark.parametrize("name", ["add", "mul", "div", "maximum", "eq", "atan2", "pow"])
@pytest.mark.parametrize("dtype0", TIER_DTYPES, ids=str)
def test_zero_dim_tensor_promotion(name, dtype0, rng, device):
    for dtype1 in TIER_DTYPES:
        zero_d = pair(values((), dtype0, rng, name, 1), dtype0, device=device)
        full = pair(values((3,), dtype1, rng, name, 0), dtype1, device=device)
        check(getattr(genesis, name), torch_fn(name), full, zero_d)
        check(getattr(genesis, name), torch_fn(name), zero_d, full)


def _unary_values(name, dtype, shape, rng):
    arr = values(shape, dtype, rng)
    if dtype.is_floating_point and name == "acosh":
        arr = np.abs(arr) + 1
    return arr


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_forward_all_dtypes(name, dtype, rng, device):
    x = pair(_unary_values(name, dtype, (4, 5), rng), dtype, device=device)
    check(getattr(genesis, name), torch_fn(name), x)


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1e-8, 30.0, -30.0, 100.0, -100.0,
           float("inf"), float("-inf"), float("nan"), 3.0e38, -3.0e38]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(name, dtype, device):
    special = SPECIAL
    if name == "gelu":
        # torch's vectorized CPU gelu overflows in an intermediate (inf at 3e38, nan at +-inf);
        # Genesis returns the values (3e38, inf, -0)
        special = [v for v in SPECIAL if not abs(v) > 1e30]
    x = pair(np.array(special), dtype, device=device)
    check(getattr(genesis, name), torch_fn(name), x)


@pytest.mark.parametrize("name", ["exp", "log", "sigmoid", "relu", "abs", "floor", "gelu",
                                  "isnan", "sign", "bitwise_not", "logical_not", "square"])
@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.int64], ids=str)
def test_unary_noncontiguous_0d_empty(name, layout, dtype, rng, device):
    x = pair(values((4, 3), dtype, rng), dtype, layout, device=device)
    check(getattr(genesis, name), torch_fn(name), x)
    for shape in ((), (0, 3)):
        check(getattr(genesis, name), torch_fn(name),
              pair(values(shape, dtype, rng), dtype, device=device))


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_aliases(alias, name):
    assert getattr(genesis, alias) is getattr(genesis, name)


KWARG_CASES = [
    ("round", {"decimals": 2}), ("round", {"decimals": -1}), ("nan_to_num", {"nan": 1.5}),
    ("nan_to_num", {"posinf": 9.0, "neginf": -9.0}), ("gelu", {"approximate": "tanh"}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.5}), ("celu", {"alpha": 2.0}),
]


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("name,kwargs", KWARG_CASES, ids=str)
def test_unary_keyword_arguments(name, kwargs, dtype, rng, device):
    arr = np.concatenate([values((12,), dtype, rng) * 10, SPECIAL])
    check(lambda x: getattr(genesis, name)(x, **kwargs), lambda x: torch_fn(name)(x, **kwargs),
          pair(arr, dtype, device=device))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("bounds", [(-1, 2), (None, 0.5), (-0.5, None), (2, 1), (1, 1)], ids=str)
def test_clamp(bounds, dtype, rng, device):
    x = pair(np.concatenate([values((10,), dtype, rng), [0]]), dtype, device=device)
    lo, hi = bounds
    check(lambda t: genesis.clamp(t, lo, hi), lambda t: torch.clamp(t, lo, hi), x)
    if lo is not None:
        check(lambda t: genesis.clamp_min(t, lo), lambda t: torch.clamp_min(t, lo), x)
    if hi is not None:
        check(lambda t: genesis.clamp_max(t, hi), lambda t: torch.clamp_max(t, hi), x)
    lo_t = pair(values((10,), dtype, rng) - 1, dtype, device=device) if lo is not None else None
    check(lambda t, m: genesis.clamp(t, m), lambda t, m: torch.clamp(t, m),
          pair(values((10,), dtype, rng), dtype, device=device), lo_t)


@pytest.mark.parametrize("bounds", [(-1000, 1000), (None, 300), (-129, None), (-1.5, 2.5)],
                         ids=str)
def test_clamp_scalar_bounds_out_of_range(bounds, device):
    x = pair(np.array([1, -2, 100]), genesis.int8, device=device)
    check(lambda t: genesis.clamp(t, *bounds), lambda t: torch.clamp(t, *bounds), x)


def test_clamp_nan_and_requires_bound(device):
    x = pair(np.array([np.nan, 1.0, -5.0]), genesis.float32, device=device)
    check(lambda t: t.clamp(-1, 1), lambda t: t.clamp(-1, 1), x)
    with pytest.raises(RuntimeError):
        genesis.clamp(x[0])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_where(dtype, rng, device):
    cond = pair(rng.random((3, 4)) < 0.5, genesis.bool, device=device)
    a = pair(values((3, 1), dtype, rng), dtype, device=device)
    b = pair(values((4,), dtype, rng), dtype, device=device)
    check(genesis.where, torch.where, cond, a, b)
    check(genesis.where, torch.where, cond, a, 2.5)
    check(genesis.where, torch.where, cond, 1, b)
    other = pair(values((4,), genesis.float64, rng), genesis.float64, device=device)
    check(genesis.where, torch.where, cond, a, other)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_lerp_addcmul_addcdiv(dtype, rng, device):
    s = pair(values((3, 4), dtype, rng), dtype, device=device)
    e = pair(values((4,), dtype, rng), dtype, device=device)
    w = pair(rng.uniform(-0.5, 1.5, (3, 1)), dtype, device=device)
    check(genesis.lerp, torch.lerp, s, e, w)
    check(genesis.lerp, torch.lerp, s, e, 0.3)
    check(genesis.lerp, torch.lerp, s, e, 0.75)
    d = pair(rng.uniform(0.5, 2, (3, 4)), dtype, device=device)
    for value in (1, 0.5, -2):
        check(lambda a, b, c: genesis.addcmul(a, b, c, value=value),
              lambda a, b, c: torch.addcmul(a, b, c, value=value), s, e, d)
        check(lambda a, b, c: genesis.addcdiv(a, b, c, value=value),
              lambda a, b, c: torch.addcdiv(a, b, c, value=value), s, e, d)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes(mode, dtype, rng, device):
    a = pair(values((4, 5), dtype, rng) * 3, dtype, device=device)
    b = pair(values((4, 5), dtype, rng, "div", 1), dtype, device=device)
    check(lambda x, y: genesis.div(x, y, rounding_mode=mode),
          lambda x, y: torch.div(x, y, rounding_mode=mode), a, b, rounded_once=mode == "floor")
    check(lambda x: genesis.div(x, -2, rounding_mode=mode),
          lambda x: torch.div(x, -2, rounding_mode=mode), a, rounded_once=mode == "floor")
    with pytest.raises(ValueError):
        genesis.div(a[0], b[0], rounding_mode="nearest")


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_division_has_zero_gradients_and_floor_divide_none(mode, rng, device):
    """A rounded division is a step function: zero gradients for both operands, as torch's;
    floor_divide (`//`) records a node without a derivative, whose backward raises."""
    (a, ta), (b, tb) = (make_pair((3, 4), requires_grad=True, rng=rng, device=device)
                        for _ in range(2))
    genesis.div(a, b * 2, rounding_mode=mode).sum().backward()
    torch.div(ta, tb * 2, rounding_mode=mode).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        (a // 2).sum().backward()


def _heaviside_record(lib, x, values):
    """heaviside's values and node, and what a backward through it (beside a differentiable
    term) raises."""
    out = lib.heaviside(x, values)
    shown = repr(out).replace("genesis", "torch")
    with pytest.raises(RuntimeError) as caught:
        (out * x + x).sum().backward()
    return out.detach().numpy(), shown, out.requires_grad, str(caught.value)


@pytest.mark.parametrize("grad_values", [False, True])
def test_heaviside_records_a_node_without_derivative_as_torch(grad_values, rng):
    """heaviside records a NotImplemented node whatever operand requires grad (a backward
    through it raised nothing: its output was a constant), and computes as torch's."""
    x = rng.integers(-2, 3, (3, 5)).astype(np.float64)
    values = rng.standard_normal((1, 5))
    results = []
    for lib in (genesis, torch):
        xs = lib.tensor(x).t().requires_grad_()  # non-contiguous
        vs = lib.tensor(values).t().requires_grad_(grad_values)
        results.append(_heaviside_record(lib, xs, vs))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1:] == results[1][1:]


@pytest.mark.parametrize("dtype", [genesis.int8, genesis.int32, genesis.int64, genesis.uint8],
                         ids=str)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "div_trunc", "div_floor"])
def test_integer_division_by_zero(name, dtype):
    op, _, mode = name.partition("_")
    fn_g = (lambda a, b: genesis.div(a, b, rounding_mode=mode)) if op == "div" \
        else getattr(genesis, name)
    fn_t = (lambda a, b: torch.div(a, b, rounding_mode=mode)) if op == "div" \
        else getattr(torch, name)
    a = pair(np.array([4, 5, 6]), dtype)
    b = pair(np.array([1, 0, 2]), dtype)
    check(fn_g, fn_t, a, b)
    check(lambda x: fn_g(x, 0), lambda x: fn_t(x, 0), a)


def test_integer_true_division_by_zero_is_float(device):
    a = pair(np.array([1, 0, -1]), genesis.int64, device=device)
    zeros = pair(np.array([0, 0, 0]), genesis.int64, device=device)
    check(operator.truediv, operator.truediv, a, zeros)


@pytest.mark.parametrize("dtype", [genesis.int8, genesis.uint8, genesis.int32, genesis.int64],
                         ids=str)
def test_integer_overflow_wraps(dtype, device):
    info = np.iinfo(dtype.numpy_dtype)
    x = pair(np.array([info.max, info.min, info.max // 2 + 1]), dtype, device=device)
    for op in (operator.add, operator.mul, operator.sub):
        check(op, op, x, x)
    check(lambda t: t * 3, lambda t: t * 3, x)
    check(lambda t: t + 1, lambda t: t + 1, x)


def test_integer_negative_power_raises():
    x = pair(np.array([2, 3]), genesis.int64)
    check(lambda t: t ** -1, lambda t: t ** -1, x)
    check(genesis.pow, torch.pow, x, pair(np.array([1, -2]), genesis.int64))


def test_pow_with_tensor_exponent_and_scalar_base(rng, device):
    e = pair(rng.uniform(-2, 2, (5,)), genesis.float32, device=device)
    check(lambda t: 2 ** t, lambda t: 2 ** t, e)
    check(lambda t: genesis.pow(2.5, t), lambda t: torch.pow(2.5, t), e)
    ints = pair(np.array([0, 1, 2, 3]), genesis.int32, device=device)
    check(lambda t: 3 ** t, lambda t: 3 ** t, ints)
    check(lambda t: 0.5 ** t, lambda t: 0.5 ** t, ints)


def test_errors(device):
    a, b = genesis.ones(2, 3, device=device), genesis.ones(3, 2, device=device)
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[3, 2\]"):
        a + b
    with pytest.raises(RuntimeError):
        flags = genesis.ones(2, dtype=genesis.bool, device=device)
        flags - flags
    with pytest.raises(RuntimeError):
        genesis.ones(2, dtype=genesis.bool, device=device) - True
    with pytest.raises(RuntimeError):
        genesis.sub(True, genesis.ones(2, dtype=genesis.bool, device=device))
    with pytest.raises(RuntimeError):
        -genesis.ones(2, dtype=genesis.bool, device=device)
    with pytest.raises(TypeError):
        genesis.add(a, "x")
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        genesis.exp([1.0, 2.0])
    with pytest.raises(RuntimeError):
        genesis.ones(2, device=device) & genesis.ones(2, device=device)


# in-place forms

INPLACE_BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
                  "pow", "maximum", "minimum", "atan2", "hypot", "logaddexp", "xlogy",
                  "copysign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                  "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                  "bitwise_left_shift", "bitwise_right_shift", "float_power", "fmax", "fmin"]
INPLACE_BINARY = [n for n in INPLACE_BINARY if hasattr(torch.Tensor, n + "_")]


def _inplace_check(fn, self_pair, *others, rounded_once=False):
    """In-place on fresh copies: same result as torch, or same error with self unchanged
    (`rounded_once` as in check)."""
    g, t = self_pair[0].clone(), self_pair[1].clone()
    before = g.cpu().numpy().copy()
    version = g._version
    t_others = [o[1] if isinstance(o, tuple) else o for o in others]
    try:
        want = fn(t, *t_others)
    except Exception as exc:  # noqa: BLE001
        if undefined_off_cpu(exc, (self_pair, *others)):
            return
        with pytest.raises(type(exc)):
            fn(g, *[o[0] if isinstance(o, tuple) else o for o in others])
        np.testing.assert_array_equal(g.cpu().numpy(), before)
        assert g._version == version
        return
    if rounded_once and off_cpu((self_pair, *others)) and want.dtype in HALVES:
        want = fn(self_pair[1].float(), *in_float32(t_others)).to(want.dtype)
    got = fn(g, *[o[0] if isinstance(o, tuple) else o for o in others])
    assert got is g
    assert_close(g, want)
    assert g._version > version


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", INPLACE_BINARY)
def test_inplace_binary(name, dtype, rng, device):
    x = pair(values((3, 4), dtype, rng, name, 0), dtype, device=device)
    rounded_once = name in ROUNDED_ONCE_OFF_CPU

    def op(s, o):
        return getattr(s, name + "_")(o)

    for other_dtype in (dtype, genesis.float32, genesis.int64, genesis.bool):
        y = pair(values((4,), other_dtype, rng, name, 1), other_dtype, device=device)
        _inplace_check(op, x, y, rounded_once=rounded_once)
    for scalar in (2, 1.5, True):
        _inplace_check(op, x, scalar, rounded_once=rounded_once)
    bigger = pair(values((2, 3, 4), dtype, rng, name, 1), dtype, device=device)
    _inplace_check(op, x, bigger, rounded_once=rounded_once)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(INPLACE_OPERATORS))
def test_inplace_operators(name, dtype, rng, device):
    op = INPLACE_OPERATORS[name]
    rounded_once = name in ROUNDED_ONCE_OFF_CPU
    x = pair(values((3, 4), dtype, rng, name, 0), dtype, device=device)
    for scalar in (2, 1.5, True):
        _inplace_check(op, x, scalar, rounded_once=rounded_once)
    _inplace_check(op, x, pair(values((3, 4), dtype, rng, name, 1), dtype, device=device),
                   rounded_once=rounded_once)


@pytest.mark.parametrize("dtype", [genesis.int8, genesis.uint8, genesis.int32, genesis.int64],
                         ids=str)
def test_inplace_integer_arithmetic_writes_directly(dtype, rng, device, monkeypatch):
    """add_, sub_ and mul_ of an integer tensor by Python ints or tensors of its dtype write it
    directly, no temporary and copy (a step counter's add_(1)), wrapping as torch's do."""
    from genesis.ops.elementwise import inplace_plans
    monkeypatch.setattr(inplace_plans, "write_result", None)
    x = pair(values((3, 4), dtype, rng, "add", 0), dtype, device=device)
    other = pair(values((4,), dtype, rng, "add", 1), dtype, device=device)
    for name, operand in (("add_", 1), ("mul_", 1000), ("sub_", other), ("add_", 2 ** 40)):
        _inplace_check(lambda s, o, name=name: getattr(s, name)(o), x, operand)


INPLACE_UNARY = [n for n in UNARY if n not in FUNCTIONAL and hasattr(torch.Tensor, n + "_")]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_inplace_unary(name, dtype, rng, device):
    x = pair(_unary_values(name, dtype, (3, 4), rng), dtype, device=device)
    _inplace_check(lambda s: getattr(s, name + "_")(), x)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.int32, genesis.uint8], ids=str)
def test_inplace_clamp_lerp_addcmul(dtype, rng, device):
    x = pair(values((3, 4), dtype, rng), dtype, device=device)
    _inplace_check(lambda s: s.clamp_(-1, 2), x)
    _inplace_check(lambda s: s.clamp_(-1.5, 2.5), x)
    _inplace_check(lambda s: s.clamp_min_(0), x)
    _inplace_check(lambda s: s.clamp_max_(1), x)
    y = pair(values((3, 4), dtype, rng), dtype, device=device)
    _inplace_check(lambda s, o: s.addcmul_(o, o, value=2), x, y)
    _inplace_check(lambda s, o: s.addcdiv_(o, o, value=2), x, y)
    _inplace_check(lambda s, o: s.lerp_(o, 0.5), x, y)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_inplace_writes_in_any_layout(dtype, rng, device):
    """The ops that write their destination directly: an operand that is the destination
    itself, broadcast operands, strided destinations and views, 0-d and empty tensors, all as
    torch computes them, and the write seen through the base and its version."""
    def fresh(shape, layout="contiguous"):
        return pair(values(shape, dtype, rng), dtype, layout, device=device)

    x, row = fresh((5, 6)), fresh((6,))
    cases = [
        lambda s: s.mul_(s), lambda s: s.add_(s), lambda s: s.add_(s, alpha=3),
        lambda s: s.addcmul_(s, s, value=0.5),
        lambda s: s.addcdiv_(s, s, value=2), lambda s: s.lerp_(s, 0.25), lambda s: s.div_(1.5),
        lambda s: s.sub_(3), lambda s: s.exp_(), lambda s: s.sigmoid_(),
        lambda s: s.clamp_(max=0.5), lambda s: s.clamp_min_(-1), lambda s: s.clamp_(-2, 1.5),
    ]
    for case in cases:
        _inplace_check(case, x, rounded_once=True)
    for case in (lambda s, o: s.add_(o), lambda s, o: s.add_(o, alpha=-0.5),
                 lambda s, o: s.sub_(o, alpha=2), lambda s, o: s.lerp_(o, 0.5),
                 lambda s, o: s.clamp_(min=o), lambda s, o: s.clamp_(max=o),
                 lambda s, o: s.addcmul_(o, o, value=2)):
        _inplace_check(case, x, row, rounded_once=True)
        _inplace_check(case, fresh((6, 5), "transposed"), fresh((5,)), rounded_once=True)
        _inplace_check(case, fresh(()), fresh(()), rounded_once=True)
        _inplace_check(case, fresh((0, 6)), row, rounded_once=True)
    base_g, base_t = fresh((4, 6))
    version = base_g._version
    for b in (base_g, base_t):
        b[1:3].mul_(2)
        b[:, 1].add_(b[:, 0].clone())
    assert_close(base_g, base_t)
    assert base_g._version == version + 2


def test_inplace_cast_failure_leaves_tensor_unchanged(device):
    x = genesis.tensor([1, 2, 3], device=device)
    ptr = x.data_ptr()
    with pytest.raises(RuntimeError, match="Float|float|cast"):
        x.add_(1.5)
    with pytest.raises(RuntimeError):
        x += genesis.tensor([0.5, 0.5, 0.5], device=device)
    with pytest.raises(RuntimeError):
        x /= 2
    assert x.tolist() == [1, 2, 3] and x._version == 0 and x.data_ptr() == ptr
    with pytest.raises(RuntimeError):
        x.add_(genesis.ones(2, 3, dtype=genesis.int64, device=device))
    assert x.tolist() == [1, 2, 3]


def test_inplace_on_leaf_requiring_grad(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.exp_()
    with genesis.no_grad():
        x.add_(1)
        x *= 2
    assert x.tolist() == [4.0, 4.0, 4.0] and x.grad_fn is None and x.requires_grad


def test_inplace_operator_keeps_identity_and_grad(rng, device):
    a_g, a_t = pair(rng.uniform(0.5, 2, (3, 4)), genesis.float64, device=device)
    a_g.requires_grad_(True)
    a_t.requires_grad_(True)
    outs = []
    for a in (a_g, a_t):
        y = a * 2
        ident = id(y)
        y += a
        y *= a
        y.div_(3.0)
        y.exp_()
        assert id(y) == ident
        y.sum().backward()
        outs.append(y)
    assert_close(outs[0], outs[1])
    assert_close(a_g.grad, a_t.grad)
    assert outs[0].grad_fn.name() != "AddBackward0"


def test_inplace_self_overlap_rejected(device):
    x = genesis.arange(3.0, device=device).expand(2, 3).contiguous()
    expanded = x[0].expand(2, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        expanded.add_(1)


def test_inplace_saved_tensor_modified_raises(device):
    x = genesis.tensor([0.5, 1.0], requires_grad=True, device=device)
    y = x.exp()
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# gradients

GRAD_BINARY = {
    "add": ("any", "any"), "sub": ("any", "any"), "mul": ("any", "any"),
    "div": ("any", "away"), "true_divide": ("any", "away"), "pow": ("pos", "any"),
    "maximum": ("any", "any"), "minimum": ("any", "any"), "fmax": ("any", "any"),
    "fmin": ("any", "any"), "atan2": ("any", "away"), "hypot": ("away", "away"),
    "logaddexp": ("any", "any"), "xlogy": ("any", "pos"), "remainder": ("any", "away"),
    "fmod": ("any", "away"), "float_power": ("pos", "any"), "copysign": ("any", "away"),
}
GRAD_UNARY = {
    "neg": "any", "abs": "away", "exp": "any", "exp2": "any", "expm1": "any", "log": "pos",
    "log2": "pos", "log10": "pos", "log1p": "pos", "sqrt": "pos", "rsqrt": "pos", "sin": "any",
    "cos": "any", "tan": "unit", "asin": "unit", "acos": "unit", "atan": "any", "sinh": "any",
    "cosh": "any", "tanh": "any", "asinh": "any", "acosh": "above1", "atanh": "unit",
    "sigmoid": "any", "relu": "away", "erf": "any", "erfc": "any", "reciprocal": "away",
    "square": "any", "floor": "any", "ceil": "any", "trunc": "any", "frac": "any",
    "sign": "any", "sgn": "any", "round": "any", "nan_to_num": "any", "gelu": "any",
    "silu": "any", "softplus": "any", "logsigmoid": "any", "hardtanh": "away",
    "relu6": "away", "leaky_relu": "away", "elu": "away", "selu": "away", "celu": "away",
    "mish": "any", "hardsigmoid": "away", "hardswish": "away", "softsign": "any",
}


def domain_values(domain, shape, rng):
    """Inputs where the op is smooth: away from poles, kinks and the edges of its domain."""
    x = rng.uniform(-2, 2, shape)
    if domain == "pos":
        return rng.uniform(0.5, 2.5, shape)
    if domain == "away":
        return np.sign(x + (x == 0)) * rng.uniform(0.5, 2.5, shape)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if domain == "above1":
        return rng.uniform(1.5, 3, shape)
    return x


def _grad_pair(domain, shape, dtype, rng, device="cpu"):
    g, t = pair(domain_values(domain, shape, rng), dtype, device=device)
    return g.requires_grad_(True), t.requires_grad_(True)


def _compare_grads(fn_g, fn_t, inputs, rng):
    out_g = fn_g(*[i[0] for i in inputs])
    out_t = fn_t(*[i[1] for i in inputs])
    assert_close(out_g, out_t)
    upstream = rng.standard_normal(tuple(out_t.shape))
    up_g, up_t = pair(upstream, genesis.dtypes.from_numpy_dtype(
        np.dtype(str(out_t.dtype).replace("torch.", ""))), device=out_g.device)
    out_g.backward(up_g)
    out_t.backward(up_t)
    for g, t in inputs:
        assert_close(g.grad, torch.zeros_like(t) if t.grad._is_zerotensor() else t.grad)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
@pytest.mark.parametrize("name", sorted(GRAD_BINARY))
def test_binary_gradients(name, dtype, rng, device):
    da, db = GRAD_BINARY[name]
    a = _grad_pair(da, (3, 1), dtype, rng, device=device)
    b = _grad_pair(db, (1, 4), dtype, rng, device=device)
    _compare_grads(getattr(genesis, name), torch_fn(name), [a, b], rng)
    c = _grad_pair(da, (2, 3), dtype, rng, device=device)
    try:
        torch_fn(name)(c[1], 1.5)
    except TypeError:
        with pytest.raises(TypeError):
            getattr(genesis, name)(c[0], 1.5)
        return
    _compare_grads(lambda x: getattr(genesis, name)(x, 1.5), lambda x: torch_fn(name)(x, 1.5),
                   [c], rng)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
@pytest.mark.parametrize("name", sorted(GRAD_UNARY))
def test_unary_gradients(name, dtype, rng, device):
    x = _grad_pair(GRAD_UNARY[name], (3, 4), dtype, rng, device=device)
    _compare_grads(getattr(genesis, name), torch_fn(name), [x], rng)


def test_reflected_gradients(rng, device):
    x = _grad_pair("pos", (5,), genesis.float64, rng, device=device)
    _compare_grads(lambda t: 2.0 ** t - 3 / t + 1 - t * 4 % 1.5,
                   lambda t: 2.0 ** t - 3 / t + 1 - t * 4 % 1.5, [x], rng)


@pytest.mark.parametrize("name", sorted(GRAD_BINARY))
def test_binary_gradcheck(name, rng, device):
    da, db = GRAD_BINARY[name]
    a = genesis.tensor(domain_values(da, (2, 1), rng), requires_grad=True, device=device)
    b = genesis.tensor(domain_values(db, (3,), rng), requires_grad=True, device=device)
    fn = getattr(genesis, name)
    assert gradcheck(fn, (a, b))
    if name not in ("remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "copysign"):
        assert gradgradcheck(fn, (a, b))


SMOOTH = sorted(n for n, d in GRAD_UNARY.items()
                if n not in ("floor", "ceil", "trunc", "round", "sign", "sgn", "frac", "abs",
                             "relu", "hardtanh", "relu6", "leaky_relu", "hardsigmoid",
                             "nan_to_num"))


@pytest.mark.parametrize("name", SMOOTH)
def test_unary_gradcheck_gradgradcheck(name, rng, device):
    x = genesis.tensor(domain_values(GRAD_UNARY[name], (5,), rng), requires_grad=True,
                       device=device)
    fn = getattr(genesis, name)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", ["clamp", "where", "lerp", "addcmul", "addcdiv"])
def test_other_gradchecks(name, rng, device):
    a = genesis.tensor(domain_values("any", (3, 1), rng), requires_grad=True, device=device)
    b = genesis.tensor(domain_values("away", (4,), rng), requires_grad=True, device=device)
    c = genesis.tensor(domain_values("away", (3, 4), rng), requires_grad=True, device=device)
    cond = genesis.tensor(rng.random((3, 4)) < 0.5, device=device)
    fns = {
        "clamp": (lambda x, lo, hi: genesis.clamp(x, lo * 0 - 0.5, hi * 0 + 0.7), (c, a, b)),
        "where": (lambda x, y: genesis.where(cond, x, y), (a, b)),
        "lerp": (genesis.lerp, (a, b, c)),
        "addcmul": (lambda x, y, z: genesis.addcmul(x, y, z, value=0.5), (a, b, c)),
        "addcdiv": (lambda x, y, z: genesis.addcdiv(x, y, z, value=-2), (a, b, c)),
    }
    fn, inputs = fns[name]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_pow_gradient_at_zero(device):
    for base, exp in ((0.0, 2.0), (0.0, 0.0), (2.0, 0.0), (0.0, 0.5)):
        x_g = genesis.tensor([base], dtype=genesis.float64, requires_grad=True, device=device)
        e_g = genesis.tensor([exp], dtype=genesis.float64, requires_grad=True, device=device)
        x_t = torch.tensor([base], dtype=torch.float64, requires_grad=True)
        e_t = torch.tensor([exp], dtype=torch.float64, requires_grad=True)
        (x_g ** e_g).sum().backward()
        (x_t ** e_t).sum().backward()
        assert_close(x_g.grad, x_t.grad)
        assert_close(e_g.grad, e_t.grad)


def test_maximum_tie_splits_gradient(device):
    a_g, a_t = pair(np.array([1.0, 2.0, 3.0]), genesis.float64, device=device)
    b_g, b_t = pair(np.array([1.0, 1.0, 4.0]), genesis.float64, device=device)
    for name in ("maximum", "minimum", "fmax", "fmin"):
        _compare_grads(getattr(genesis, name), getattr(torch, name),
                       [(a_g.detach().requires_grad_(), a_t.detach().requires_grad_()),
                        (b_g.detach().requires_grad_(), b_t.detach().requires_grad_())],
                       np.random.default_rng())


@pytest.mark.parametrize("name", ["add", "mul", "div", "pow", "exp", "log", "sqrt", "tanh",
                                  "sigmoid", "erf", "gelu", "silu", "softplus", "mish", "elu",
                                  "logsigmoid", "hardswish"])
def test_half_gradients(name, rng, device):
    for dtype in (genesis.float16, genesis.bfloat16):
        inputs = [_grad_pair("pos", (4,), dtype, rng, device=device)]
        if name in ("add", "mul", "div", "pow"):
            domain = "pos" if name == "div" else "any"
            inputs.append(_grad_pair(domain, (4,), dtype, rng, device=device))
        _compare_grads(getattr(genesis, name), torch_fn(name), inputs, rng)


def _gelu_slope(x, approximate):
    """d gelu / dx in float64, by PyTorch's formulas."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(beta * (x + kappa * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x * math.sqrt(0.5)))
    return cdf + x * np.exp(x * x * -0.5) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_half_gelu_gradient_is_within_an_ulp(approximate, dtype, rng, device):
    """Half gelu gradients are computed in float32 and rounded once, as PyTorch's backward
    kernel does: within one ulp of the float64 value rounded once (float32's erf and tanh differ
    by an ulp between numpy, libdevice and PyTorch's SIMD approximations)."""
    np_dtype = dtype.numpy_dtype
    x = rng.uniform(-4, 4, 4096).astype(np_dtype)
    dy = rng.uniform(-2, 2, 4096).astype(np_dtype)
    g = genesis.tensor(x, device=device).requires_grad_()
    genesis.nn.functional.gelu(g, approximate=approximate).backward(
        genesis.tensor(dy, device=device))
    expected = dy.astype(np.float64) * _gelu_slope(x.astype(np.float64), approximate)
    actual = g.grad.cpu().numpy()
    # where the slope's O(1) terms cancel, float32's own rounding of them (a few 2^-24) can
    # exceed an ulp of the small result
    float32_noise = np.abs(actual.astype(np.float64) - expected) <= 16 * 2.0**-24 * np.abs(dy)
    assert np.all((ulp_distance(actual, expected.astype(np_dtype)) <= 1) | float32_noise)


def test_int_ops_do_not_require_grad(device):
    x = genesis.tensor([1.0, 2.0], requires_grad=True, device=device)
    assert not (x > 1).requires_grad
    assert not x.isnan().requires_grad
    assert (x * 2).grad_fn.name() == "MulBackward0"
    assert genesis.exp(x).grad_fn.name() == "ExpBackward0"


UNTRACKED_SKIPS = {"add": lambda x, w: x + w, "sub": lambda x, w: x.sub(w, alpha=2),
                   "mul": lambda x, w: x * w, "div": lambda x, w: x / w,
                   "true_divide": lambda x, w: x.true_divide(w), "pow": lambda x, w: x ** w,
                   "maximum": lambda x, w: x.maximum(w * 2), "fmod": lambda x, w: x.fmod(w),
                   "atan2": lambda x, w: x.atan2(w), "exp": lambda x, w: x.exp(),
                   "tanh": lambda x, w: x.tanh()}


@pytest.mark.parametrize("op", list(UNTRACKED_SKIPS))
def test_untracked_calls_record_a_graph_exactly_when_pytorch_does(op, rng, device):
    """The ops that skip their autograd Function when no graph records the call: under no_grad,
    with inputs needing no gradient, and on a view whose base gained a history by an in-place
    write after the view was made (which must be recorded) they agree with PyTorch."""
    fn = UNTRACKED_SKIPS[op]
    xs, ws = rng.uniform(1, 2, (2, 4, 5)).astype(np.float32)
    results = []
    for lib, where in ((genesis, device), (torch, "cpu")):
        x = lib.tensor(xs, device=where)
        w = lib.tensor(ws, device=where, requires_grad=True)
        with lib.no_grad():
            assert fn(w, w).grad_fn is None and not fn(w, w).requires_grad
        plain = fn(x, x)
        assert not plain.requires_grad and plain.grad_fn is None
        base = x.clone()
        view = base[1:]
        base.mul_(w)
        out = fn(view, view)
        assert out.requires_grad and out.grad_fn is not None
        out.sum().backward()
        results.append((plain, w.grad))
    (g_plain, g_grad), (t_plain, t_grad) = results
    assert_close(g_plain, t_plain)
    assert_close(g_grad, t_grad)


@pytest.mark.parametrize("op, scalar, keyword, n_tensors", [
    ("add", 2.5, "alpha", 1), ("sub", -0.5, "alpha", 1), ("addcmul", 0.5, "value", 2),
    ("addcdiv", 2, "value", 2)], ids=["add", "sub", "addcmul", "addcdiv"])
def test_deprecated_scalar_first_overloads_as_torch(op, scalar, keyword, n_tensors, rng, device):
    """PyTorch's deprecated `x.add(alpha, other)`, `x.addcmul(value, t1, t2)`: the same values and
    gradients as today's keyword forms, in place too; bad combinations raise PyTorch's
    TypeError. (It warns once a process, so a test cannot count on seeing the warning.)"""
    pairs = [make_pair((3, 4), genesis.float64, 0.5, 2.0, device=device, rng=rng,
                       requires_grad=True) for _ in range(n_tensors + 1)]
    (x, *others), (tx, *t_others) = zip(*pairs)
    out = getattr(x, op)(scalar, *others)
    expected = getattr(tx, op)(*t_others, **{keyword: scalar})
    assert_close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for g, t in zip([x] + others, [tx] + t_others):
        assert_close(g.grad, t.grad)
    assert_close(getattr(genesis, op)(x, scalar, *others), expected)
    y = x.detach().clone()
    getattr(y, op + "_")(scalar, *others)
    assert_close(y, expected)
    with pytest.raises(TypeError, match=f"{op}\\(\\) received an invalid combination of arguments"):
        getattr(x, op)(scalar, *(o.tolist() for o in others))
