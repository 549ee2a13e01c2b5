"""Python scalars beside float16 and bfloat16 tensors, bit for bit against PyTorch's CPU kernels.

PyTorch casts most Python-scalar operands to the tensor's half type before its kernel reads them
(`x + s`, `s - x`, `x > s`, `x % s`, `x ** s`, `mul(s, x)`, add's alpha...), but reads others
unrounded, in float32: the second operand of mul and the divisions (`x * s`, `s * x`, `x / s`,
`x // s`), `s / x` (x.reciprocal() * s), lerp's weight, addcmul's value and the activations'
parameters. The inputs sit where the two readings give different results, and each case also
checks that PyTorch reads its scalar the way the table says. A double goes to a half type
through float32 (two roundings), which the stored scalars (fills, where, clamp) check.
"""

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import genesis
import genesis.nn.functional as GF
from helpers import TORCH_DTYPES, to_torch

HALVES = [genesis.float16, genesis.bfloat16]
SIZE = 64  # a multiple of PyTorch's vector widths: every element takes its vectorized path
C = 0.75  # a constant every half type holds


def _index(lib, x):
    """Positions 0 and 3 as an index tensor on x's device."""
    return lib.tensor([0, 3], device=x.device)


# (case, fn(lib, functional, x, y, s)); x and y are half tensors, s the Python scalar.
ROUNDED = {
    "x + s": lambda T, F, x, y, s: x + s,
    "s + x": lambda T, F, x, y, s: s + x,
    "x.add_(s)": lambda T, F, x, y, s: x.add_(s),
    "x - s": lambda T, F, x, y, s: x - s,
    "s - x": lambda T, F, x, y, s: s - x,
    "rsub(x, s)": lambda T, F, x, y, s: T.rsub(x, s),
    "x.sub_(s)": lambda T, F, x, y, s: x.sub_(s),
    "mul(s, x)": lambda T, F, x, y, s: T.mul(s, x),
    "div(s, x)": lambda T, F, x, y, s: T.div(s, x),
    "s // x": lambda T, F, x, y, s: s // x,
    "div(s, x, trunc)": lambda T, F, x, y, s: T.div(s, x, rounding_mode="trunc"),
    "x % s": lambda T, F, x, y, s: x % s,
    "s % x": lambda T, F, x, y, s: s % x,
    "x.remainder_(s)": lambda T, F, x, y, s: x.remainder_(s),
    "fmod(x, s)": lambda T, F, x, y, s: T.fmod(x, s),
    "x.fmod_(s)": lambda T, F, x, y, s: x.fmod_(s),
    "|x| ** s": lambda T, F, x, y, s: x.abs() ** s,
    "|s| ** x": lambda T, F, x, y, s: abs(s) ** x,
    "|x|.pow_(s)": lambda T, F, x, y, s: x.abs().pow_(s),
    "xlogy(2^k, |s|)": lambda T, F, x, y, s: T.xlogy(T.exp2(T.round(x)), abs(s)),
    "x == s": lambda T, F, x, y, s: x == s,
    "x != s": lambda T, F, x, y, s: x != s,
    "x < s": lambda T, F, x, y, s: x < s,
    "x <= s": lambda T, F, x, y, s: x <= s,
    "x > s": lambda T, F, x, y, s: x > s,
    "x >= s": lambda T, F, x, y, s: x >= s,
    "s < x": lambda T, F, x, y, s: s < x,
    "x.gt_(s)": lambda T, F, x, y, s: x.gt_(s),
    "add(x, y, alpha=s)": lambda T, F, x, y, s: T.add(x, y, alpha=s),
    "sub(x, y, alpha=s)": lambda T, F, x, y, s: T.sub(x, y, alpha=s),
    "x.add_(y, alpha=s)": lambda T, F, x, y, s: x.add_(y, alpha=s),
    "x.sub_(y, alpha=s)": lambda T, F, x, y, s: x.sub_(y, alpha=s),
    "add(x, s, alpha=3)": lambda T, F, x, y, s: T.add(x, s, alpha=3),
    "hardshrink(x, |s|)": lambda T, F, x, y, s: F.hardshrink(x, abs(s)),
    "isclose(x, 0, atol=|s|)": lambda T, F, x, y, s: T.isclose(x, x * 0, rtol=0, atol=abs(s)),
}
UNROUNDED = {
    "x * s": lambda T, F, x, y, s: x * s,
    "s * x": lambda T, F, x, y, s: s * x,
    "x.mul_(s)": lambda T, F, x, y, s: x.mul_(s),
    "x / s": lambda T, F, x, y, s: x / s,
    "s / x": lambda T, F, x, y, s: s / x,
    "x.div_(s)": lambda T, F, x, y, s: x.div_(s),
    "x // s": lambda T, F, x, y, s: x // s,
    "div(x, s, trunc)": lambda T, F, x, y, s: T.div(x, s, rounding_mode="trunc"),
    "x.floor_divide_(s)": lambda T, F, x, y, s: x.floor_divide_(s),
    "lerp(x, x + 1/2, s)": lambda T, F, x, y, s: T.lerp(x, x + 0.5, s),
    "x.lerp_(x + 1/2, s)": lambda T, F, x, y, s: x.lerp_(x + 0.5, s),
    "addcmul(x, y, 2^k, value=s)": lambda T, F, x, y, s: T.addcmul(x, y, T.exp2(T.round(x)),
                                                                   value=s),
    "addcdiv(x, y, 2^k, value=s)": lambda T, F, x, y, s: T.addcdiv(x, y, T.exp2(T.round(x)),
                                                                   value=s),
    "x.addcmul_(y, 2^k, value=s)": lambda T, F, x, y, s: x.addcmul_(y, T.exp2(T.round(x)),
                                                                    value=s),
    "leaky_relu(x, s)": lambda T, F, x, y, s: F.leaky_relu(x, s),
    "leaky_relu_(x, s)": lambda T, F, x, y, s: F.leaky_relu_(x, s),
    "elu(x, |s|)": lambda T, F, x, y, s: F.elu(x, abs(s)),
    "celu(x, s)": lambda T, F, x, y, s: F.celu(x, s),
    "softplus(x, beta=|s|)": lambda T, F, x, y, s: F.softplus(x, abs(s)),
    "softplus(x, threshold=s)": lambda T, F, x, y, s: F.softplus(x, 1.0, s),
    "softshrink(x, |s|)": lambda T, F, x, y, s: F.softshrink(x, abs(s)),
    "threshold(x, s, C)": lambda T, F, x, y, s: F.threshold(x, s, C),
    "threshold_(x, s, C)": lambda T, F, x, y, s: F.threshold_(x, s, C),
    "rrelu(x, |s| % 1/2, 1/2)": lambda T, F, x, y, s: F.rrelu(x, abs(s) % 0.5, 0.5),
}
# Ops whose result is the same whichever way the scalar is read (it is stored, or only compared
# against): the double-rounding scalar still tells a conversion through float32 from a direct one.
STORED = {
    "where(c, x, s)": lambda T, F, x, y, s: T.where(x > 0, x, s),
    "where(c, s, x)": lambda T, F, x, y, s: T.where(x > 0, s, x),
    "clamp(x, min=s)": lambda T, F, x, y, s: T.clamp(x, min=s),
    "clamp(x, max=s)": lambda T, F, x, y, s: T.clamp(x, max=s),
    "x.clamp_(s, 8)": lambda T, F, x, y, s: x.clamp_(s, 8.0),
    "hardtanh(x, -|s|, |s|)": lambda T, F, x, y, s: F.hardtanh(x, -abs(s), abs(s)),
    "threshold(x, 0, s)": lambda T, F, x, y, s: F.threshold(x, 0.0, s),
    "masked_fill(x > 0, s)": lambda T, F, x, y, s: x.masked_fill(x > 0, s),
    "x.masked_fill_(x > 0, s)": lambda T, F, x, y, s: x.masked_fill_(x > 0, s),
    "x.fill_(s)": lambda T, F, x, y, s: x.fill_(s),
    "full_like(x, s)": lambda T, F, x, y, s: T.full_like(x, s),
    "x[x > 1] = s": lambda T, F, x, y, s: (x.__setitem__(x > 1, s), x)[1],
    "index_fill(x, 0, [0, 3], s)": lambda T, F, x, y, s: x.index_fill(0, _index(T, x), s),
    "scatter(x, 0, [0, 3], s)": lambda T, F, x, y, s: x.scatter(0, _index(T, x), s),
    "nan_to_num(x / 0 * 0, nan=s)": lambda T, F, x, y, s: T.nan_to_num(x / 0 * 0, nan=s),
    "copysign(x, s)": lambda T, F, x, y, s: T.copysign(x, s),
    "isclose(rtol=|s| / 64)": lambda T, F, x, y, s: T.isclose(x, y, rtol=abs(s) / 64, atol=0),
}
# Off the CPU Genesis computes these half-type results in float32 and rounds once, as torch's
# CUDA kernels do, where torch's CPU kernels round every step (see test_elementwise).
STEPWISE_ON_CPU = {"s // x"}


