"""Optimizers against PyTorch step by step (float64, 1e-10), state dicts and bad input."""

import copy
import warnings

import numpy as np
import pytest
import torch

import genesis
from genesis import optim

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.03, betas=(0.5, 0.9), weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.7, weight_decay=0.05)),
    ("RMSprop", dict(lr=0.01, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, eps=1e-4)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, eps=1e-3, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CASES]


def make_params(rng):
    arrays = [rng.standard_normal(s) for s in SHAPES]
    g = [genesis.tensor(a, dtype=genesis.float64, requires_grad=True) for a in arrays]
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    return g, t


def groups(params, kwargs):
    """Two parameter groups: the second overrides lr (and momentum/betas where they exist)."""
    second = {"params": params[2:], "lr": kwargs.get("lr", 1e-3) * 0.5}
    if "momentum" in kwargs:
        second["momentum"] = kwargs["momentum"] * 0.5
    if "betas" in kwargs:
        second["betas"] = (0.7, 0.95)
    return [{"params": params[:2]}, second]


def set_grads(gp, tp, rng, skip=None):
    for i, (g, t) in enumerate(zip(gp, tp)):
        if i == skip:
            g.grad, t.grad = None, None
            continue
        arr = rng.standard_normal(t.shape)
        g.grad = genesis.tensor(arr, dtype=genesis.float64)
        t.grad = torch.tensor(arr, dtype=torch.float64)


def assert_same_params(gp, tp):
    for g, t in zip(gp, tp):
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-10)


def assert_same_state(gopt, topt):
    gs, ts = gopt.state_dict(), topt.state_dict()
    assert gs["state"].keys() == ts["state"].keys()
    for idx, tstate in ts["state"].items():
        assert gs["state"][idx].keys() == tstate.keys()
        for key, tv in tstate.items():
            np.testing.assert_allclose(gs["state"][idx][key].numpy(), tv.numpy(), rtol=1e-10,
                                       atol=1e-12)
    for gg, tg in zip(gs["param_groups"], ts["param_groups"]):
        assert gg["params"] == tg["params"]
        assert gg["lr"] == tg["lr"]


def run_steps(gopt, topt, gp, tp, rng, steps, with_closure=False):
    for i in range(steps):
        set_grads(gp, tp, rng, skip=i % 5 if i % 3 == 0 else None)
        if with_closure:
            assert gopt.step(lambda: 1.5) == 1.5
        else:
            gopt.step()
        topt.step()


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_matches_torch_20_steps(name, kwargs, rng):
    gp, tp = make_params(rng)
    gopt = getattr(optim, name)(groups(gp, kwargs), **kwargs)
    topt = getattr(torch.optim, name)(groups(tp, kwargs), **kwargs, foreach=False)
    for i in range(20):
        set_grads(gp, tp, rng, skip=i % 5 if i % 3 == 0 else None)
        gopt.step()
        topt.step()
        assert_same_params(gp, tp)
    assert_same_state(gopt, topt)


@pytest.mark.parametrize("name,kwargs", CASES[1::2], ids=IDS[1::2])
def test_state_dict_round_trip_continues_identically(name, kwargs, rng, tmp_path):
    gp, tp = make_params(rng)
    gopt = getattr(optim, name)(groups(gp, kwargs), **kwargs)
    topt = getattr(torch.optim, name)(groups(tp, kwargs), **kwargs, foreach=False)
    run_steps(gopt, topt, gp, tp, rng, 7)
    genesis.save(gopt.state_dict(), tmp_path / "opt.safetensors")
    fresh_params = [p.detach().clone().requires_grad_(True) for p in gp]
    fresh = getattr(optim, name)(groups(fresh_params, kwargs), **kwargs)
    fresh.load_state_dict(genesis.load(tmp_path / "opt.safetensors"))
    for i in range(8):
        set_grads(gp, tp, rng, skip=i % 4 if i % 2 else None)
        for p, q in zip(fresh_params, gp):
            p.grad = None if q.grad is None else q.grad.clone()
        gopt.step()
        fresh.step()
        topt.step()
    assert_same_params(fresh_params, tp)
    assert_same_params(gp, tp)
    assert_same_state(fresh, topt)


