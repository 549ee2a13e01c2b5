"""nn.utils.prune against torch: masks, the reparametrization's layout, forward outputs and
gradients of pruned layers, iterative and global pruning, removal, state dicts and errors.

Weights come from a normal distribution, so their magnitudes and norms are distinct: which entry
topk picks among equal scores is not fixed by torch, and Genesis's choice (the lowest index, its
sort being stable) may differ from torch's there."""

import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.utils.prune as tprune
from helpers import assert_close, from_torch, to_torch

import genesis
from genesis import nn
from genesis.nn.utils import prune

LAYERS = {"linear": (lambda m: m.Linear(6, 5), (3, 6)),
          "conv2d": (lambda m: m.Conv2d(3, 4, 3), (2, 3, 6, 6)),
          "conv1d": (lambda m: m.Conv1d(3, 4, 5), (2, 3, 9))}


def _pair(rng, layer, device="cpu"):
    """The same float64 layer in genesis (on `device`) and torch, with normal weights."""
    make, _ = LAYERS[layer]
    t = make(tnn).double()
    with torch.no_grad():
        for p in t.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    g = make(nn).to(genesis.float64)
    g.load_state_dict({k: from_torch(v) for k, v in t.state_dict().items()})
    return g.to(device), t


def _input(rng, layer, device="cpu"):
    x = rng.standard_normal(LAYERS[layer][1])
    return genesis.tensor(x, device=device), torch.tensor(x)


def _assert_reparametrized(g, name="weight"):
    """`name` is a plain attribute equal to mask * orig, `_orig` a Parameter, `_mask` a buffer,
    and one pruning method on `name` is a forward pre-hook."""
    assert name not in g._parameters and name not in g._buffers
    assert isinstance(g._parameters[name + "_orig"], nn.Parameter)
    assert name + "_mask" in g._buffers
    assert not isinstance(getattr(g, name), nn.Parameter)
    assert name in g.__dict__
    hooks = [h for h in g._forward_pre_hooks.values()
             if isinstance(h, prune.BasePruningMethod) and h._tensor_name == name]
    assert len(hooks) == 1
    expected = (getattr(g, name + "_mask") * getattr(g, name + "_orig")).detach()
    assert_close(getattr(g, name).detach().cpu(), to_torch(expected.cpu()))


def _assert_same_pruning(g, t, rng, layer, name="weight"):
    """Same masks, layouts, forward outputs and gradients as the pruned torch layer."""
    g.zero_grad()
    t.zero_grad()
    assert list(g._parameters) == list(t._parameters)
    assert list(g._buffers) == list(t._buffers)
    assert list(g.state_dict()) == list(t.state_dict())
    assert_close(getattr(g, name + "_mask").cpu(), getattr(t, name + "_mask"))
    _assert_reparametrized(g, name)
    device = getattr(g, name + "_orig").device
    xg, xt = _input(rng, layer, device)
    out_g, out_t = g(xg), t(xt)
    assert_close(out_g.detach().cpu(), out_t.detach())
    weights = rng.standard_normal(tuple(out_t.shape))
    (out_g * genesis.tensor(weights, device=device)).sum().backward()
    (out_t * torch.tensor(weights)).sum().backward()
    grad = getattr(g, name + "_orig").grad.cpu()
    assert_close(grad, getattr(t, name + "_orig").grad)
    mask = getattr(g, name + "_mask").cpu().numpy()
    assert np.all(grad.numpy()[mask == 0] == 0)


@pytest.mark.parametrize("layer", ["linear", "conv2d"])
@pytest.mark.parametrize("amount", [0, 7, 0.0, 0.3, 0.55, 1.0])
def test_l1_unstructured(rng, device, layer, amount):
    g, t = _pair(rng, layer, device)
    assert prune.l1_unstructured(g, "weight", amount=amount) is g
    tprune.l1_unstructured(t, "weight", amount=amount)
    assert isinstance(next(iter(g._forward_pre_hooks.values())), prune.L1Unstructured)
    _assert_same_pruning(g, t, rng, layer)


