"""LR schedulers against PyTorch for 20 steps (lrs and momenta), state dicts and bad input."""

import math
import warnings

import pytest
import torch

import genesis
from genesis import optim
from genesis.optim import lr_scheduler


def _seq(S, opt):
    return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.2, total_iters=4),
                                S.CosineAnnealingLR(opt, T_max=9, eta_min=0.001),
                                S.ExponentialLR(opt, gamma=0.8)], milestones=[5, 12])


def _chained(S, opt):
    return S.ChainedScheduler([S.ExponentialLR(opt, gamma=0.95), S.StepLR(opt, 4, gamma=0.5)])


SCHEDULERS = {
    "StepLR": lambda S, opt: S.StepLR(opt, step_size=3, gamma=0.5),
    "MultiStepLR": lambda S, opt: S.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda S, opt: S.ExponentialLR(opt, gamma=0.9),
    "CosineAnnealingLR": lambda S, opt: S.CosineAnnealingLR(opt, T_max=7, eta_min=0.01),
    "CosineAnnealingLR-no-min": lambda S, opt: S.CosineAnnealingLR(opt, T_max=20),
    "LambdaLR": lambda S, opt: S.LambdaLR(opt, lambda e: 0.95 ** e + 0.01 * e),
    "LambdaLR-per-group": lambda S, opt: S.LambdaLR(opt, [lambda e: 1 / (e + 1),
                                                          lambda e: 0.9 ** e]),
    "MultiplicativeLR": lambda S, opt: S.MultiplicativeLR(opt, lambda e: 0.97),
    "LinearLR": lambda S, opt: S.LinearLR(opt, start_factor=0.25, end_factor=0.9, total_iters=6),
    "ConstantLR": lambda S, opt: S.ConstantLR(opt, factor=0.5, total_iters=4),
    "PolynomialLR": lambda S, opt: S.PolynomialLR(opt, total_iters=8, power=2.0),
    "OneCycleLR-cos": lambda S, opt: S.OneCycleLR(opt, max_lr=[0.1, 0.3], total_steps=21),
    "OneCycleLR-linear-3phase": lambda S, opt: S.OneCycleLR(
        opt, max_lr=0.2, epochs=3, steps_per_epoch=7, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, base_momentum=0.8, max_momentum=[0.9, 0.99]),
    "OneCycleLR-no-momentum": lambda S, opt: S.OneCycleLR(opt, max_lr=0.05, total_steps=30,
                                                          cycle_momentum=False),
    "SequentialLR": _seq,
    "ChainedScheduler": _chained,
    "CyclicLR-triangular": lambda S, opt: S.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2],
                                                     step_size_up=4, step_size_down=3),
    "CyclicLR-triangular2": lambda S, opt: S.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.1,
                                                      step_size_up=3, mode="triangular2",
                                                      base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-exp_range": lambda S, opt: S.CyclicLR(opt, base_lr=0.01, max_lr=0.1,
                                                    step_size_up=2, step_size_down=5,
                                                    mode="exp_range", gamma=0.9),
    "CyclicLR-scale_fn-iterations": lambda S, opt: S.CyclicLR(
        opt, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + 0.1 * x),
        scale_mode="iterations", cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=4,
                                                                                eta_min=0.001),
    "CosineAnnealingWarmRestarts-T_mult": lambda S, opt: S.CosineAnnealingWarmRestarts(
        opt, T_0=2, T_mult=2),
}
OPTIMIZERS = {
    "SGD": lambda O, params: O.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.05}],
                                   lr=0.1, momentum=0.9),
    "Adam": lambda O, params: O.Adam([{"params": params[:1]}, {"params": params[1:],
                                                               "lr": 0.05}], lr=0.1),
}


def _pair(opt_name):
    g = [genesis.zeros(2, requires_grad=True), genesis.zeros(3, requires_grad=True)]
    t = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    return OPTIMIZERS[opt_name](optim, g), OPTIMIZERS[opt_name](torch.optim, t)


