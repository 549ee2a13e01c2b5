"""linalg.householder_product (and torch.orgqr) and the symmetric-indefinite factorization
linalg.ldl_factor / ldl_factor_ex / ldl_solve against PyTorch on every test device: values,
LAPACK's pivots, info, batching and broadcasting, gradients (householder_product's; the LDL
functions', as PyTorch's, raise) and PyTorch's errors."""

import numpy as np
import pytest
import torch

import genesis
import genesis.linalg
from genesis.autograd import gradcheck, gradgradcheck
from helpers import assert_close, from_torch, to_torch

FLOATS = (torch.float32, torch.float64)


def mirror(t, device, requires_grad=False):
    return from_torch(t, device, requires_grad=requires_grad)


def symmetric(rng, shape, dtype):
    """Random symmetric (indefinite) matrices."""
    a = rng.standard_normal(shape)
    return torch.from_numpy(a + np.swapaxes(a, -1, -2)).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,k", [((5, 3), 2), ((4, 4), 4), ((2, 6, 3), 3), ((3, 1), 1),
                                     ((2, 3, 4, 2), 1), ((3, 2), 0), ((0, 0), 0)])
def test_householder_product(shape, k, dtype, rng, device):
    a = torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    tau = torch.from_numpy(rng.uniform(0.0, 2.0, (*shape[:-2], k))).to(dtype)
    expected = torch.linalg.householder_product(a, tau)
    assert_close(genesis.linalg.householder_product(mirror(a, device), mirror(tau, device)),
                 expected)
    assert_close(genesis.orgqr(mirror(a, device), mirror(tau, device)), torch.orgqr(a, tau))
    assert_close(mirror(a, device).orgqr(mirror(tau, device)), expected)


def test_householder_product_gradients(rng, device):
    a = torch.from_numpy(rng.standard_normal((2, 5, 3))).requires_grad_()
    tau = torch.from_numpy(rng.uniform(0.0, 2.0, (2, 2))).requires_grad_()
    g = torch.from_numpy(rng.standard_normal((2, 5, 3)))
    torch.linalg.householder_product(a, tau).backward(g)
    ga, gtau = mirror(a, device, True), mirror(tau, device, True)
    genesis.linalg.householder_product(ga, gtau).backward(mirror(g, device))
    assert_close(ga.grad, a.grad)
    assert_close(gtau.grad, tau.grad)
    small = (mirror(a[0, :4].detach(), device, True), mirror(tau[0].detach(), device, True))
    assert gradcheck(genesis.linalg.householder_product, small)
    assert gradgradcheck(genesis.linalg.householder_product, small)


@pytest.mark.parametrize("shapes", [((3, 4), (2,)), ((4, 3), (4,)), ((2, 4, 3), (3, 2)),
                                    ((4,), (2,)), ((2, 4, 3), (2,))], ids=str)
def test_householder_product_errors_as_in_torch(shapes):
    a_shape, tau_shape = shapes
    with pytest.raises(RuntimeError) as expected:
        torch.linalg.householder_product(torch.ones(a_shape), torch.ones(tau_shape))
    with pytest.raises(RuntimeError) as got:
        genesis.linalg.householder_product(genesis.ones(*a_shape), genesis.ones(*tau_shape))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float64), (torch.float16,) * 2,
                                    (torch.int64,) * 2], ids=str)
def test_householder_product_dtype_errors(dtypes):
    a, tau = torch.ones(4, 3, dtype=dtypes[0]), torch.ones(2, dtype=dtypes[1])
    with pytest.raises((RuntimeError, NotImplementedError)) as expected:
        torch.linalg.householder_product(a, tau)
    with pytest.raises(expected.type, match=str(expected.value).replace("(", r"\(")
                       .replace(")", r"\)")):
        genesis.linalg.householder_product(from_torch(a), from_torch(tau))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (9, 9), (4, 6, 6), (2, 3, 7, 7),
                                   (0, 0), (3, 0, 0)], ids=str)
def test_ldl_factor(shape, dtype, rng, device):
    """LAPACK's pivots exactly, LD and info, for random indefinite matrices; only the lower
    triangle is read."""
    a = symmetric(rng, shape, dtype) + torch.from_numpy(np.triu(rng.standard_normal(shape),
                                                                  1)).to(dtype)
    expected = torch.linalg.ldl_factor_ex(a)
    got = genesis.linalg.ldl_factor_ex(mirror(a, device))
    assert_close(got.LD, expected.LD)
    assert_close(got.pivots, expected.pivots)
    assert_close(got.info, expected.info)
    LD, pivots = genesis.linalg.ldl_factor(mirror(a, device), hermitian=True)
    assert_close(LD, expected.LD)
    assert_close(pivots, expected.pivots)


