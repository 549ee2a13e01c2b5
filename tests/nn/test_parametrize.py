"""nn.utils.parametrize and the weight_norm / spectral_norm parametrizations (and their older
hook-based forms) against torch: values, gradients, state dict keys, removal, caching."""

import copy
import re

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.utils.parametrize as tparametrize
from helpers import assert_close, from_torch, to_torch

import genesis
import genesis.nn as nn
from genesis.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class TSymmetric(tnn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


def _pair_linear(rng, n_in=4, n_out=3):
    t = tnn.Linear(n_in, n_out).double()
    g = nn.Linear(n_in, n_out).to(genesis.float64)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(rng.standard_normal((n_out, n_in))))
    g.weight.data = from_torch(t.weight.detach())
    g.bias.data = from_torch(t.bias.detach())
    return g, t


def _check_forward_backward(g_module, t_module, rng, shape=(5, 4)):
    x = torch.tensor(rng.standard_normal(shape))
    out_t, out_g = t_module(x), g_module(from_torch(x))
    assert_close(out_g, out_t)
    out_t.sum().backward()
    out_g.sum().backward()
    t_params = dict(t_module.named_parameters())
    for name, p in g_module.named_parameters():
        assert_close(p.grad, t_params[name].grad)


def test_register_parametrization_and_remove(rng):
    g, t = _pair_linear(rng, 3, 3)
    weight = g.weight
    parametrize.register_parametrization(g, "weight", Symmetric())
    tparametrize.register_parametrization(t, "weight", TSymmetric())
    assert type(g).__name__ == "ParametrizedLinear"
    assert parametrize.is_parametrized(g) and parametrize.is_parametrized(g, "weight")
    assert not parametrize.is_parametrized(g, "bias")
    assert g.parametrizations.weight.original is weight
    assert list(g.state_dict()) == list(t.state_dict())
    assert_close(g.weight, t.weight)
    _check_forward_backward(g, t, rng, (2, 3))
    new = torch.tensor(rng.standard_normal((3, 3)))
    t.weight = new
    g.weight = from_torch(new)
    assert_close(g.parametrizations.weight.original, t.parametrizations.weight.original)
    assert parametrize.type_before_parametrizations(g) is nn.Linear
    parametrize.remove_parametrizations(g, "weight")
    tparametrize.remove_parametrizations(t, "weight")
    assert type(g) is nn.Linear and not parametrize.is_parametrized(g)
    assert g.weight is weight
    assert_close(g.weight, t.weight)


def test_chained_cached_and_leave_unparametrized(rng):
    g, t = _pair_linear(rng, 3, 3)

    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

    parametrize.register_parametrization(g, "weight", Symmetric())
    parametrize.register_parametrization(g, "weight", Double())
    tparametrize.register_parametrization(t, "weight", TSymmetric())
    assert_close(g.weight, 2 * t.weight)
    calls = []
    original_forward = Double.forward

    def counting(self, x):
        calls.append(1)
        return original_forward(self, x)
    Double.forward = counting
    with parametrize.cached():
        first, second = g.weight, g.weight
    assert first is second and len(calls) == 1
    Double.forward = original_forward
    original = g.parametrizations.weight.original.detach().clone()
    parametrize.remove_parametrizations(g, "weight", leave_parametrized=False)
    assert_close(g.weight, original.numpy())


def test_registration_errors():
    g = nn.Linear(3, 3)

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:2]

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(g, "weight", Shrink())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(g, "missing", Symmetric())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        parametrize.remove_parametrizations(g, "weight")
    parametrize.register_parametrization(g, "weight", Shrink(), unsafe=True)
    assert tuple(g.weight.shape) == (2, 3)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim, rng):
    g, t = _pair_linear(rng)
    parametrizations.weight_norm(g, dim=dim)
    tnn.utils.parametrizations.weight_norm(t, dim=dim)
    assert list(g.state_dict()) == list(t.state_dict())
    for i in (0, 1):
        assert_close(getattr(g.parametrizations.weight, f"original{i}"),
                     getattr(t.parametrizations.weight, f"original{i}"))
    _check_forward_backward(g, t, rng)
    parametrize.remove_parametrizations(g, "weight")
    tparametrize.remove_parametrizations(t, "weight")
    assert_close(g.weight, t.weight)


def _copy_spectral_vectors(g_norm, t_norm):
    g_norm._u.copy_(from_torch(t_norm._u))
    g_norm._v.copy_(from_torch(t_norm._v))