def test_l1_unstructured_importance_scores(rng, device):
    g, t = _pair(rng, "linear", device)
    scores = rng.standard_normal((5, 6))
    prune.l1_unstructured(g, "weight", 12, importance_scores=genesis.tensor(scores,
                                                                             device=device))
    tprune.l1_unstructured(t, "weight", 12, importance_scores=torch.tensor(scores))
    _assert_same_pruning(g, t, rng, "linear")
    prune.l1_unstructured(g, "bias", 0.4)
    tprune.l1_unstructured(t, "bias", 0.4)
    _assert_same_pruning(g, t, rng, "linear", "bias")


@pytest.mark.parametrize("layer, dim, n", [
    ("linear", 0, 2), ("linear", 1, 1), ("linear", -1, math.inf), ("linear", 0, -math.inf),
    ("linear", 1, "fro"), ("linear", 0, 3), ("conv2d", 0, 2), ("conv2d", 1, 1),
    ("conv2d", -1, 2), ("conv1d", 2, "nuc"), ("conv1d", 0, "nuc")])
def test_ln_structured(rng, device, layer, dim, n):
    g, t = _pair(rng, layer, device)
    assert prune.ln_structured(g, "weight", amount=0.5, n=n, dim=dim) is g
    tprune.ln_structured(t, "weight", amount=0.5, n=n, dim=dim)
    _assert_same_pruning(g, t, rng, layer)


@pytest.mark.parametrize("amount", [0, 2, 0.0, 1.0])
def test_ln_structured_amounts_and_scores(rng, device, amount):
    g, t = _pair(rng, "conv2d", device)
    scores = rng.standard_normal((4, 3, 3, 3))
    prune.ln_structured(g, "weight", amount, 1, 0,
                        importance_scores=genesis.tensor(scores, device=device))
    tprune.ln_structured(t, "weight", amount, 1, 0, importance_scores=torch.tensor(scores))
    _assert_same_pruning(g, t, rng, "conv2d")


@pytest.mark.parametrize("amount, count", [(0, 0), (9, 9), (0.25, 8), (1.0, 30)])
def test_random_unstructured(rng, device, amount, count):
    g, _ = _pair(rng, "linear", device)
    prune.random_unstructured(g, "weight", amount=amount)
    mask = g.weight_mask.cpu().numpy()
    assert g.weight_mask.dtype is genesis.float64
    assert set(np.unique(mask)) <= {0.0, 1.0} and int((mask == 0).sum()) == count
    _assert_reparametrized(g)


@pytest.mark.parametrize("dim, amount, count", [(0, 2, 2), (1, 0.5, 2), (-1, 0, 0),
                                                (0, 1.0, 4)])
def test_random_structured(rng, device, dim, amount, count):
    g, _ = _pair(rng, "conv2d", device)
    prune.random_structured(g, "weight", amount=amount, dim=dim)
    mask = np.moveaxis(g.weight_mask.cpu().numpy(), dim, 0).reshape(g.weight.shape[dim], -1)
    assert np.all((mask == 0).all(axis=1) | (mask == 1).all(axis=1))
    assert int((mask == 0).all(axis=1).sum()) == count
    _assert_reparametrized(g)


def test_identity_and_custom_from_mask(rng, device):
    g, t = _pair(rng, "linear", device)
    assert prune.identity(g, "weight") is g
    tprune.identity(t, "weight")
    _assert_same_pruning(g, t, rng, "linear")
    mask = rng.integers(0, 2, size=5)
    assert prune.custom_from_mask(g, "bias", genesis.tensor(mask, device=device)) is g
    tprune.custom_from_mask(t, "bias", torch.tensor(mask))
    assert g.bias_mask.dtype is genesis.float64
    _assert_same_pruning(g, t, rng, "linear", "bias")


