"""The fused optimizer steps ("adam_step", "sgd_step", "rmsprop_step", "adagrad_step" and those of
NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop) against torch.optim on the CPU, on every device.

float32/float64 are compared with PyTorch's default (for-loop) implementation, float16/bfloat16
with its CPU fused one (both compute in float32 and round once, as ours does).
"""

import numpy as np
import pytest
import torch
from helpers import (FLOAT_DTYPES, TOLERANCES, TORCH_DTYPES, assert_close, from_torch,
                     ulp_distance)

import genesis
from genesis import dispatch, optim
from genesis.optim.optimizer import HOST_SCALARS, takes_fused

SHAPES = [(3, 4), (20000,), (), (7, 1, 5), (0,)]
OPTIONS = [
    # Adam and RMSprop divide by sqrt(v) + eps: with L2 weight decay, a gradient that cancels
    # g + wd * p to a few float32 ulps gets g / (sqrt(v) + eps) anywhere from 0 to about 3
    # depending on fma contraction (GPU) or the half grid, unless eps dominates; L2 weight
    # decay goes with a larger eps (the other options keep the tiny ones)
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-4, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05, eps=1e-4)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.03, betas=(0.5, 0.9), weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, maximize=True, eps=1e-4)),
    ("RMSprop", dict(lr=0.01, weight_decay=0.1, eps=1e-4)),
    ("Adagrad", dict(lr=0.05)),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1,
                     maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, eps=1e-4, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9))),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, eps=1e-4, maximize=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.9), weight_decay=0.1, maximize=True, eps=1e-4)),
    ("Adadelta", dict(lr=0.5)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=2)),
    ("ASGD", dict(lr=0.05, lambd=0.01, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
]
NO_FUSED_OPTION = {"RMSprop", "NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop"}
OPTION_IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"
              for name, kw in OPTIONS]
HALF = (genesis.float16, genesis.bfloat16)


def _pair(rng, shape, dtype, device, transposed=False):
    """A genesis parameter and its torch twin with the same values; with `transposed` the
    genesis one is a transposed view (torch's CPU fused step reads parameters in memory order,
    so its twin is contiguous)."""
    value = rng.standard_normal(shape[::-1] if transposed else shape).astype(np.float32)
    tt = torch.tensor(value, dtype=TORCH_DTYPES[dtype])
    gt = genesis.tensor(value, dtype=dtype, device=device)
    if transposed:
        tt, gt = tt.t().contiguous(), gt.t()
    return gt.detach().requires_grad_(), tt.detach().requires_grad_()


def _params(rng, dtype, device):
    pairs = [_pair(rng, s, dtype, device) for s in SHAPES]
    pairs.append(_pair(rng, (5, 6), dtype, device, transposed=True))
    return [g for g, _ in pairs], [t for _, t in pairs]


def _set_grads(gp, tp, rng, skip):
    """Fresh random gradients, none for parameter `skip`; genesis gets some non-contiguous
    ones (torch's CPU fused step reads a non-contiguous gradient in memory order: a clone)."""
    for i, (g, t) in enumerate(zip(gp, tp)):
        if i == skip:
            g.grad, t.grad = None, None
            continue
        value = rng.standard_normal(t.shape[::-1]).astype(np.float32)
        exact = torch.tensor(value, dtype=TORCH_DTYPES[g.dtype]).to(t.dtype)  # g's values
        grad = exact.t() if t.ndim == 2 else exact.reshape(t.shape)
        t.grad = grad.contiguous()
        g.grad = genesis.tensor(value, dtype=g.dtype, device=g.device)
        g.grad = g.grad.t() if t.ndim == 2 else g.grad.reshape(t.shape)
        if i % 2:
            g.grad = g.grad.contiguous()