def _half(values, dtype):
    """float64 `values` rounded to `dtype` (through float32, as c10 converts a double)."""
    return np.asarray(values, np.float32).astype(dtype.numpy_dtype).astype(np.float64)


def _scalars(dtype):
    """Python scalars that `dtype` does not hold: floats in [-4, 4] whose nearest half value is
    not a multiple of 1/2 (no power takes its exact-exponent path), an integer beyond the
    type's integers, and 1 + 2^-p + 2^-40, which float32 rounds to the tie 1 + 2^-p that the
    half type then rounds to even, down to 1, where a direct rounding would go up."""
    rng = np.random.default_rng(1234)
    floats = [s for s in rng.uniform(-4, 4, 64).tolist()
              if _half(s, dtype) != s and _half(s, dtype) % 0.5][:12]
    mantissa = 11 if dtype is genesis.float16 else 8
    return floats + [2 ** mantissa + 1, 1 + 2.0 ** -mantissa + 2.0 ** -40]


def _inputs(dtype, s):
    """(x, y) as float64 values of `dtype`: x holds the scalar's nearest half value, its
    neighbours and a multiple of it beside values on a grid of 1/64 in [-2, 2] (exact after
    adding 1/2); y random values in [-4, 4]."""
    rng = np.random.default_rng(abs(hash(s)) % 2 ** 32)
    near = _half(s, dtype)
    info = ml_dtypes.finfo(dtype.numpy_dtype)
    special = [near, -near, near + near * info.eps, near - near * info.eps / 2, 2 * near]
    grid = rng.integers(-128, 129, SIZE - len(special)) / 64
    return (_half(np.concatenate([special, grid]), dtype),
            _half(rng.uniform(-4, 4, SIZE), dtype))