@pytest.mark.parametrize("rows", [[0], [1, 3], [0, 1, 2, 3, 4]], ids=str)
def test_ldl_factor_singular(rows, rng, device):
    """A zero column leaves a zero in D: info names it (1-based), ldl_factor raises (PyTorch
    fails an internal assert there; genesis raises LinAlgError)."""
    a = symmetric(rng, (5, 5), torch.float64)
    a[rows, :] = 0
    a[:, rows] = 0
    expected = torch.linalg.ldl_factor_ex(a)
    got = genesis.linalg.ldl_factor_ex(mirror(a, device))
    assert_close(got.LD, expected.LD)
    assert_close(got.pivots, expected.pivots)
    assert_close(got.info, expected.info)
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(a)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"D\[\d,\d\] is zero"):
        genesis.linalg.ldl_factor(mirror(a, device))
    with pytest.raises(genesis.linalg.LinAlgError, match=r"Batch element 1"):
        genesis.linalg.ldl_factor_ex(mirror(torch.stack([torch.eye(5, dtype=a.dtype), a]),
                                            device), check_errors=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shapes", [((5, 5), (5, 2)), ((3, 4, 4), (4, 3)), ((4, 4), (2, 4, 1)),
                                    ((1, 1), (1, 1)), ((3, 3), (3, 0)), ((0, 0), (0, 2))],
                         ids=str)
def test_ldl_solve(shapes, dtype, rng, device):
    a_shape, b_shape = shapes
    LD, pivots = torch.linalg.ldl_factor(symmetric(rng, a_shape, dtype))
    b = torch.from_numpy(rng.standard_normal(b_shape)).to(dtype)
    expected = torch.linalg.ldl_solve(LD, pivots, b)
    got = genesis.linalg.ldl_solve(mirror(LD, device), mirror(pivots, device), mirror(b, device))
    assert_close(got, expected, rtol=1e-4 if dtype is torch.float32 else None)
    long_pivots = mirror(pivots.long(), device)
    assert_close(genesis.linalg.ldl_solve(mirror(LD, device), long_pivots, mirror(b, device),
                                          hermitian=True),
                 expected, rtol=1e-4 if dtype is torch.float32 else None)


def test_ldl_solve_is_the_inverse(rng, device):
    """ldl_factor then ldl_solve solves A X = B to float64's precision, also where LD's batch
    dims broadcast against B's (there PyTorch 2.13's ldl_solve reads past its pivots)."""
    a = symmetric(rng, (2, 1, 8, 8), torch.float64)
    b = torch.from_numpy(rng.standard_normal((3, 8, 4)))
    LD, pivots = genesis.linalg.ldl_factor(mirror(a, device))
    x = genesis.linalg.ldl_solve(LD, pivots, mirror(b, device))
    assert tuple(x.shape) == (2, 3, 8, 4)
    np.testing.assert_allclose(a.numpy() @ to_torch(x).numpy(), np.broadcast_to(b, x.shape),
                               atol=1e-10)


def test_ldl_solve_errors_as_in_torch(rng):
    LD, pivots = torch.linalg.ldl_factor(symmetric(rng, (5, 5), torch.float64))
    b = torch.from_numpy(rng.standard_normal((5, 2)))
    for args in [(LD, pivots, b.float()), (LD, pivots, b[:4]), (LD.expand(3, 5, 5), pivots, b),
                 (LD, pivots, b[:, 0])]:
        with pytest.raises((RuntimeError, IndexError)) as expected:
            torch.linalg.ldl_solve(*args)
        with pytest.raises(expected.type) as got:
            genesis.linalg.ldl_solve(*(from_torch(t) for t in args))
        assert str(got.value) == str(expected.value)


def test_ldl_factor_errors_as_in_torch():
    for a in [torch.ones(3, 4), torch.ones(3), torch.ones(3, 3, dtype=torch.int64)]:
        with pytest.raises(RuntimeError) as expected:
            torch.linalg.ldl_factor(a)
        with pytest.raises(RuntimeError) as got:
            genesis.linalg.ldl_factor(from_torch(a))
        assert str(got.value) == str(expected.value)


def test_ldl_results_have_no_derivative(rng, device):
    """As in PyTorch: the results need a gradient, their node is NotImplemented, its backward
    raises."""
    a = symmetric(rng, (4, 4), torch.float64).requires_grad_()
    b = torch.from_numpy(rng.standard_normal((4, 2))).requires_grad_()
    ga, gb = mirror(a, device, True), mirror(b, device, True)
    calls = [(lambda lib, a, b: lib.linalg.ldl_factor(a).LD, "linalg_ldl_factor_ex"),
             (lambda lib, a, b: lib.linalg.ldl_factor_ex(a).LD, "linalg_ldl_factor_ex"),
             (lambda lib, a, b: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(a.detach()), b),
              "linalg_ldl_solve")]
    for call, op in calls:
        expected, got = call(torch, a, b), call(genesis, ga, gb)
        assert got.grad_fn.name() == type(expected.grad_fn).__name__ == "NotImplemented"
        message = f"derivative for aten::{op} is not implemented"
        for result in (expected, got):
            with pytest.raises(RuntimeError, match=message):
                result.sum().backward()
    pivots = genesis.linalg.ldl_factor_ex(ga).pivots
    assert not pivots.requires_grad and pivots.dtype is genesis.int32


def test_out(rng, device):
    a = symmetric(rng, (4, 4), torch.float64)
    LD, pivots = torch.linalg.ldl_factor(a)
    out = (genesis.empty(0, dtype=genesis.float64, device=device),
           genesis.empty(0, dtype=genesis.int32, device=device))
    genesis.linalg.ldl_factor(mirror(a, device), out=out)
    assert_close(out[0], LD)
    assert_close(out[1], pivots)
    tau = torch.from_numpy(rng.uniform(0, 2, 3))
    q = genesis.empty(0, dtype=genesis.float64, device=device)
    genesis.linalg.householder_product(mirror(a, device), mirror(tau, device), out=q)
    assert_close(q, torch.linalg.householder_product(a, tau))