def test_load_torch_state_dict(rng):
    gp, tp = make_params(rng)
    kwargs = dict(lr=0.01, amsgrad=True, weight_decay=0.1)
    topt = torch.optim.AdamW(groups(tp, kwargs), **kwargs, foreach=False)
    gopt = optim.AdamW(groups(gp, kwargs), **kwargs)
    run_steps(gopt, topt, gp, tp, rng, 3)
    converted = copy.deepcopy(topt.state_dict())
    for state in converted["state"].values():
        for k, v in state.items():
            state[k] = genesis.tensor(v.numpy())
    fresh_params = [genesis.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    fresh = optim.AdamW(groups(fresh_params, kwargs), **kwargs)
    fresh.load_state_dict(converted)
    run_steps(fresh, topt, fresh_params, tp, rng, 5)
    assert_same_params(fresh_params, tp)


def test_state_dict_format(rng):
    gp, tp = make_params(rng)
    gopt = optim.SGD(groups(gp, {"lr": 0.1, "momentum": 0.9}), lr=0.1, momentum=0.9)
    set_grads(gp, tp, rng)
    gopt.step()
    sd = gopt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    assert sd["state"][0]["momentum_buffer"] is gopt.state[gp[0]]["momentum_buffer"]
    torch_keys = set(torch.optim.SGD(tp, lr=0.1).state_dict()["param_groups"][0])
    assert set(sd["param_groups"][0]) == torch_keys


def test_step_counter_is_cpu_tensor_in_state(rng):
    gp, _ = make_params(rng)
    opt = optim.Adam(gp, lr=0.1)
    for p in gp:
        p.grad = genesis.ones_like(p)
    opt.step()
    opt.step()
    step = opt.state[gp[0]]["step"]
    assert isinstance(step, genesis.Tensor) and step.ndim == 0 and step.item() == 2.0
    assert step.dtype is genesis.float32


def test_closure_runs_with_grad_enabled(rng):
    gp, _ = make_params(rng)
    opt = optim.SGD(gp, lr=0.1)

    def closure():
        assert genesis.is_grad_enabled()
        for p in gp:
            p.grad = genesis.ones_like(p)
        return 3.0

    with genesis.no_grad():
        assert opt.step(closure) == 3.0
    assert not gp[0].requires_grad or gp[0].is_leaf


def test_zero_grad(rng):
    gp, _ = make_params(rng)
    opt = optim.SGD(gp, lr=0.1)
    for p in gp:
        p.grad = genesis.ones_like(p)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.detach().numpy().any() for p in gp)
    opt.zero_grad()
    assert all(p.grad is None for p in gp)