def _reference(name, params, kwargs, dtype):
    """torch's loop; for Adam's half types its CPU fused step, which rounds once as ours does.
    The other optimizers' half types take torch's float32 loop on the same values
    (`_widened`), rounded at each comparison: torch's loop rounds every op to the half type
    (and alpha = -lr too), and torch 2.13's CPU fused SGD leaves a float16 parameter of 64
    elements unchanged (its vectorized path). Rprop's half types take torch's half loop: its
    step is p - sign(g) s with s stored on the half grid, one rounding each, as ours."""
    fused = dtype in HALF and name in ("Adam", "AdamW")
    return getattr(torch.optim, name)(params, **kwargs, **({"fused": True} if fused else
                                                          {"foreach": False}))


def _assert_within_ulps(mine, theirs, ulps):
    """Each half value within the dtype's tolerance of torch's float32 twin rounded, or within
    `ulps` of it, or within `ulps` of the half grid's spacing at the tensor's largest value:
    the two compute the same float32 step in a different order (Adamax with maximize and
    decay, seed 2829017516: one element of 20000 two float16 ulps apart), so a value near a
    rounding boundary can land a step further on the half grid, and one that a difference of
    values of the tensor's size brings near zero (ASGD's average, seed 1010115827: 7.3e-5
    from terms near 0.05) carries their rounding."""
    rtol, atol = TOLERANCES[mine.dtype]
    actual = mine.detach().cpu().numpy()
    expected = theirs.float().numpy().astype(actual.dtype)
    wide, ref = actual.astype(np.float64), expected.astype(np.float64)
    close = np.abs(wide - ref) <= atol + rtol * np.abs(ref)
    if ref.size:
        grid = np.spacing(np.abs(expected).max()).astype(np.float64)
        close |= np.abs(wide - ref) <= ulps * grid
    assert np.all(close | (ulp_distance(actual, expected) <= ulps))


def _widened(name, dtype):
    return dtype in HALF and name not in ("Adam", "AdamW", "Rprop")


def _fused(name, params, kwargs, fused=True):
    """Genesis's optimizer taking its fused kernel (`fused` None: the default). Where PyTorch
    has no `fused` option, the group is told directly."""
    if name not in NO_FUSED_OPTION:
        return getattr(optim, name)(params, **kwargs, fused=fused)
    opt = getattr(optim, name)(params, **kwargs)
    opt.param_groups[0]["fused"] = fused
    return opt


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name,kwargs", OPTIONS, ids=OPTION_IDS)
def test_fused_step_matches_torch(name, kwargs, dtype, rng, device):
    """Five steps, each checked against torch's from the same parameters and state: torch's
    values are copied in after each check, so that a last-bit difference of one step (torch's
    vectorized CPU kernel contracts some products into FMAs, numpy does not) is not carried
    into the next and amplified where a half parameter passes near zero."""
    gp, tp = _params(rng, dtype, device)
    rounded = TORCH_DTYPES[dtype]
    if _widened(name, dtype):
        tp = [t.detach().float().requires_grad_() for t in tp]
    gopt = _fused(name, gp, kwargs)
    topt = _reference(name, tp, kwargs, dtype)
    for i in range(5):
        _set_grads(gp, tp, rng, skip=i % len(gp) if i % 2 else None)
        gopt.step()
        topt.step()
        for g, t in zip(gp, tp):
            gstate, tstate = gopt.state.get(g, {}), topt.state.get(t, {})
            assert gstate.keys() == tstate.keys()
            for key in HOST_SCALARS:
                if key in tstate:
                    assert float(gstate[key]) == pytest.approx(float(tstate[key]), rel=1e-6)
            with torch.no_grad(), genesis.no_grad():
                for mine, theirs in [(g, t)] + [(gstate[k], tstate[k]) for k in tstate
                                                if k not in HOST_SCALARS]:
                    theirs.copy_(theirs.to(rounded))  # a widened twin back on the half grid
                    if _widened(name, dtype):
                        _assert_within_ulps(mine, theirs.to(rounded), 2)
                    else:
                        assert_close(mine, theirs.to(rounded))
                    mine.copy_(from_torch(theirs.to(rounded), device))


