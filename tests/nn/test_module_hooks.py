"""Module hooks against torch's: full backward hooks and pre-hooks (what they see, what their
returns replace), the legacy backward hook, always_call forward hooks, and the global
register_module_* hooks."""

import numpy as np
import pytest
import torch
from helpers import assert_close, from_torch
from nn_compare import copy_module

import genesis


def _pair(rng, make):
    theirs = make(torch).double()
    return copy_module(make(genesis).double(), theirs), theirs


def _inputs(rng, shape, requires_grad=True):
    value = rng.standard_normal(shape)
    return (from_torch(torch.from_numpy(value), requires_grad=requires_grad),
            torch.from_numpy(value).requires_grad_(requires_grad))


class _Two:
    """A module of two tensor arguments and two outputs, built for either library."""

    @staticmethod
    def make(lib):
        class TwoInTwoOut(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = lib.nn.Linear(3, 3)

            def forward(self, x, scale, y):
                return self.linear(x) * scale, (x * y).sum(1)
        return TwoInTwoOut()


def _record(log):
    def hook(module, grad_input, grad_output):
        log.append(("full", grad_input, grad_output))
    return hook


def _compare_logs(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[0] == b[0]
        for side_a, side_b in zip(a[1:], b[1:]):
            assert len(side_a) == len(side_b)
            for ga, gb in zip(side_a, side_b):
                assert (ga is None) == (gb is None)
                if ga is not None:
                    assert_close(ga, gb)


@pytest.mark.parametrize("y_grad", [True, False])
def test_full_backward_hook_sees_the_module_boundary(rng, y_grad):
    ours, theirs = _pair(rng, _Two.make)
    logs = ([], [])
    for module, log in zip((ours, theirs), logs):
        module.register_full_backward_pre_hook(lambda m, go, log=log: log.append(("pre", go, ())))
        module.register_full_backward_hook(_record(log))
    (gx, tx), (gy, ty) = _inputs(rng, (4, 3)), _inputs(rng, (4, 3), y_grad)
    for module, x, y, lib in ((ours, gx, gy, genesis), (theirs, tx, ty, torch)):
        a, b = module(x, 2.0, y)
        (a.sum() + (b * b).sum()).backward()
    _compare_logs(*logs)
    assert_close(gx.grad, tx.grad)


def test_hooks_replace_gradients_as_torch(rng):
    ours, theirs = _pair(rng, lambda lib: lib.nn.Linear(3, 2))
    for module in (ours, theirs):
        module.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        module.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
    (gx, tx) = _inputs(rng, (5, 3))
    ours(gx).pow(2).sum().backward()
    theirs(tx).pow(2).sum().backward()
    assert_close(gx.grad, tx.grad)
    assert_close(ours.weight.grad, theirs.weight.grad)


def test_full_hook_without_input_gradients_runs_at_the_outputs(rng):
    ours, theirs = _pair(rng, lambda lib: lib.nn.Linear(3, 2))
    logs = ([], [])
    for module, log in zip((ours, theirs), logs):
        module.register_full_backward_hook(_record(log))
    (gx, tx) = _inputs(rng, (5, 3), requires_grad=False)
    for module, x in ((ours, gx), (theirs, tx)):
        with pytest.warns(UserWarning, match="^Full backward hook is firing when gradients are "
                                             "computed with respect to module outputs"):
            module(x).sum().backward()
    _compare_logs(*logs)
    assert logs[0][0][1] == (None,)


def test_wrong_number_of_replacements_raises_as_torch(rng):
    for lib in (genesis, torch):
        module = lib.nn.Linear(2, 2)
        module.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1"):
            module(lib.ones(1, 2, requires_grad=True)).sum().backward()


def test_legacy_backward_hook_sees_the_last_operation(rng):
    """grad_input is the last operation's (Tanh's); genesis's nodes also give None for their
    non-tensor arguments, so only the first entry is compared."""
    ours, theirs = _pair(rng, lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 2),
                                                             lib.nn.Tanh()))
    logs = ([], [])
    for module, log in zip((ours, theirs), logs):
        module.register_backward_hook(_record(log))
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
            module.register_full_backward_hook(_record(log))
    (gx, tx) = _inputs(rng, (4, 3))
    ours(gx).sum().backward()
    with pytest.warns(FutureWarning):
        theirs(tx).sum().backward()
    _compare_logs(*([(kind, grad_input[:1], grad_output) for kind, grad_input, grad_output in log]
                    for log in logs))


def test_always_call_forward_hook_runs_when_forward_raises():
    for lib in (genesis, torch):
        seen = []
        module = lib.nn.Linear(2, 2)
        module.register_forward_hook(lambda m, a, o: seen.append(o), always_call=True)
        module.register_forward_hook(lambda m, a, o: seen.append("not always"))
        with pytest.raises(RuntimeError):
            module(lib.ones(3, 5))
        assert seen == [None]


def test_global_module_hooks_run_for_every_module_first(rng):
    orders = []
    for lib in (genesis, torch):
        order = []
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        model[0].register_forward_hook(lambda m, a, o: order.append("own"))
        handles = [
            lib.nn.modules.module.register_module_forward_pre_hook(
                lambda m, a: order.append("pre " + type(m).__name__)),
            lib.nn.modules.module.register_module_forward_hook(
                lambda m, a, o: order.append("post " + type(m).__name__)),
            lib.nn.modules.module.register_module_full_backward_hook(
                lambda m, gi, go: order.append("backward " + type(m).__name__)),
        ]
        try:
            model(lib.ones(1, 2, requires_grad=True)).sum().backward()
        finally:
            for handle in handles:
                handle.remove()
        model(lib.ones(1, 2))
        orders.append(order)
    assert orders[0] == orders[1]
    assert np.all([isinstance(entry, str) for entry in orders[0]])