def test_float32_params_match_torch(rng):
    arr = rng.standard_normal((4, 3)).astype(np.float32)
    g = genesis.tensor(arr, requires_grad=True)
    t = torch.tensor(arr, requires_grad=True)
    gopt, topt = optim.AdamW([g], lr=0.01), torch.optim.AdamW([t], lr=0.01, foreach=False)
    for _ in range(5):
        grad = rng.standard_normal((4, 3)).astype(np.float32)
        g.grad, t.grad = genesis.tensor(grad), torch.tensor(grad)
        gopt.step()
        topt.step()
    assert g.dtype is genesis.float32 and gopt.state[g]["exp_avg"].dtype is genesis.float32
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_add_param_group_and_repr(rng):
    gp, tp = make_params(rng)
    opt = optim.SGD(gp[:2], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": gp[2:], "lr": 0.01})
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.01
    topt = torch.optim.SGD(tp[:2], lr=0.1, momentum=0.9)
    topt.add_param_group({"params": tp[2:], "lr": 0.01})
    assert repr(opt) == repr(topt)


def test_adagrad_state_is_created_with_the_group(rng):
    gp, tp = make_params(rng)
    gopt = optim.Adagrad(gp[:2], lr=0.1, initial_accumulator_value=0.5)
    gopt.add_param_group({"params": gp[2:]})
    topt = torch.optim.Adagrad([{"params": tp[:2]}, {"params": tp[2:]}], lr=0.1,
                               initial_accumulator_value=0.5)
    assert_same_state(gopt, topt)


def test_named_parameters_are_accepted(rng):
    gp, _ = make_params(rng)
    opt = optim.Adam([("a", gp[0]), ("b", gp[1])], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]


@pytest.mark.parametrize("build,error,message", [
    (lambda p: optim.SGD([], lr=0.1), ValueError, "optimizer got an empty parameter list"),
    (lambda p: optim.SGD([p * 2], lr=0.1), ValueError, "can't optimize a non-leaf Tensor"),
    (lambda p: optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1), ValueError,
     "some parameters appear in more than one parameter group"),
    (lambda p: optim.SGD(p, lr=0.1), TypeError, "should be an iterable of Tensors or dicts"),
    (lambda p: optim.SGD([{"params": {p}}], lr=0.1), TypeError, "ordered collections"),
    (lambda p: optim.SGD([1.0], lr=0.1), TypeError, "optimizer can only optimize Tensors"),
    (lambda p: optim.SGD([p], lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.SGD([p], lr=0.1, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam([p], betas=(1.0, 0.9)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam([p], eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    (lambda p: optim.Adam([p], betas=(0, 0.99)), ValueError,
     "betas must be either both floats or both Tensors"),
    (lambda p: optim.AdamW([p], betas=(genesis.tensor(0.9), 0.99)), ValueError,
     "betas must be either both floats or both Tensors"),
    (lambda p: optim.RMSprop([p], alpha=-0.5), ValueError, "Invalid alpha value: -0.5"),
    (lambda p: optim.Adagrad([p], lr_decay=-0.5), ValueError, "Invalid lr_decay value: -0.5"),
    (lambda p: optim.AdamW([p], weight_decay=-1.0), ValueError,
     "Invalid weight_decay value: -1.0"),
    (lambda p: optim.RMSprop([p], differentiable=True), NotImplementedError,
     "RMSprop: differentiable=True is not supported"),
])
def test_bad_input(build, error, message):
    p = genesis.zeros(3, requires_grad=True)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(p)


DUPLICATE_WARNING = ("optimizer contains a parameter group with duplicate parameters; in future, "
                     "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                     "more information")


@pytest.mark.parametrize("name,kwargs", CASES[1:3] + CASES[5:7], ids=IDS[1:3] + IDS[5:7])
def test_duplicate_parameters_warn_and_step_as_torch(name, kwargs, rng):
    """A group listing a parameter twice warns and keeps both entries, as torch's: the
    parameter steps twice a step, and the state dict numbers it by its last entry."""
    gp, tp = make_params(rng)
    opts = []
    for lib, params in ((optim, gp), (torch.optim, tp)):
        with pytest.warns(UserWarning) as record:
            opt = getattr(lib, name)([params[0], params[1], params[0]], **kwargs, foreach=False)
        assert [str(w.message) for w in record] == [DUPLICATE_WARNING]
        opt.add_param_group({"params": params[2:]})
        opts.append(opt)
    assert len(opts[0].param_groups[0]["params"]) == 3
    run_steps(*opts, gp, tp, rng, 6)
    assert_same_params(gp, tp)
    assert_same_state(*opts)


@pytest.mark.parametrize("change,message", [
    (lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])),
     "different number of parameter groups"),
    (lambda sd: sd["param_groups"][0]["params"].pop(),
     "doesn't match the size of optimizer's group"),
])
def test_load_state_dict_mismatch(change, message, rng):
    gp, _ = make_params(rng)
    opt = optim.Adam(gp, lr=0.1)
    sd = copy.deepcopy(opt.state_dict())
    change(sd)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)


def test_optimizer_works_on_training_loop(rng):
    x = genesis.tensor(rng.standard_normal((16, 3)))
    w = genesis.zeros(3, requires_grad=True)
    target = x * genesis.tensor([1.0, -2.0, 0.5])
    opt = optim.Adam([w], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(200):
            opt.zero_grad()
            loss = ((x * w - target) ** 2).sum()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [1.0, -2.0, 0.5], atol=1e-2)
