"""torch.special's Airy, Bessel, erfcx and Hurwitz zeta functions and orthogonal polynomials
(genesis/ops/special_functions.py) against PyTorch, on every test device: fresh random values in
each function's range, edge values (0, signs, branch points, large, inf, NaN), broadcasting,
Python numbers, 0-d, empty and non-contiguous operands, dtype rules, out= and autograd.

Tolerances are helpers.TOLERANCES's. float64 samples cover wide ranges and high degrees;
float32 polynomial samples keep to the degrees and ranges where float32 evaluation is itself
well-conditioned: beyond them PyTorch's own float32 results leave its float64 ones by more than
float32's tolerance (a recurrence's cancellation, a closed form next to x = -1).
"""

import math

import numpy as np
import pytest
import torch

import genesis
import genesis.special  # noqa: F401
from genesis.autograd import gradcheck, gradgradcheck
from helpers import assert_close, from_torch

FLOATS = (torch.float32, torch.float64)

# name: (low, high) of the random samples
UNARY = {
    "airy_ai": (-12.0, 12.0), "bessel_j0": (-30.0, 30.0), "bessel_j1": (-30.0, 30.0),
    "bessel_y0": (0.0, 30.0), "bessel_y1": (0.0, 30.0), "modified_bessel_i0": (-40.0, 40.0),
    "modified_bessel_i1": (-40.0, 40.0), "modified_bessel_k0": (0.0, 40.0),
    "modified_bessel_k1": (0.0, 40.0), "scaled_modified_bessel_k0": (0.0, 40.0),
    "scaled_modified_bessel_k1": (0.0, 40.0), "spherical_bessel_j0": (-20.0, 20.0),
    "erfcx": (-5.0, 30.0)}
UNARY_EDGES = [0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6, 1e-5, 0.49, 0.5, -1.0, 1.0, 2.0, 2.09,
               -2.09, 2.5, -2.5, 5.0, -5.0, 8.0, -8.0, 26.0, 30.0, 103.8, 104.0, -30.0, 200.0,
               -200.0, 1e10, -1e10, math.inf, -math.inf, math.nan]

CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
             "chebyshev_polynomial_w"]
SHIFTED = ["shifted_" + name for name in CHEBYSHEV]
# name: {dtype: (x low, x high, highest degree)}
POLYNOMIALS = {
    **{name: {torch.float64: (-1.5, 1.5, 40), torch.float32: (-0.8, 0.8, 11)}
       for name in CHEBYSHEV},
    **{name: {torch.float64: (-0.25, 1.25, 40), torch.float32: (0.1, 0.9, 11)}
       for name in SHIFTED},
    "hermite_polynomial_h": {torch.float64: (-4.0, 4.0, 30), torch.float32: (-2.0, 2.0, 5)},
    "hermite_polynomial_he": {torch.float64: (-4.0, 4.0, 30), torch.float32: (-2.0, 2.0, 5)},
    "laguerre_polynomial_l": {torch.float64: (-5.0, 10.0, 30), torch.float32: (-3.0, 3.0, 10)},
    "legendre_polynomial_p": {torch.float64: (-1.5, 1.5, 40), torch.float32: (-1.0, 1.0, 11)},
}
# PyTorch returns an unset variable for x = NaN (n >= 2) but for these; genesis returns NaN
NAN_DEFINED = ("chebyshev_polynomial_t", "chebyshev_polynomial_v", "hermite_polynomial_h",
               "hermite_polynomial_he")


def special(lib, name):
    return getattr(lib.special, name)


def uniform(rng, shape, low, high, dtype):
    return torch.from_numpy(np.asarray(rng.uniform(low, high, shape))).to(dtype)


def degrees(rng, shape, high, dtype=torch.float64):
    return torch.from_numpy(np.asarray(rng.integers(-2, high + 1, shape))).to(dtype)