def test_iterative_pruning_uses_a_container(rng, device):
    g, t = _pair(rng, "conv2d", device)
    steps = [("l1_unstructured", {"amount": 10}),
             ("ln_structured", {"amount": 1, "n": 2, "dim": 0}),
             ("l1_unstructured", {"amount": 0.2}),
             ("ln_structured", {"amount": 0.5, "n": 1, "dim": 1}),
             ("custom_from_mask", {"mask": rng.integers(0, 2, size=(4, 3, 3, 3))})]
    for i, (fn, kwargs) in enumerate(steps):
        gk = {k: genesis.tensor(v, device=device) if isinstance(v, np.ndarray) else v
              for k, v in kwargs.items()}
        tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        getattr(prune, fn)(g, "weight", **gk)
        getattr(tprune, fn)(t, "weight", **tk)
        _assert_same_pruning(g, t, rng, "conv2d")
        (hook,) = g._forward_pre_hooks.values()
        if i:
            assert isinstance(hook, prune.PruningContainer) and len(hook) == i + 1
            assert [type(m).__name__ for m in hook] == \
                [type(m).__name__ for m in next(iter(t._forward_pre_hooks.values()))]


def test_container_is_reused_in_place(rng):
    g, _ = _pair(rng, "linear")
    first = prune.L1Unstructured.apply(g, "weight", amount=3)
    container = prune.RandomUnstructured.apply(g, "weight", amount=2)
    assert isinstance(container, prune.PruningContainer) and container[0] is first
    assert prune.Identity.apply(g, "weight") is container and len(container) == 3
    assert int((g.weight_mask.numpy() == 0).sum()) == 5


def test_global_unstructured(rng):
    (g1, t1), (g2, t2) = _pair(rng, "linear"), _pair(rng, "conv2d")
    prune.l1_unstructured(g1, "bias", 2)
    tprune.l1_unstructured(t1, "bias", 2)
    scores = rng.standard_normal((4, 3, 3, 3))
    prune.global_unstructured([(g1, "weight"), (g2, "weight"), (g1, "bias")],
                              pruning_method=prune.L1Unstructured,
                              importance_scores={(g2, "weight"): genesis.tensor(scores)},
                              amount=50)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t1, "bias")],
                               pruning_method=tprune.L1Unstructured,
                               importance_scores={(t2, "weight"): torch.tensor(scores)},
                               amount=50)
    assert isinstance(next(iter(g2._forward_pre_hooks.values())), prune.CustomFromMask)
    zeros = sum(int((m.numpy() == 0).sum()) for m in (g1.weight_mask, g1.bias_mask,
                                                         g2.weight_mask))
    assert zeros == 52
    _assert_same_pruning(g1, t1, rng, "linear")
    _assert_same_pruning(g1, t1, rng, "linear", "bias")
    _assert_same_pruning(g2, t2, rng, "conv2d")


def test_global_unstructured_random_counts(rng):
    modules = [_pair(rng, "linear")[0] for _ in range(3)]
    prune.global_unstructured(((m, "weight") for m in modules),
                              pruning_method=prune.RandomUnstructured, amount=0.5)
    assert sum(int((m.weight_mask.numpy() == 0).sum()) for m in modules) == 45
    for m in modules:
        _assert_reparametrized(m)