def _assert_same_groups(gopt, topt, gsched, tsched):
    assert gsched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12, abs=0)
    for gg, tg in zip(gopt.param_groups, topt.param_groups):
        assert gg["lr"] == pytest.approx(tg["lr"], rel=1e-12, abs=0)
        for key in ("momentum", "betas"):
            if key in tg:
                assert gg[key] == pytest.approx(tg[key], rel=1e-12, abs=0)


def _step(gopt, topt, gsched, tsched):
    gopt.step()
    topt.step()
    gsched.step()
    tsched.step()


@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("name", SCHEDULERS)
def test_matches_torch_20_steps(name, opt_name):
    gopt, topt = _pair(opt_name)
    gsched = SCHEDULERS[name](lr_scheduler, gopt)
    tsched = SCHEDULERS[name](torch.optim.lr_scheduler, topt)
    _assert_same_groups(gopt, topt, gsched, tsched)
    for _ in range(20):
        _step(gopt, topt, gsched, tsched)
        _assert_same_groups(gopt, topt, gsched, tsched)


def _step_only_scheduler(opt, sched):
    sched.step()


def _step_in_order(opt, sched):
    opt.step()
    sched.step()
    sched.step()


def _replace_optimizer_step(opt, sched):
    opt.step = lambda: None
    opt.step()
    sched.step()


def _read_get_lr(opt, sched):
    opt.step()
    sched.get_lr()


@pytest.mark.parametrize("run", [_step_only_scheduler, _step_in_order, _replace_optimizer_step,
                                 _read_get_lr], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("name", ["StepLR", "LambdaLR", "OneCycleLR-cos",
                                  "CosineAnnealingWarmRestarts-T_mult"])
def test_step_order_and_get_lr_warnings_as_torch(name, run):
    """A scheduler's first step before its optimizer's (or after optimizer.step was replaced)
    and get_lr() outside step() warn as torch's do; in order, nothing warns."""
    messages = []
    for lib, opt in zip((lr_scheduler, torch.optim.lr_scheduler), _pair("SGD")):
        sched = SCHEDULERS[name](lib, opt)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(opt, sched)
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name", ["MultiStepLR", "CosineAnnealingLR", "OneCycleLR-cos",
                                  "SequentialLR", "ChainedScheduler", "LambdaLR",
                                  "CyclicLR-triangular2", "CosineAnnealingWarmRestarts-T_mult"])
def test_state_dict_round_trip(name, tmp_path):
    gopt, topt = _pair("Adam")
    gsched = SCHEDULERS[name](lr_scheduler, gopt)
    tsched = SCHEDULERS[name](torch.optim.lr_scheduler, topt)
    for _ in range(8):
        _step(gopt, topt, gsched, tsched)
    genesis.save({"optimizer": gopt.state_dict(), "scheduler": gsched.state_dict()},
                 tmp_path / "ckpt")
    ckpt = genesis.load(tmp_path / "ckpt")
    params = [genesis.zeros(2, requires_grad=True), genesis.zeros(3, requires_grad=True)]
    fresh_opt = OPTIMIZERS["Adam"](optim, params)
    fresh = SCHEDULERS[name](lr_scheduler, fresh_opt)
    fresh_opt.load_state_dict(ckpt["optimizer"])
    fresh.load_state_dict(ckpt["scheduler"])
    for _ in range(10):
        _step(fresh_opt, topt, fresh, tsched)
        _assert_same_groups(fresh_opt, topt, fresh, tsched)


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, threshold_mode, rng, tmp_path):
    gopt, topt = _pair("SGD")
    kwargs = dict(mode=mode, threshold_mode=threshold_mode, factor=0.5, patience=2, cooldown=1,
                  min_lr=[0.01, 0.02])
    gsched = lr_scheduler.ReduceLROnPlateau(gopt, **kwargs)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    metrics = list(rng.choice([1.0, 0.9, 0.95, 1.2], size=30))
    for i, m in enumerate(metrics):
        if i == 15:
            genesis.save(gsched.state_dict(), tmp_path / "plateau")
            gsched = lr_scheduler.ReduceLROnPlateau(gopt, **kwargs)
            gsched.load_state_dict(genesis.load(tmp_path / "plateau"))
        gsched.step(m)
        tsched.step(m)
        _assert_same_groups(gopt, topt, gsched, tsched)