def compare(name, device, *args):
    """genesis's `name` of `args` (torch tensors mirrored onto `device`, numbers as they are)
    against torch's."""
    ours = special(genesis, name)(*(from_torch(a, device) if isinstance(a, torch.Tensor) else a
                                    for a in args))
    assert_close(ours, special(torch, name)(*args))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(name, dtype, rng, device):
    low, high = UNARY[name]
    compare(name, device, uniform(rng, (40, 50), low, high, dtype))
    compare(name, device, torch.tensor(UNARY_EDGES, dtype=dtype))
    for shape in ((), (0, 4), (2, 3, 4)):
        compare(name, device, uniform(rng, shape, low, high, dtype))
    compare(name, device, uniform(rng, (7, 5), low, high, dtype).t())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomial_matches_torch(name, dtype, rng, device):
    low, high, top = POLYNOMIALS[name][dtype]
    compare(name, device, uniform(rng, (3000,), low, high, dtype),
            degrees(rng, (3000,), top, dtype))
    compare(name, device, uniform(rng, (6, 1), low, high, dtype), degrees(rng, (5,), top))
    compare(name, device, uniform(rng, (5, 6), low, high, dtype).t(),
            degrees(rng, (5, 6), top, torch.int64).t())
    compare(name, device, uniform(rng, (), low, high, dtype), degrees(rng, (), top))
    compare(name, device, uniform(rng, (0, 3), low, high, dtype), degrees(rng, (3,), top))
    compare(name, device, uniform(rng, (4,), low, high, dtype), 3)
    compare(name, device, 0.375, degrees(rng, (4,), top, torch.int64))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomial_special_cases(name, dtype, device):
    """x at +-1, 0, beyond [-1, 1], infinite, next to +-1 (where V's and W's closed forms fall
    back to their edge values); every degree branch; NaN, infinite, huge and fractional n."""
    eps = torch.finfo(dtype).eps
    shifted = name.startswith("shifted")
    xs = [-1.0, 1.0, 0.0, 0.5, 2.0, -2.0, math.inf, -math.inf, 1 - eps / (4 if shifted else 2)]
    if not (dtype is torch.float32 and name.endswith("_u")):
        # next to y = -1 (y = 2x - 1 when shifted); U's closed form divides by sin(acos y)
        # there, which float32 gets to a few digits only (PyTorch's own result is 3e-4 off)
        xs.append(eps / 4 if shifted else -1 + eps / 2)
    ns = [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0, 9.0, 10.0, 13.0]
    x = torch.tensor(xs, dtype=dtype)[:, None]
    compare(name, device, x, torch.tensor(ns, dtype=dtype))
    odd_n = [math.nan, math.inf, -math.inf, 1e30, -1e30, -0.5, 2.7, -2.7]
    odd_n += [600.0] if dtype is torch.float64 else []  # float32's closed forms drift at 600
    compare(name, device, torch.full((len(odd_n),), 0.3, dtype=dtype),
            torch.tensor(odd_n, dtype=dtype))
    if name in NAN_DEFINED:
        compare(name, device, torch.full((4,), math.nan, dtype=dtype),
                torch.tensor([0.0, 1.0, 2.0, 11.0], dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_hermite_degree_limit(dtype, device):
    """NaN past PyTorch's degree limit (128 in float32, 512 in float64)."""
    n = torch.tensor([127.0, 128.0, 129.0, 511.0, 512.0, 513.0], dtype=dtype)
    for name in ("hermite_polynomial_h", "hermite_polynomial_he"):
        compare(name, device, torch.full((6,), 0.01, dtype=dtype), n)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_zeta_matches_torch(dtype, rng, device):
    compare("zeta", device, uniform(rng, (3000,), 1.01, 12.0, dtype),
            uniform(rng, (3000,), -4.9, 10.0, dtype))
    compare("zeta", device, uniform(rng, (4, 1), 1.5, 6.0, dtype), uniform(rng, (3,), 0.1, 3.0,
                                                                           dtype))
    compare("zeta", device, uniform(rng, (5, 4), 1.5, 6.0, dtype).t(),
            uniform(rng, (), 0.1, 3.0, dtype))
    compare("zeta", device, 2.0, uniform(rng, (5,), 0.1, 3.0, dtype))
    compare("zeta", device, uniform(rng, (5,), 1.5, 6.0, dtype), 1.25)
    compare("zeta", device, uniform(rng, (0,), 1.5, 6.0, dtype), uniform(rng, (0,), 1, 2, dtype))
    x = [1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.0, math.inf, 2.0, math.nan, 2.0, 1e10, 2.0, 4.0, 2.5]
    q = [1.0, 1.0, 0.0, -1.0, -1.5, -1.5, math.inf, 2.0, math.nan, 1.0, 1e-30, 0.5, -20.5,
         -3.0, -3.5]
    compare("zeta", device, torch.tensor(x, dtype=dtype), torch.tensor(q, dtype=dtype))


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(POLYNOMIALS) + ["zeta"])
def test_integer_and_bool_inputs_compute_in_the_default_float(name, device):
    args = [torch.tensor([1, 2, 3])] + ([torch.tensor([2, 3, 4])] if name not in UNARY else [])
    compare(name, device, *args)
    compare(name, device, *(a.bool() for a in args))
    genesis.set_default_dtype(genesis.float64)
    torch_default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        compare(name, device, *args)
    finally:
        torch.set_default_dtype(torch_default)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["bessel_j0", "erfcx", "hermite_polynomial_h", "zeta"])