def test_spectral_norm_matches_torch(rng):
    g, t = _pair_linear(rng, 5, 4)
    parametrizations.spectral_norm(g, n_power_iterations=2)
    tnn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
    assert list(g.state_dict()) == list(t.state_dict())
    _copy_spectral_vectors(g.parametrizations.weight[0], t.parametrizations.weight[0])
    _check_forward_backward(g, t, rng, (3, 5))
    assert_close(g.parametrizations.weight[0]._u, t.parametrizations.weight[0]._u)
    g.eval()
    t.eval()
    assert_close(g.weight, t.weight)
    sigma = np.linalg.svd(g.parametrizations.weight.original.detach().numpy(),
                          compute_uv=False)[0]
    g.train()
    for _ in range(30):
        g.weight
    np.testing.assert_allclose(np.linalg.svd(g.weight.detach().numpy(), compute_uv=False)[0],
                               1.0, rtol=1e-6)
    assert sigma > 0
    with pytest.raises(ValueError, match="n_power_iterations"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_old_style_weight_norm_and_spectral_norm(rng):
    """The hook-based forms; weight_norm warns (FutureWarning) as PyTorch's, from the
    caller's line."""
    g, t = _pair_linear(rng)
    with pytest.warns(FutureWarning) as expected:
        tnn.utils.weight_norm(t)
    with pytest.warns(FutureWarning) as got:
        nn.utils.weight_norm(g)
    assert [str(w.message) for w in got] == [str(w.message) for w in expected]
    assert got[0].filename == __file__
    assert sorted(g.state_dict()) == sorted(t.state_dict())
    _check_forward_backward(g, t, rng)
    nn.utils.remove_weight_norm(g)
    tnn.utils.remove_weight_norm(t)
    assert_close(g.weight, t.weight)
    with pytest.raises(ValueError):
        nn.utils.remove_weight_norm(g)

    g, t = _pair_linear(rng, 5, 4)
    nn.utils.spectral_norm(g)
    tnn.utils.spectral_norm(t)
    assert sorted(g.state_dict()) == sorted(t.state_dict())
    g.weight_u.copy_(from_torch(t.weight_u))
    g.weight_v.copy_(from_torch(t.weight_v))
    _check_forward_backward(g, t, rng, (3, 5))
    nn.utils.remove_spectral_norm(g)
    tnn.utils.remove_spectral_norm(t)
    assert_close(g.weight, t.weight)


@pytest.mark.parametrize("shape, orthogonal_map", [((4, 4), None), ((5, 3), None),
                                                   ((3, 5), "matrix_exp"),
                                                   ((5, 3), "householder"),
                                                   ((4, 4), "householder")], ids=str)
def test_orthogonal_matches_torch(shape, orthogonal_map, rng):
    """Values and gradients from the same base (a non-square base is completed with random
    columns, so torch's is copied) and the same unconstrained parameter."""
    g, t = _pair_linear(rng, shape[1], shape[0])
    tnn.utils.parametrizations.orthogonal(t, orthogonal_map=orthogonal_map)
    parametrizations.orthogonal(g, orthogonal_map=orthogonal_map)
    assert list(g.state_dict()) == list(t.state_dict())
    g_orth, t_orth = g.parametrizations.weight[0], t.parametrizations.weight[0]
    columns = g.weight.detach().numpy()
    columns = columns if shape[0] >= shape[1] else columns.T
    np.testing.assert_allclose(columns.T @ columns, np.eye(min(shape)), atol=1e-12)
    if shape[0] == shape[1]:
        assert_close(g_orth.base, t_orth.base)
    g_orth.base = from_torch(t_orth.base)
    with torch.no_grad():
        t.parametrizations.weight.original.add_(torch.tensor(rng.standard_normal(shape)) * 0.3)
    g.parametrizations.weight.original.data = from_torch(
        t.parametrizations.weight.original.detach())
    _check_forward_backward(g, t, rng, (2, shape[1]))


def test_orthogonal_maps_and_errors(rng):
    from genesis.nn.utils.orthogonal import householder_product, matrix_exp
    a = rng.standard_normal((2, 4, 4)) * 2
    assert_close(matrix_exp(genesis.tensor(a)), torch.matrix_exp(torch.tensor(a)), rtol=1e-12)
    reflectors, tau = rng.standard_normal((5, 3)), rng.standard_normal(3)
    assert_close(householder_product(genesis.tensor(reflectors), genesis.tensor(tau)),
                 torch.linalg.householder_product(torch.tensor(reflectors), torch.tensor(tau)))
    x = genesis.tensor(rng.standard_normal((3, 3)) * 0.5, requires_grad=True)
    assert genesis.autograd.gradcheck(lambda v: matrix_exp(v - v.mT), (x,))
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix"):
        parametrizations.orthogonal(nn.BatchNorm1d(3))
    with pytest.raises(NotImplementedError, match="cayley"):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley")


def test_deepcopy_of_old_style_weight_norm_is_refused_as_torch(rng):
    """The hook's computed weight is no graph leaf: deepcopy of the module raises PyTorch's
    error, which points at weight_norm; the parametrized form copies."""
    g, t = _pair_linear(rng)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(g)
        tnn.utils.weight_norm(t)
    with pytest.raises(RuntimeError) as expected:
        copy.deepcopy(t)
    with pytest.raises(RuntimeError, match=re.escape(str(expected.value))):
        copy.deepcopy(g)
    g, _ = _pair_linear(rng)
    parametrizations.weight_norm(g)
    assert_close(copy.deepcopy(g).weight, to_torch(g.weight))