def test_closed_form_step_with_epoch():
    gopt, topt = _pair("SGD")
    gsched = lr_scheduler.StepLR(gopt, step_size=2, gamma=0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    with pytest.warns(UserWarning):
        gsched.step(5)
    with pytest.warns(UserWarning):
        tsched.step(5)
    _assert_same_groups(gopt, topt, gsched, tsched)


def test_cosine_formula_is_the_recursive_one():
    gopt, _ = _pair("SGD")
    sched = lr_scheduler.CosineAnnealingLR(gopt, T_max=10, eta_min=0.0)
    for epoch in range(1, 11):
        gopt.step()
        sched.step()
        assert sched.get_last_lr()[0] == pytest.approx(0.05 * (1 + math.cos(math.pi * epoch / 10)),
                                                       abs=1e-12)


@pytest.mark.parametrize("build,error,message", [
    (lambda opt: lr_scheduler.StepLR(object(), 3), TypeError, "object is not an Optimizer"),
    (lambda opt: lr_scheduler.StepLR(opt, 3, last_epoch=4), KeyError, "initial_lr"),
    (lambda opt: lr_scheduler.LambdaLR(opt, [lambda e: 1.0]), ValueError,
     "Expected 2 lr_lambdas, but got 1"),
    (lambda opt: lr_scheduler.LinearLR(opt, start_factor=0), ValueError, "Starting multiplicative"),
    (lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=0.1), ValueError,
     "You must define either total_steps OR"),
    (lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=[0.1], total_steps=5), ValueError,
     "max_lr must have the same length as optimizer.param_groups"),
    (lambda opt: lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[3]),
     ValueError, "one more than the number of milestone points"),
    (lambda opt: lr_scheduler.ReduceLROnPlateau(opt, factor=1.0), ValueError,
     "Factor should be < 1.0"),
])
def test_bad_input(build, error, message):
    gopt, _ = _pair("SGD")
    with pytest.raises(error, match=message):
        build(gopt)


def test_one_cycle_past_total_steps():
    gopt, _ = _pair("SGD")
    sched = lr_scheduler.OneCycleLR(gopt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        gopt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total "
                                         "steps is 3"):
        sched.step()


@pytest.mark.parametrize("T_mult", [1, 3])
def test_warm_restarts_at_given_epochs(T_mult):
    """step(epoch) with fractional and out-of-order epochs, as PyTorch's SGDR allows."""
    gopt, topt = _pair("SGD")
    gsched = lr_scheduler.CosineAnnealingWarmRestarts(gopt, T_0=3, T_mult=T_mult, eta_min=0.01)
    tsched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=T_mult,
                                                                  eta_min=0.01)
    for epoch in [0.5, 1.25, 2.9, 3.0, 7.5, 4.2, 20.0, 13.7]:
        gsched.step(epoch)
        tsched.step(epoch)
        _assert_same_groups(gopt, topt, gsched, tsched)


@pytest.mark.parametrize("build,error,message", [
    (lambda S, opt: S.CyclicLR(opt, 0.01, 0.1, mode="square"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5), ValueError,
     "Expected integer T_mult >= 1, but got 1.5"),
    (lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1), ValueError,
     "Expected non-negative epoch, but got -1"),
])
def test_new_schedulers_bad_input_as_torch(build, error, message):
    gopt, topt = _pair("SGD")
    for S, opt in ((lr_scheduler, gopt), (torch.optim.lr_scheduler, topt)):
        with pytest.raises(error, match=message):
            build(S, opt)


def test_cyclic_lr_without_momentum_rejects_cycle_momentum():
    for S, O, lib in ((lr_scheduler, optim, genesis), (torch.optim.lr_scheduler, torch.optim,
                                                        torch)):
        opt = O.Adagrad([lib.zeros(2, requires_grad=True)])
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            S.CyclicLR(opt, 0.01, 0.1)