def test_half_types_raise_as_in_torch(name, dtype, device):
    x = torch.ones(3, dtype=dtype)
    args = (x,) if name in UNARY else (x, 2.0)
    with pytest.raises(NotImplementedError) as expected:
        special(torch, name)(*args)
    message = str(expected.value).replace("_cpu", f"_{torch.device(device).type}")
    with pytest.raises(NotImplementedError, match=message):
        special(genesis, name)(from_torch(x, device), *args[1:])


@pytest.mark.parametrize("name", ["airy_ai", "chebyshev_polynomial_t", "zeta"])
def test_argument_errors_as_in_torch(name):
    args = (1.5,) if name in UNARY else (1.5, 2)
    with pytest.raises(TypeError) as expected:
        special(torch, name)(*args)
    with pytest.raises(TypeError) as got:
        special(genesis, name)(*args)
    assert str(got.value) == str(expected.value)
    if name not in UNARY:
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            special(genesis, name)(genesis.ones(2), genesis.ones(3))


@pytest.mark.parametrize("name", ["bessel_y1", "legendre_polynomial_p", "zeta", "erfcx"])
def test_out(name, rng, device):
    x = uniform(rng, (3, 4), 1.5, 3.0, torch.float32)
    args = (x,) if name in UNARY else (x, uniform(rng, (4,), 1.0, 4.0, torch.float32))
    expected = torch.empty(0, dtype=torch.float64)
    special(torch, name)(*args, out=expected)
    out = genesis.empty(0, dtype=genesis.float64, device=device)
    result = special(genesis, name)(*(from_torch(a, device) for a in args), out=out)
    assert result is out
    assert_close(out, expected, dtype=genesis.float32)  # computed in float32, stored wider


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"erfcx"}) + sorted(POLYNOMIALS))
def test_results_do_not_require_grad(name, device):
    """PyTorch gives these functions no derivative: their results are not part of a graph."""
    x = genesis.tensor([0.5, 1.5], dtype=genesis.float64, device=device, requires_grad=True)
    args = (x,) if name in UNARY else (x, x)
    y = special(genesis, name)(*args)
    assert not y.requires_grad and y.grad_fn is None
    xt = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    assert not special(torch, name)(*((xt,) if name in UNARY else (xt, xt))).requires_grad


def test_erfcx_gradients(rng, device):
    x = uniform(rng, (4, 5), -3.0, 8.0, torch.float64).requires_grad_()
    g = uniform(rng, (4, 5), -1.0, 1.0, torch.float64)
    torch.special.erfcx(x).backward(g)
    ours = from_torch(x, device, requires_grad=True)
    y = genesis.special.erfcx(ours)
    assert y.grad_fn.name() == "SpecialErfcxBackward0"
    y.backward(from_torch(g, device))
    assert_close(ours.grad, x.grad)
    small = from_torch(x[:2, :3].detach(), device, requires_grad=True)
    assert gradcheck(genesis.special.erfcx, (small,))
    assert gradgradcheck(genesis.special.erfcx, (small,))


def test_zeta_gradient_in_q(rng, device):
    """d/dq zeta(x, q) = -x zeta(x + 1, q), summed over broadcast dims, for each overload;
    the derivative in x raises at backward, as in PyTorch."""
    x = uniform(rng, (4, 1), 1.5, 5.0, torch.float64)
    q = uniform(rng, (3,), 0.5, 3.0, torch.float64).requires_grad_()
    for first in (x, 2.5):
        q.grad = None
        expected = torch.special.zeta(first, q)
        expected.sum().backward()
        gq = from_torch(q, device, requires_grad=True)
        gx = from_torch(first, device) if isinstance(first, torch.Tensor) else first
        y = genesis.special.zeta(gx, gq)
        assert y.grad_fn.name() == expected.grad_fn.name()
        y.sum().backward()
        assert_close(gq.grad, q.grad)
    assert gradcheck(lambda q: genesis.special.zeta(3.0, q), (from_torch(q, device, True),))
    xt = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(NotImplementedError) as expected:
        torch.special.zeta(xt, 2.0).sum().backward()
    assert torch.special.zeta(xt, 2.0).grad_fn.name() == "SpecialZetaBackward2"
    y = genesis.special.zeta(from_torch(xt, device, True), 2.0)
    assert y.grad_fn.name() == "SpecialZetaBackward2"
    with pytest.raises(NotImplementedError, match=str(expected.value)):
        y.sum().backward()
