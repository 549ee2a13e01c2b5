"""NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop, SparseAdam, Adafactor and Muon against
torch.optim: a small model trained 20 steps from the same weights (float32, loop and fused
paths), state dicts loaded both ways, and PyTorch's validation errors."""

import numpy as np
import pytest
import torch

import genesis
from genesis import optim

CASES = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
    ("Adafactor", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5, weight_decay=0.1,
                       maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"
       for name, kw in CASES]
FUSED = {"NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop"}
SHAPES = [(6, 4), (4,), (3, 5, 2), ()]


def _weights(rng, dtype=np.float32):
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _loss(lib, params, x, y):
    """A small model: tanh(x W) (.) a 3-D and a 0-d weight, squared error to y."""
    w, b, v, s = params
    h = lib.tanh(x @ w + b)
    z = (h.reshape(-1, 4)[:, :2] * v.reshape(-1, 2)[:8]).sum(1) * s
    return ((z - y) ** 2).mean()


def _data(rng):
    return rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal(8).astype(
        np.float32)


def _pair(rng, name, kwargs, fused):
    weights = _weights(rng)
    gp = [genesis.tensor(w, requires_grad=True) for w in weights]
    tp = [torch.tensor(w, requires_grad=True) for w in weights]
    gopt = getattr(optim, name)(gp, **kwargs)
    if fused:
        gopt.param_groups[0]["fused"] = True
    topt = getattr(torch.optim, name)(tp, **kwargs, foreach=False)
    return gp, tp, gopt, topt


def _step(gopt, topt, gp, tp, x, y):
    """One step of each on the gradients genesis's autograd computes at its parameters; torch's
    optimizer gets the same values, so what is compared is the optimizers (the frameworks'
    gradients differ in their last bits). Returns torch's parameters before the step. Under
    `maximize` the objective is the negated loss, so that the model still converges."""
    sign = -1.0 if topt.defaults.get("maximize") else 1.0
    gopt.zero_grad()
    (sign * _loss(genesis, gp, genesis.tensor(x), genesis.tensor(y))).backward()
    before = [t.detach().numpy().copy() for t in tp]
    for g, t in zip(gp, tp):
        t.grad = torch.tensor(g.grad.numpy())
    gopt.step()
    topt.step()
    return before


def _assert_params(gp, tp, before, rtol=1e-6):
    """Within rtol of torch's, relative to the values and, where an update cancels most of a
    parameter, to the parameter's size before the step."""
    for g, t, b in zip(gp, tp, before):
        expected = t.detach().numpy()
        scale = max(np.abs(expected).max(initial=0), np.abs(b).max(initial=0))
        np.testing.assert_allclose(g.detach().numpy(), expected, rtol=rtol, atol=rtol * scale)


def _sync(gp, tp):
    """Copy torch's parameters into genesis's: each step is checked from the same values (a
    last-bit difference of one step is not accumulated, as a parameter shrinks, into a
    relative one)."""
    with genesis.no_grad():
        for g, t in zip(gp, tp):
            g.copy_(genesis.tensor(t.detach().numpy()))