def test_global_unstructured_errors(rng):
    g, _ = _pair(rng, "linear")
    with pytest.raises(TypeError, match="parameters is not an Iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=2)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(g, "weight")], prune.L1Unstructured, [], amount=2)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(g, "weight")], prune.RandomStructured, amount=2)
    assert not prune.is_pruned(g)


def test_remove_makes_pruning_permanent(rng, device):
    g, t = _pair(rng, "linear", device)
    for m, p in ((g, prune), (t, tprune)):
        p.l1_unstructured(m, "weight", 10)
        p.ln_structured(m, "weight", 1, 2, 0)
    orig = g.weight_orig
    assert prune.remove(g, "weight") is g
    tprune.remove(t, "weight")
    assert list(g._parameters) == list(t._parameters) == ["bias", "weight"]
    assert list(g._buffers) == [] and not g._forward_pre_hooks
    assert g.weight is orig and isinstance(g.weight, nn.Parameter)
    assert_close(g.weight.detach().cpu(), t.weight.detach())
    assert not prune.is_pruned(g)
    xg, xt = _input(rng, "linear", device)
    assert_close(g(xg).detach().cpu(), t(xt).detach())


def test_remove_unpruned_raises(rng):
    g, t = _pair(rng, "linear")
    prune.identity(g, "bias")
    tprune.identity(t, "bias")
    _same_error(lambda: prune.remove(g, "weight"), lambda: tprune.remove(t, "weight"),
                ValueError)


def test_is_pruned_looks_into_submodules(rng):
    net = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.ReLU(), nn.Linear(4, 2)))
    assert not prune.is_pruned(net)
    prune.random_unstructured(net[1][1], "bias", amount=1)
    assert prune.is_pruned(net) and prune.is_pruned(net[1]) and not prune.is_pruned(net[0])


def test_hook_recomputes_the_pruned_weight(rng):
    g, t = _pair(rng, "linear")
    prune.l1_unstructured(g, "weight", 12)
    tprune.l1_unstructured(t, "weight", 12)
    new = rng.standard_normal((5, 6))
    with genesis.no_grad():
        g.weight_orig.copy_(genesis.tensor(new))
    with torch.no_grad():
        t.weight_orig.copy_(torch.tensor(new))
    xg, xt = _input(rng, "linear")
    assert_close(g(xg).detach(), t(xt).detach())
    assert_close(g.weight.detach(), t.weight.detach())


@pytest.mark.parametrize("prune_first", ["genesis", "torch"])
def test_state_dict_round_trip(rng, prune_first):
    """A pruned model's state dict loads into the other framework's pruned model, both ways."""
    g, t = _pair(rng, "conv2d")
    gs, ts = _pair(rng, "conv2d")
    for m, p in ((g, prune), (t, tprune), (gs, prune), (ts, tprune)):
        p.random_unstructured(m, "weight", 0.3)
        p.random_structured(m, "weight", 1, 0)
        p.identity(m, "bias")
    if prune_first == "torch":
        g.load_state_dict({k: from_torch(v) for k, v in ts.state_dict().items()})
        t.load_state_dict(ts.state_dict())
    else:
        t.load_state_dict({k: to_torch(v) for k, v in gs.state_dict().items()})
        g.load_state_dict(gs.state_dict())
    assert list(g.state_dict()) == list(t.state_dict()) == \
        ["weight_orig", "bias_orig", "weight_mask", "bias_mask"]
    for key, value in t.state_dict().items():
        assert_close(g.state_dict()[key], value)
    xg, xt = _input(rng, "conv2d")
    assert_close(g(xg).detach(), t(xt).detach())


def test_prune_method_and_container_api(rng):
    w = rng.standard_normal((4, 5))
    scores = rng.standard_normal((4, 5))
    default = rng.integers(0, 2, size=(4, 5)).astype(np.float64)
    for method, tmethod in ((prune.L1Unstructured(7), tprune.L1Unstructured(7)),
                            (prune.LnStructured(2, 1, 1), tprune.LnStructured(2, 1, 1))):
        assert_close(method.prune(genesis.tensor(w)), tmethod.prune(torch.tensor(w)))
        assert_close(method.prune(genesis.tensor(w), importance_scores=genesis.tensor(scores)),
                     tmethod.prune(torch.tensor(w), importance_scores=torch.tensor(scores)))
        assert_close(method.prune(genesis.tensor(w), default_mask=genesis.tensor(default)),
                     tmethod.prune(torch.tensor(w), default_mask=torch.tensor(default)))
    first = prune.L1Unstructured(2)
    first._tensor_name = "weight"
    container = prune.PruningContainer(first)
    assert container._tensor_name == "weight" and list(container) == [first]
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container.add_pruning_method(3)
    other = prune.Identity()
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter "
                                         "named 'weight' to PruningContainer"):
        container.add_pruning_method(other)
    with pytest.raises(TypeError):
        prune.BasePruningMethod()