LOOP_CASES = [("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
              ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.1)),
              ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
              ("Adagrad", dict(lr=0.05, lr_decay=0.1)),
              ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
              ("RAdam", dict(lr=0.01, weight_decay=0.1)),
              ("Adamax", dict(lr=0.01, weight_decay=0.1)),
              ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
              ("ASGD", dict(lr=0.05, t0=1, weight_decay=0.1)),
              ("Rprop", dict(lr=0.01, maximize=True))]


def test_rprop_half_product_underflows_as_torchs(device):
    """Rprop's sign of g * prev is taken in the parameter's dtype, as PyTorch's: float16
    products below its smallest subnormal are 0 (step size kept), not a tiny sign."""
    values = np.array([1e-4, -1e-4, 0.5, 1e-4], np.float16)
    prev = np.array([1e-4, 1e-4, 0.5, -0.5], np.float16)
    g = genesis.zeros(4, dtype=genesis.float16, device=device, requires_grad=True)
    t = torch.zeros(4, dtype=torch.float16, requires_grad=True)
    gopt, topt = _fused("Rprop", [g], {}), torch.optim.Rprop([t], foreach=False)
    for grad in (prev, values):
        g.grad = genesis.tensor(grad, device=device)
        t.grad = torch.tensor(grad)
        gopt.step()
        topt.step()
    assert_close(g, t)
    assert_close(gopt.state[g]["step_size"], topt.state[t]["step_size"])


@pytest.mark.parametrize("name,kwargs", LOOP_CASES, ids=[name for name, _ in LOOP_CASES])
@pytest.mark.parametrize("fused", [True, None])
def test_default_and_fused_agree_with_the_loop(name, kwargs, fused, rng, device):
    """The fused path (explicit, or the default on CUDA) against the loop, float64, 4 steps,
    one parameter without a gradient in the second (its first step comes later)."""
    gp, tp = _params(rng, genesis.float64, device)
    loop = [p.detach().clone().requires_grad_() for p in gp]
    a = _fused(name, gp, kwargs, fused)
    b = getattr(optim, name)(loop, **kwargs, foreach=False)
    for i in range(4):
        _set_grads(gp, tp, rng, skip=2 if i == 1 else None)
        for p, q in zip(gp, loop):
            q.grad = None if p.grad is None else p.grad.clone()
        a.step()
        b.step()
    for p, q in zip(gp, loop):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(),
                                   rtol=1e-12, atol=1e-14)


def _count_calls(monkeypatch, device_type):
    calls = []
    fn = dispatch.kernel("adam_step", device_type)
    monkeypatch.setitem(dispatch._KERNELS, ("adam_step", device_type),
                        lambda *args, **arrays: calls.append(len(args[0])) or fn(*args, **arrays))
    return calls


def test_one_kernel_call_per_step_for_a_group(monkeypatch, rng, device):
    gp, tp = _params(rng, genesis.float32, device)
    opt = optim.Adam(gp, fused=True)
    calls = _count_calls(monkeypatch, genesis.device(device).type)
    _set_grads(gp, tp, rng, skip=1)
    opt.step()
    assert calls == [len(gp) - 1]
    assert not opt.state[gp[1]]


def test_step_counts_apart_take_separate_calls(monkeypatch, rng):
    gp, tp = _params(rng, genesis.float32, "cpu")
    opt = optim.Adam(gp, fused=True)
    _set_grads(gp, tp, rng, skip=0)
    opt.step()
    calls = _count_calls(monkeypatch, "cpu")
    _set_grads(gp, tp, rng, skip=None)
    opt.step()
    assert sorted(calls) == [1, len(gp) - 1]


@pytest.mark.parametrize("fused,foreach,devices,expected", [
    (True, None, ["cpu"], True),
    (None, None, ["cpu"], False),
    (None, None, ["cuda", "cuda"], True),
    (None, True, ["cuda"], True),
    (None, False, ["cuda"], False),
    (False, None, ["cuda"], False),
    (None, None, ["cuda", "cpu"], False),
])
def test_which_groups_take_the_fused_kernel(fused, foreach, devices, expected):
    class Param:
        def __init__(self, kind):
            self.device = genesis.device(kind)
    group = {"fused": fused, "foreach": foreach, "differentiable": False,
             "params": [Param(d) for d in devices]}
    assert takes_fused(group) is expected


