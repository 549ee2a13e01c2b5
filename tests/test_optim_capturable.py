"""capturable=True optimizers, the fused steps' GradScaler inputs and the capturable training
cycle (scale, backward, unscale, clip, step, update) with no host read.

A capturable step needs a CUDA device (PyTorch's rule): without a GPU the tests run on
tests/fake_cuda.py's stand-in, installed for each test only, where the CPU kernels play the CUDA
ones (their device-side contracts: step counters, a tensor lr, grad_scale and found_inf arrays).
PyTorch's CPU build has no capturable path, so the reference is its non-capturable loop, or its
CPU fused Adam/SGD for the scaler inputs.
"""

import numpy as np
import pytest
import torch
from helpers import from_torch

import fake_cuda
import genesis
from genesis import dispatch, optim
from genesis.amp import grad_scaler

CASES = [
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-4, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.01, betas=(0.0, 0.9), amsgrad=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=2, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
    ("Rprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
]
CASE_IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CASES]
SHAPES = [(3, 4), (40,), ()]
# the step's scalars are float32 0-d tensors on the device (PyTorch's capturable state), where
# PyTorch's loop takes them in double: a few float32 ulps of the update
RTOL, ATOL = 1e-5, 1e-6
# The per-optimizer scalars a capturable step keeps on the device; the rest of a parameter's
# state is per element (0-d for the 0-d parameter) and compared as tensors are.
SCALAR_STATE = ("step", "eta", "mu", "mu_product")


@pytest.fixture
def cuda(monkeypatch):
    """The "cuda" device: the GPU if there is one, else fake_cuda's stand-in for this test
    (dispatch's tables copied first, so the test leaves them as they were)."""
    if genesis.cuda.is_available():
        return "cuda"
    monkeypatch.setattr(grad_scaler.driver, "is_available", lambda: True)
    fake_cuda.install_for_test(monkeypatch)
    return "cuda"


def _pairs(rng, device, dtype=genesis.float32):
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    gp = [genesis.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in values]
    tp = [torch.tensor(v, requires_grad=True) for v in values]
    return gp, tp


def _grads(gp, tp, rng, scale=1.0):
    for g, t in zip(gp, tp):
        value = rng.standard_normal(t.shape).astype(np.float32)
        g.grad = genesis.tensor(value * np.float32(scale), device=g.device)
        t.grad = torch.tensor(value)


def _close(mine, theirs):
    np.testing.assert_allclose(mine.detach().cpu().numpy(), theirs.detach().numpy(),
                               rtol=RTOL, atol=ATOL)


def _build(name, params, kwargs, device, tensor_lr=False, **options):
    kwargs = dict(kwargs, **options)
    if tensor_lr:
        kwargs["lr"] = genesis.tensor(kwargs["lr"], device=device)
    return getattr(optim, name)(params, **kwargs)


def _no_host_reads(patch):
    """Make every read of a device value on the host raise, under `patch` (a monkeypatch)."""
    def host_read(*args):
        raise AssertionError("a capturable step read a device value on the host")
    patch.setitem(dispatch._KERNELS, ("to_numpy", "cuda"), host_read)
    patch.setattr(genesis.Tensor, "item", host_read)


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float-lr", "tensor-lr"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=CASE_IDS)
def test_capturable_steps_match_torch(name, kwargs, tensor_lr, rng, cuda, monkeypatch):
    """Six steps (one parameter without a gradient in the third) against torch's loop, none
    reading a device value on the host; the counters and the other per-parameter scalars are
    float32 0-d tensors on the device."""
    gp, tp = _pairs(rng, cuda)
    gopt = _build(name, gp, kwargs, cuda, tensor_lr, capturable=True)
    topt = getattr(torch.optim, name)(tp, **kwargs, foreach=False)
    for i in range(6):
        _grads(gp, tp, rng)
        if i == 2:
            gp[1].grad = tp[1].grad = None
        with monkeypatch.context() as patch:
            _no_host_reads(patch)
            gopt.step()
        topt.step()
    for g, t in zip(gp, tp):
        _close(g, t)
        gstate, tstate = gopt.state[g], topt.state[t]
        assert gstate.keys() == tstate.keys()
        for key, value in tstate.items():
            if key in SCALAR_STATE:
                assert gstate[key].device == g.device
                assert gstate[key].dtype is genesis.float32
                assert float(gstate[key]) == pytest.approx(float(value), rel=1e-6)
            else:
                _close(gstate[key], value)


