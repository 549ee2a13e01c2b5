"""genesis.nn.init: distributions, bounds, gains and generator use, compared with torch's rules."""

import math

import numpy as np
import pytest
import torch

import genesis
from genesis import nn
from genesis.nn import init


def _values(t):
    return t.detach().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None), ("conv_transpose1d", None)])
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == \
        torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_fills_in_place_without_recording_history(device):
    p = nn.Parameter(genesis.empty(20, 30, device=device))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.orthogonal_, init.zeros_):
        assert fn(p) is p
        assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_uniform_and_normal_statistics(device):
    t = genesis.empty(400, 500, device=device)
    v = _values(init.uniform_(t, -3.0, 1.0))
    assert v.min() >= -3.0 and v.max() < 1.0 and abs(v.mean() + 1.0) < 0.02
    v = _values(init.normal_(t, 2.0, 0.5))
    assert abs(v.mean() - 2.0) < 0.01 and abs(v.std() - 0.5) < 0.01


def test_trunc_normal_bounds_and_moments(device):
    t = genesis.empty(400, 500, dtype=genesis.float64, device=device)
    v = _values(init.trunc_normal_(t, mean=0.5, std=1.0, a=-0.5, b=2.0))
    assert v.min() >= -0.5 and v.max() <= 2.0
    reference = torch.nn.init.trunc_normal_(torch.empty(400, 500, dtype=torch.float64), 0.5, 1.0,
                                            -0.5, 2.0).numpy()
    assert abs(v.mean() - reference.mean()) < 0.01 and abs(v.std() - reference.std()) < 0.01


def test_constant_ones_zeros_eye(device):
    t = genesis.empty(3, 4, device=device)
    np.testing.assert_array_equal(_values(init.constant_(t, 2.5)), 2.5)
    np.testing.assert_array_equal(_values(init.ones_(t)), 1)
    np.testing.assert_array_equal(_values(init.zeros_(t)), 0)
    np.testing.assert_array_equal(_values(init.eye_(t)), np.eye(3, 4))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(genesis.empty(2, 2, 2, device=device))


@pytest.mark.parametrize("shape", [(300, 200), (64, 16, 3, 3)], ids=str)
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(shape, gain, device):
    t = genesis.empty(*shape, device=device)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    v = _values(init.xavier_uniform_(t, gain))
    assert v.max() <= bound and v.max() > 0.95 * bound
    v = _values(init.xavier_normal_(t, gain))
    assert abs(v.std() - gain * math.sqrt(2.0 / (fan_in + fan_out))) < 0.03 * v.std()


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity, a", [("leaky_relu", 0), ("relu", 0),
                                             ("leaky_relu", math.sqrt(5)), ("tanh", 0)])
def test_kaiming(mode, nonlinearity, a, device):
    shape = (96, 48, 3, 3)
    fan = torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    t = genesis.empty(*shape, device=device)
    v = _values(init.kaiming_uniform_(t, a, mode, nonlinearity))
    assert v.max() <= math.sqrt(3) * std and v.max() > 0.95 * math.sqrt(3) * std
    v = _values(init.kaiming_normal_(t, a, mode, nonlinearity))
    assert abs(v.std() - std) < 0.03 * std


def test_kaiming_errors_and_empty(device):
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(genesis.empty(3, 3, device=device), mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(genesis.empty(3, device=device))
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(genesis.empty(0, 3, device=device))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2)], ids=str)
def test_orthogonal(shape, device):
    t = genesis.empty(*shape, dtype=genesis.float64, device=device)
    q = _values(init.orthogonal_(t, gain=2.0)).reshape(shape[0], -1)
    small = q.T @ q if shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-10)


def test_generator_makes_draws_reproducible(device):
    draws = []
    for _ in range(2):
        g = genesis.Generator(device).manual_seed(123)
        draws.append([_values(fn(genesis.empty(5, 4, device=device), generator=g)) for fn in
                      (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_uniform_,
                       init.kaiming_normal_, init.orthogonal_)])
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    genesis.manual_seed(7)
    first = _values(nn.Linear(4, 3).weight)
    genesis.manual_seed(7)
    np.testing.assert_array_equal(first, _values(nn.Linear(4, 3).weight))


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float64])
def test_init_keeps_dtype(dtype, device):
    t = genesis.empty(4, 5, dtype=dtype, device=device)
    assert init.kaiming_uniform_(t).dtype is dtype
    assert init.trunc_normal_(t, std=0.02).dtype is dtype


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 3, 3, 5), 2), ((3, 5, 3, 3, 3), 1),
                                           ((8, 2, 1, 1), 4)])
def test_dirac_matches_torch(shape, groups, device):
    ours = init.dirac_(genesis.empty(*shape, device=device), groups)
    np.testing.assert_array_equal(ours.cpu().numpy(),
                                  torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())


def test_dirac_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(genesis.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(genesis.empty(3, 2, 2), groups=2)


def test_sparse_zeros_a_fraction_of_each_column(device):
    w = init.sparse_(genesis.empty(200, 30, device=device), sparsity=0.3, std=0.5).cpu().numpy()
    assert ((w == 0).sum(axis=0) == math.ceil(0.3 * 200)).all()
    nonzero = w[w != 0]
    assert abs(nonzero.std() - 0.5) < 0.05
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.sparse_(genesis.empty(2), 0.1)


@pytest.mark.parametrize("name, args", [
    ("uniform", (-1.0, 1.0)), ("normal", (0.0, 2.0)), ("constant", (0.25,)),
    ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
    ("kaiming_normal", ()), ("orthogonal", ()), ("eye", ()), ("sparse", (0.5,))])
def test_deprecated_names_fill_with_torchs_warning(name, args, device):
    """`nn.init.xavier_uniform(w)` (without the underscore), as older scripts call it: the same
    fill as the underscore form, seeded alike, with PyTorch's FutureWarning."""
    with pytest.warns(FutureWarning) as theirs:
        getattr(torch.nn.init, name)(torch.empty(4, 6), *args)
    w, expected = genesis.empty(4, 6, device=device), genesis.empty(4, 6, device=device)
    genesis.manual_seed(3)
    with pytest.warns(FutureWarning) as ours:
        assert getattr(init, name)(w, *args) is w
    genesis.manual_seed(3)
    getattr(init, name + "_")(expected, *args)
    assert str(ours[0].message) == str(theirs[0].message)
    assert ours[0].filename == __file__
    np.testing.assert_array_equal(w.cpu().numpy(), expected.cpu().numpy())