@pytest.mark.parametrize("kwargs,message", [
    (dict(fused=True, differentiable=True), "`fused` does not support `differentiable`"),
    (dict(fused=True, foreach=True), "`fused` and `foreach` cannot be `True` together."),
])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_unsupported_combinations_raise_as_torch(name, kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(RuntimeError, match=message):
        getattr(optim, name)([genesis.zeros(2, requires_grad=True)], **kwargs)


@pytest.mark.parametrize("make,message", [
    (lambda lib: dict(lr=0.01, foreach=True), None),
    (lambda lib: dict(lr=lib.tensor(0.01), foreach=True), "lr as a Tensor is not supported"),
    (lambda lib: dict(lr=lib.tensor([0.01, 0.01])), "Tensor lr must be 1-element"),
    (lambda lib: dict(betas=(lib.tensor(0.9), lib.tensor(0.99)), foreach=True),
     r"betas\[0\] as a Tensor is not supported"),
    (lambda lib: dict(lr=lib.tensor(0.01), foreach=True, capturable=True), None),
], ids=["float-foreach", "tensor-foreach", "tensor-2-elements", "tensor-betas", "capturable"])
def test_tensor_hyperparameters_as_torch(make, message):
    for lib, opt in ((torch, torch.optim), (genesis, optim)):
        params = [lib.zeros(2, requires_grad=True)]
        if message is None:
            opt.Adam(params, **make(lib))
            continue
        with pytest.raises(ValueError, match=message):
            opt.Adam(params, **make(lib))


def test_fused_state_dict_loads_into_torch(rng):
    gp, tp = _params(rng, genesis.float32, "cpu")
    gopt = optim.AdamW(gp, fused=True, amsgrad=True)
    topt = torch.optim.AdamW(tp, amsgrad=True, foreach=False)
    _set_grads(gp, tp, rng, skip=None)
    gopt.step()
    topt.step()
    saved = gopt.state_dict()
    state = {i: {k: torch.tensor(v.numpy()) for k, v in s.items()}
             for i, s in saved["state"].items()}
    fresh = torch.optim.AdamW(tp, amsgrad=True, foreach=False)
    fresh.load_state_dict({"state": state, "param_groups": saved["param_groups"]})
    for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        for p in tp:
            torch.testing.assert_close(fresh.state[p][key], topt.state[p][key])


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-4)),
                                         ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_channels_last_parameters_update_in_place(name, kwargs, rng, device, monkeypatch):
    """A channels-last weight whose gradient and states share its layout is updated through
    flat views of them, no copies: in its own memory, in its layout, with torch's values."""
    from genesis.optim import _multi_tensor
    copied = []
    init = _multi_tensor.Updated.__init__
    monkeypatch.setattr(_multi_tensor.Updated, "__init__", lambda self, *args: (
        init(self, *args), copied.extend(self.copied))[0])
    value = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    g = genesis.tensor(value, device=device).contiguous(memory_format=genesis.channels_last)
    t = torch.tensor(value).contiguous(memory_format=torch.channels_last)
    g, t = g.requires_grad_(), t.requires_grad_()
    gopt, topt = _fused(name, [g], kwargs), getattr(torch.optim, name)([t], **kwargs,
                                                                       foreach=False)
    address, strides = g.data_ptr(), g.stride()
    for _ in range(3):
        grad = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
        g.grad = genesis.tensor(grad, device=device).contiguous(
            memory_format=genesis.channels_last)
        t.grad = torch.tensor(grad).contiguous(memory_format=torch.channels_last)
        gopt.step()
        topt.step()
        assert_close(g, t)
    assert g.data_ptr() == address and g.stride() == strides
    assert copied and not any(copied)