def _run(fn, dtype, x, y, s, device, library):
    """fn's result for the scalar `s` on the `dtype` values x and y, as a torch tensor: from
    torch or from Genesis on `device`."""
    if library is torch:
        tdtype = TORCH_DTYPES[dtype]
        return fn(torch, F, torch.tensor(x).to(tdtype), torch.tensor(y).to(tdtype), s)
    gx, gy = (genesis.tensor(v, device=device).to(dtype) for v in (x, y))
    return to_torch(fn(genesis, GF, gx, gy, s))


def _differs(a, b):
    """Where two results differ bit for bit (NaNs of any sign agree)."""
    if a.dtype is torch.bool:
        return a != b
    a, b = a.double(), b.double()
    both_nan = a.isnan() & b.isnan()
    return ~both_nan & ((a != b) | (a.signbit() != b.signbit()))


def _assert_same(got, want, case, s):
    assert got.dtype == want.dtype, f"{case}: dtype {got.dtype} != {want.dtype}"
    bad = _differs(got, want)
    assert not bad.any(), (f"{case} with s={s!r}: {int(bad.sum())} of {bad.numel()} elements "
                           f"differ, e.g. Genesis {got[bad][0].item()} vs torch "
                           f"{want[bad][0].item()}")


def _check_against_torch(fn, case, dtype, device):
    """Genesis equals torch on every scalar; returns torch's results, those it gives when handed
    each scalar already rounded to `dtype`, and those of torch computing in float32 with the
    scalar unrounded (rounded to `dtype` at the end)."""
    if device != "cpu" and case in STEPWISE_ON_CPU:
        pytest.skip("computed in float32 off the CPU, as torch's CUDA kernels do")
    given, rounded, wide = [], [], []
    for s in _scalars(dtype):
        x, y = _inputs(dtype, s)
        want = _run(fn, dtype, x, y, s, device, torch)
        _assert_same(_run(fn, dtype, x, y, s, device, genesis), want, case, s)
        given.append(want)
        rounded.append(_run(fn, dtype, x, y, float(_half(s, dtype)), device, torch))
        in_float32 = fn(torch, F, torch.tensor(x).float(), torch.tensor(y).float(), s)
        wide.append(in_float32 if in_float32.dtype is torch.bool else in_float32.to(want.dtype))
    return torch.cat(given), torch.cat(rounded), torch.cat(wide)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("case", ROUNDED)
def test_scalar_rounded_to_half_type(case, dtype, device):
    """Ops that round the scalar to the tensor's type: the same as being handed it rounded, and
    not what computing in float32 with it unrounded gives."""
    given, rounded, wide = _check_against_torch(ROUNDED[case], case, dtype, device)
    assert not _differs(given, rounded).any()
    assert _differs(given, wide).any()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("case", UNROUNDED)
def test_scalar_read_unrounded(case, dtype, device):
    """Ops that read the scalar unrounded: some result changes when it comes rounded."""
    given, rounded, _ = _check_against_torch(UNROUNDED[case], case, dtype, device)
    assert _differs(given, rounded).any()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("case", STORED)
def test_scalar_stored(case, dtype, device):
    """Ops where either reading gives the same result: stored through float32, as torch."""
    _check_against_torch(STORED[case], case, dtype, device)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_xlogy_scalar_first_is_rounded(dtype, device):
    """xlogy(s, y) reads s rounded, in Genesis as in torch. (torch's CPU oracle rounds log(y)
    to the half type before the product, which Genesis's GPU kernel rounds with it once, so the
    values are compared in test_elementwise, on the CPU.)"""
    tdtype = TORCH_DTYPES[dtype]
    for s in _scalars(dtype):
        y = np.abs(_inputs(dtype, s)[1])
        near = float(_half(s, dtype))
        want = torch.xlogy(s, torch.tensor(y).to(tdtype))
        assert not _differs(want, torch.xlogy(near, torch.tensor(y).to(tdtype))).any()
        gy = genesis.tensor(y, device=device).to(dtype)
        got = to_torch(genesis.xlogy(s, gy))
        assert not _differs(got, to_torch(genesis.xlogy(near, gy))).any()