@pytest.mark.parametrize("name,kwargs", CASES, ids=CASE_IDS)
def test_capturable_needs_a_supported_device_as_torch(name, kwargs):
    """On the CPU both libraries refuse a capturable step with PyTorch's AssertionError."""
    gp, tp = _pairs(np.random.default_rng(0), "cpu")
    for lib, params in ((genesis, gp), (torch, tp)):
        opt = getattr(lib.optim, name)(params, **kwargs, capturable=True, foreach=False)
        for p in params:
            p.grad = lib.ones_like(p)
        with pytest.raises(AssertionError, match="If capturable=True, params.* must be on "
                                                 "supported devices"):
            opt.step()


def _scaled_pair(name, kwargs, gp, tp, cuda, capturable):
    """A genesis optimizer taking GradScaler's inputs (capturable, or fused on the CPU) and
    torch's CPU fused twin."""
    options = dict(capturable=True) if capturable else dict(fused=True)
    gopt = getattr(optim, name)(gp, **kwargs, **options)
    topt = getattr(torch.optim, name)(tp, **kwargs, fused=True)
    assert gopt._step_supports_amp_scaling and topt._step_supports_amp_scaling
    return gopt, topt


def _snapshot(opt, params):
    return [p.detach().cpu().numpy().copy() for p in params] + \
        [v.detach().cpu().numpy().copy() for p in params for v in opt.state[p].values()]


@pytest.mark.parametrize("capturable", [True, False], ids=["capturable", "fused-cpu"])
@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
], ids=["Adam", "AdamW", "SGD"])
def test_grad_scale_unscales_and_found_inf_skips_as_torch(name, kwargs, capturable, rng, cuda):
    """With PyTorch's protocol (optimizer.grad_scale, optimizer.found_inf): the gradients are
    divided by the scale and stored so; a nonzero flag leaves parameters, state, counters and
    gradients as they were."""
    if name == "SGD" and capturable:
        pytest.skip("SGD has no capturable option")
    device = cuda if capturable else "cpu"
    gp, tp = _pairs(rng, device)
    gopt, topt = _scaled_pair(name, kwargs, gp, tp, cuda, capturable)
    for found in (0.0, 0.0, 1.0, 0.0):
        _grads(gp, tp, rng, scale=4.0)
        for t in tp:
            t.grad.mul_(4.0)
        for opt, lib in ((gopt, genesis), (topt, torch)):
            opt.grad_scale = lib.tensor(4.0, device=device if lib is genesis else "cpu")
            opt.found_inf = lib.tensor(found, device=device if lib is genesis else "cpu")
        before = _snapshot(gopt, gp)
        gopt.step()
        topt.step()
        if found:
            for a, b in zip(before, _snapshot(gopt, gp)):
                np.testing.assert_array_equal(a, b)
        for g, t in zip(gp, tp):
            _close(g, t)
            _close(g.grad, t.grad)
            for key, value in topt.state[t].items():
                _close(gopt.state[g][key], value)


def _cycle_model(rng, lib, device):
    values = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (4,))]
    return [lib.tensor(v, device=device, requires_grad=True) for v in values]


def _cycle(lib, params, batches, device, unscale, clip, **options):
    """A scaled training loop: loss = sum(tanh(x @ w.T + b)^2); returns the scales."""
    opt = lib.optim.AdamW(params, lr=0.01, **options)
    scaler = (torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2) if lib is torch
              else genesis.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2))
    scales = []
    for x in batches:
        opt.zero_grad()
        loss = (lib.tanh(x @ params[0].T + params[1]) ** 2).sum()
        scaler.scale(loss).backward()
        if unscale:
            scaler.unscale_(opt)
        if clip:
            lib.nn.utils.clip_grad_norm_(params, 0.5)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler._scale)
    return opt, scales


def _batches(rng, lib, device):
    out = []
    for i in range(6):
        x = rng.standard_normal((5, 3)).astype(np.float32)
        if i == 2:
            x[0, 0] = np.inf  # an overflowing step: skipped, the scale backs off
        out.append(lib.tensor(x, device=device))
    return out