@pytest.mark.parametrize("fused", [False, True], ids=["loop", "fused"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_trains_like_torch_20_steps(name, kwargs, fused, rng):
    if fused and name not in FUSED:
        pytest.skip(f"{name} has no fused step")
    gp, tp, gopt, topt = _pair(rng, name, kwargs, fused)
    x, y = _data(rng)
    for _ in range(20):
        _assert_params(gp, tp, _step(gopt, topt, gp, tp, x, y))
        _sync(gp, tp)
    for g, t in zip(gp, tp):
        gs, ts = gopt.state[g], topt.state[t]
        assert gs.keys() == ts.keys()
        for key in ts:
            np.testing.assert_allclose(np.asarray(gs[key].numpy()), ts[key].numpy(), rtol=1e-5,
                                       atol=1e-6 * max(1.0, float(ts[key].abs().max())))


def _to_torch_state(state_dict):
    return {"state": {i: {k: torch.tensor(v.numpy()) if isinstance(v, genesis.Tensor) else v
                          for k, v in s.items()} for i, s in state_dict["state"].items()},
            "param_groups": state_dict["param_groups"]}


def _to_genesis_state(state_dict):
    return {"state": {i: {k: genesis.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
                          for k, v in s.items()} for i, s in state_dict["state"].items()},
            "param_groups": state_dict["param_groups"]}


@pytest.mark.parametrize("name,kwargs", CASES[1::2], ids=IDS[1::2])
def test_state_dicts_load_both_ways(name, kwargs, rng):
    gp, tp, gopt, topt = _pair(rng, name, kwargs, False)
    x, y = _data(rng)
    for _ in range(5):
        _step(gopt, topt, gp, tp, x, y)
    _sync(gp, tp)
    gsaved, tsaved = gopt.state_dict(), topt.state_dict()
    assert gsaved["param_groups"][0].keys() == tsaved["param_groups"][0].keys()
    gp2 = [genesis.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
    tp2 = [t.detach().clone().requires_grad_() for t in tp]
    gopt2 = getattr(optim, name)(gp2, **kwargs)
    gopt2.load_state_dict(_to_genesis_state(tsaved))
    topt2 = getattr(torch.optim, name)(tp2, **kwargs, foreach=False)
    topt2.load_state_dict(_to_torch_state(gsaved))
    for _ in range(5):
        before = _step(gopt, topt, gp, tp, x, y)
        _step(gopt2, topt2, gp2, tp2, x, y)
        for params in (gp, gp2, tp2):
            _assert_params(params, tp, before, rtol=1e-5)


def test_step_counters_and_scalars_are_cpu_tensors_as_torch(rng):
    for name, keys in (("NAdam", ("step", "mu_product")), ("ASGD", ("step", "eta", "mu")),
                       ("Adafactor", ("step",))):
        gp, tp, gopt, topt = _pair(rng, name, {}, False)
        _step(gopt, topt, gp, tp, *_data(rng))
        for key in keys:
            mine, theirs = gopt.state[gp[0]][key], topt.state[tp[0]][key]
            assert mine.shape == () and mine.device.type == "cpu"
            assert mine.dtype.name == str(theirs.dtype).split(".")[1]
            assert float(mine) == pytest.approx(float(theirs), rel=1e-6)


def test_sparse_adam_reads_a_dense_gradient_as_its_nonzero_entries(rng):
    """Torch's SparseAdam is given the same gradients as sparse tensors (to_sparse keeps the
    nonzeros); rows of zeros (an embedding's unused ids) and an all-zero gradient included."""
    weights = rng.standard_normal((10, 3)).astype(np.float32)
    gp = genesis.tensor(weights, requires_grad=True)
    tp = torch.tensor(weights, requires_grad=True)
    gopt = optim.SparseAdam([gp], lr=0.05, betas=(0.8, 0.95), maximize=True)
    topt = torch.optim.SparseAdam([tp], lr=0.05, betas=(0.8, 0.95), maximize=True)
    for i in range(20):
        grad = rng.standard_normal((10, 3)).astype(np.float32)
        grad[rng.random(10) < 0.5] = 0
        if i == 3:
            grad[:] = 0
        gp.grad = genesis.tensor(grad)
        tp.grad = torch.tensor(grad).to_sparse()
        before = tp.detach().numpy().copy()
        gopt.step()
        topt.step()
        _assert_params([gp], [tp], [before])
    assert gopt.state[gp]["step"] == topt.state[tp]["step"] == 20
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(gopt.state[gp][key].numpy(), topt.state[tp][key].numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_muon_matches_torch(rng):
    """20 steps from the same weights and gradients. The orthogonalization runs in bfloat16, as
    PyTorch's (it agrees bit for bit on the same input), but a momentum that differs from
    torch's by a float32 ulp can round to the neighbouring bfloat16 value, and five Newton-Schulz
    iterations spread that over a few bfloat16 ulps of the update (entries below 1.5, the
    adjusted lr at most 1.5 lr): 8 ulps of 1 allowed, scaled by the lr."""
    shapes = [(6, 4), (3, 7)]
    weights = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gp = [genesis.tensor(w, requires_grad=True) for w in weights]
    tp = [torch.tensor(w, requires_grad=True) for w in weights]
    kwargs = [dict(lr=0.02), dict(lr=0.01, nesterov=False, weight_decay=0.0, momentum=0.9,
                                  adjust_lr_fn="match_rms_adamw")]
    for kw in kwargs:
        gopt, topt = optim.Muon(gp, **kw), torch.optim.Muon(tp, **kw)
        for _ in range(20):
            for g, t in zip(gp, tp):
                grad = rng.standard_normal(t.shape).astype(np.float32)
                g.grad, t.grad = genesis.tensor(grad), torch.tensor(grad)
            gopt.step()
            topt.step()
            for g, t in zip(gp, tp):
                np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=0,
                                           atol=8 * 2 ** -8 * 1.5 * kw["lr"] * 1.5)
            _sync(gp, tp)
            for g, t in zip(gp, tp):
                gopt.state[g]["momentum_buffer"].copy_(
                    genesis.tensor(topt.state[t]["momentum_buffer"].numpy()))


BAD = [
    ("NAdam", dict(lr=-1), "Invalid learning rate: -1"),
    ("NAdam", dict(momentum_decay=-0.1), "Invalid momentum_decay value: -0.1"),
    ("NAdam", dict(betas=(1.0, 0.9)), r"Invalid beta parameter at index 0: 1.0"),
    ("RAdam", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adamax", dict(betas=(0.9, 1.5)), r"Invalid beta parameter at index 1: 1.5"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("ASGD", dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    ("Rprop", dict(etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    ("Muon", dict(momentum=-1), "momentum should be >= 0 but is: -1"),
    ("Muon", dict(adjust_lr_fn="x"), "Adjust learning rate function x is not supported"),
    ("LBFGS", dict(lr=-1.0), "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("name,kwargs,message", BAD, ids=[f"{n}-{m}" for n, _, m in BAD])
def test_bad_hyperparameters_raise_as_torch(name, kwargs, message):
    for lib, opt in ((torch, torch.optim), (genesis, optim)):
        with pytest.raises(ValueError, match=message):
            getattr(opt, name)([lib.zeros(2, 2, requires_grad=True)], **kwargs)


def test_muon_rejects_non_matrix_parameters():
    for lib, opt in ((torch, torch.optim), (genesis, optim)):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            opt.Muon([lib.zeros(3, requires_grad=True)])


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop"])
def test_foreach_capturable_and_group_keys_as_torch(name):
    gp = [genesis.zeros(2, requires_grad=True)]
    tp = [torch.zeros(2, requires_grad=True)]
    gopt = getattr(optim, name)(gp, foreach=True, capturable=True)
    topt = getattr(torch.optim, name)(tp, foreach=True, capturable=True)
    assert gopt.param_groups[0].keys() == topt.param_groups[0].keys()
    assert gopt.defaults == topt.defaults