def _same_error(g_call, t_call, exc):
    """Both calls raise `exc` with the same message (up to the framework's name)."""
    with pytest.raises(exc) as want:
        t_call()
    with pytest.raises(exc) as got:
        g_call()
    assert str(got.value) == str(want.value).replace("torch.", "genesis.")


@pytest.mark.parametrize("fn, args, exc", [
    ("l1_unstructured", ("weight", -1), ValueError),
    ("l1_unstructured", ("weight", 1.5), ValueError),
    ("l1_unstructured", ("weight", -0.1), ValueError),
    ("l1_unstructured", ("weight", "a"), TypeError),
    ("random_unstructured", ("weight", 31), ValueError),
    ("random_unstructured", ("bias", 6), ValueError),
    ("random_structured", ("weight", 6, 0), ValueError),
    ("random_structured", ("weight", 1, 2), IndexError),
    ("random_structured", ("bias", 1, 0), ValueError),
    ("ln_structured", ("weight", 7, 2, 1), ValueError),
    ("ln_structured", ("weight", 1, 2, 2), IndexError),
    ("ln_structured", ("bias", 1, 2, -1), ValueError),
    ("ln_structured", ("weight", True, 2, 0), None)])
def test_bad_amounts_and_dims(rng, fn, args, exc):
    """The errors torch raises, and a failed pruning leaves the module as it was."""
    g, t = _pair(rng, "linear")
    before = list(g._parameters)
    if exc is None:  # a bool amount is an int
        getattr(prune, fn)(g, *args)
        getattr(tprune, fn)(t, *args)
        assert_close(g.weight_mask, t.weight_mask)
        return
    _same_error(lambda: getattr(prune, fn)(g, *args), lambda: getattr(tprune, fn)(t, *args),
                exc)
    assert list(g._parameters) == before and not g._buffers and not prune.is_pruned(g)


def test_failed_iterative_pruning_keeps_the_earlier_one(rng):
    g, _ = _pair(rng, "linear")
    prune.l1_unstructured(g, "weight", 3)
    prune.random_unstructured(g, "weight", 2)
    container = next(iter(g._forward_pre_hooks.values()))
    mask = g.weight_mask.numpy().copy()
    with pytest.raises(ValueError, match="amount=40 should be smaller"):
        prune.l1_unstructured(g, "weight", 40)
    assert list(g._forward_pre_hooks.values()) == [container] and len(container) == 2
    np.testing.assert_array_equal(g.weight_mask.numpy(), mask)
    _assert_reparametrized(g)


def test_importance_scores_shape_error(rng):
    g, t = _pair(rng, "linear")
    _same_error(lambda: prune.l1_unstructured(g, "weight", 2, genesis.zeros(6, 5)),
                lambda: tprune.l1_unstructured(t, "weight", 2, torch.zeros(6, 5)),
                AssertionError)
    _same_error(lambda: prune.L1Unstructured(2).prune(genesis.zeros(3), None, genesis.zeros(4)),
                lambda: tprune.L1Unstructured(2).prune(torch.zeros(3), None, torch.zeros(4)),
                AssertionError)
    assert not prune.is_pruned(g)


def test_exported_like_torch():
    assert genesis.nn.utils.prune is prune
    assert sorted(prune.__all__) == sorted(
        n for n in dir(tprune) if not n.startswith("_") and n not in
        {"ABC", "Iterable", "abstractmethod", "numbers", "torch"})