@pytest.mark.parametrize("unscale,clip", [(False, False), (True, True)],
                         ids=["kernel-unscale", "unscale-and-clip"])
def test_scaler_cycle_matches_torch_and_reads_nothing_on_the_host(unscale, clip, rng, cuda,
                                                                  monkeypatch):
    """Capturable AdamW under GradScaler (with unscale_ and clip_grad_norm_, or unscaled in the
    kernel) against torch's fused AdamW under its CPU GradScaler: same skipped step, same
    scales, same parameters; every read of a device value on the host raises meanwhile."""
    gp = _cycle_model(rng, genesis, cuda)
    tp = [torch.tensor(p.detach().cpu().numpy(), requires_grad=True) for p in gp]
    seed = int(rng.integers(1 << 30))
    gbatches = _batches(np.random.default_rng(seed), genesis, cuda)
    tbatches = _batches(np.random.default_rng(seed), torch, "cpu")

    with monkeypatch.context() as patch:
        _no_host_reads(patch)
        gopt, gscales = _cycle(genesis, gp, gbatches, cuda, unscale, clip, capturable=True)
    topt, tscales = _cycle(torch, tp, tbatches, "cpu", unscale, clip, fused=True)
    assert [float(s) for s in gscales] == [float(s) for s in tscales]
    assert float(gopt.state[gp[0]]["step"]) == float(topt.state[tp[0]]["step"]) == 5
    for g, t in zip(gp, tp):
        _close(g, t)


def _torch_state(saved):
    return {i: {k: torch.tensor(v.detach().cpu().numpy()) for k, v in s.items()}
            for i, s in saved["state"].items()}


def _with_flag(saved, capturable):
    groups = [dict(g, capturable=capturable) for g in saved["param_groups"]]
    return {"state": saved["state"], "param_groups": groups}


@pytest.mark.parametrize("name,kwargs", [CASES[1], CASES[4], CASES[7]],
                         ids=["Adam", "NAdam", "ASGD"])
def test_state_dicts_move_between_capturable_and_not(name, kwargs, rng, cuda):
    """A capturable optimizer's state loads into a non-capturable one (on the CPU) and into
    torch's; torch's loads into a capturable one. All four continue as torch does."""
    gp, tp = _pairs(rng, cuda)
    gopt = _build(name, gp, kwargs, cuda, capturable=True)
    topt = getattr(torch.optim, name)(tp, **kwargs, foreach=False)
    for _ in range(3):
        _grads(gp, tp, rng)
        gopt.step()
        topt.step()
    cpu = [p.detach().cpu().requires_grad_() for p in gp]
    host = getattr(optim, name)(cpu, **kwargs)
    host.load_state_dict(_with_flag(gopt.state_dict(), False))
    assert host.state[cpu[0]]["step"].device == genesis.device("cpu")
    twin = [t.detach().clone().requires_grad_() for t in tp]
    ttwin = getattr(torch.optim, name)(twin, **kwargs, foreach=False)
    ttwin.load_state_dict({"state": _torch_state(gopt.state_dict()),
                           "param_groups": _with_flag(gopt.state_dict(), False)["param_groups"]})
    fresh = [p.detach().clone().requires_grad_() for p in gp]
    back = getattr(optim, name)(fresh, **kwargs)
    back.load_state_dict(_with_flag({"state": {i: {k: from_torch(v) for k, v in s.items()}
                                               for i, s in topt.state_dict()["state"].items()},
                                     "param_groups": topt.state_dict()["param_groups"]}, True))
    assert back.param_groups[0]["capturable"]
    assert back.state[fresh[0]]["step"].device == fresh[0].device
    for _ in range(3):
        _grads(gp, tp, rng)
        for g, a, b, c, t in zip(gp, cpu, fresh, twin, tp):
            a.grad, b.grad, c.grad = g.grad.cpu(), g.grad.clone(), t.grad.clone()
        for opt in (gopt, topt, host, back, ttwin):
            opt.step()
    for g, t, a, b, c in zip(gp, tp, cpu, fresh, twin):
        for mine in (g, a, b):
            _close(mine, t)
        _close(g, c)

