"""Activation checkpointing (genesis.utils.checkpoint) and the saved-tensor hooks under it
(genesis.autograd.graph): gradients equal to a plain run, dropout replayed, activations
dropped after the forward, both reentrant forms, and PyTorch's warnings and errors."""

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from genesis.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from genesis.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _block():
    genesis.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.3), nn.LayerNorm(16),
                         nn.Linear(16, 6)).double()


def _grads(model, x, run):
    model.zero_grad()
    x = x.detach().requires_grad_(True)
    genesis.manual_seed(7)
    out = run(model, x)
    (out * out).sum().backward()
    return out.detach(), x.grad, [p.grad for p in model.parameters()]


def _assert_same(a, b):
    for u, v in zip(a[:2] + tuple(a[2]), b[:2] + tuple(b[2])):
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_a_plain_run_with_dropout(reentrant, rng):
    model, x = _block(), genesis.tensor(rng.standard_normal((5, 6)))
    plain = _grads(model, x, lambda m, x: m(x))
    checked = _grads(model, x, lambda m, x: checkpoint(m, x, use_reentrant=reentrant))
    _assert_same(plain, checked)
    assert genesis.equal(plain[0], checked[0])


def test_sequential_segments(rng):
    model, x = _block(), genesis.tensor(rng.standard_normal((5, 6)))
    plain = _grads(model, x, lambda m, x: m(x))
    for segments in (1, 2, 3):
        _assert_same(plain, _grads(model, x, lambda m, x: checkpoint_sequential(
            m, segments, x, use_reentrant=False)))


def test_nested_checkpoints(rng):
    model, x = _block(), genesis.tensor(rng.standard_normal((5, 6)))
    first, rest = model[:2], model[2:]
    plain = _grads(model, x, lambda m, x: m(x))

    def outer(x):
        return rest(checkpoint(first, x, use_reentrant=False))

    _assert_same(plain, _grads(model, x, lambda m, x: checkpoint(outer, x,
                                                                  use_reentrant=False)))


def test_autograd_grad_reaches_parameters_without_reentrance(rng):
    model, x = _block().eval(), genesis.tensor(rng.standard_normal((5, 6)))
    out = checkpoint(model, x, use_reentrant=False).sum()
    grads = genesis.autograd.grad(out, list(model.parameters()))
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-12)


def test_activations_are_not_kept(rng):
    x = genesis.tensor(rng.standard_normal((64, 64)), requires_grad=True)
    kept = []

    def fn(x):
        h = x.exp()
        kept.append(weakref.ref(h))
        return (h * h).sin()

    for use in (False, True):
        out = checkpoint(fn, x, use_reentrant=False) if use else fn(x)
        gc.collect()
        assert (kept[-1]() is None) == use
        out.sum().backward()


def test_rerun_once_per_backward_and_again_with_retain_graph(rng):
    calls = []

    def fn(x):
        calls.append(1)
        return (x.exp() * x).sin()

    x = genesis.tensor(rng.standard_normal(8), requires_grad=True)
    out = checkpoint(fn, x, use_reentrant=False).sum()
    out.backward(retain_graph=True)
    first = x.grad.clone()
    out.backward()
    assert len(calls) == 3
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy(), rtol=1e-12)


def test_batch_norm_statistics_updated_once_per_rerun_as_torch(rng):
    """A batch norm whose backward reads its saved tensors twice still reruns once a backward
    pass: its running statistics and count advance as torch's (DenseNet's memory-efficient
    layers)."""
    x = rng.standard_normal((4, 3, 5, 5))
    runs = []
    for lib in (torch, genesis):
        lib.manual_seed(0)
        bn, conv = lib.nn.BatchNorm2d(3).double(), lib.nn.Conv2d(3, 2, 1).double()
        t = lib.tensor(x, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: conv(bn(a)), t, use_reentrant=False)
        out.sum().backward()
        runs.append([v.detach().numpy() for v in bn.state_dict().values()] + [t.grad.numpy()])
    for expected, got in zip(*runs):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_changed_recomputation_is_an_error(rng):
    sizes = iter([3, 4])

    def fn(x):
        return (x[:next(sizes)].exp()).sum()

    x = genesis.tensor(rng.standard_normal(8), requires_grad=True)
    out = checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        out.backward()


def test_warnings_and_errors_as_torch():
    x = genesis.ones(3, requires_grad=True)
    t = torch.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        checkpoint(lambda a: a.sin(), x)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        torch.utils.checkpoint.checkpoint(lambda a: a.sin(), t)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    for lib, arg in ((genesis, genesis.ones(2)), (torch, torch.ones(2))):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            lib.utils.checkpoint.checkpoint(lambda a: a * 2, arg, use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            lib.utils.checkpoint.checkpoint(lambda a, scale: a * scale, arg, scale=2,
                                            use_reentrant=True)
        with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only"):
            lib.utils.checkpoint.checkpoint(lambda a: a, arg, use_reentrant=True, debug=True)


def test_saved_tensors_hooks_pack_and_unpack(rng):
    a = rng.standard_normal(5)
    x, xt = genesis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.detach() * 1

    def unpack(t):
        unpacked.append(tuple(t.shape))
        return t

    with saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    y.backward()
    (xt.exp() * xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    assert packed and sorted(packed) == sorted(unpacked)
    with save_on_cpu():
        y = (x.exp() * x).sum()
    x.grad = None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(pack, unpack):
                pass


def test_saved_tensors_hooks_see_operands_in_torch_order(rng):
    """Pack and unpack hooks run over a product's operands in PyTorch's order (the second
    operand first), so that hooks that print or count see what they see under PyTorch."""
    a = rng.standard_normal(3)
    seen = {}
    for lib in (genesis, torch):
        x, w = lib.tensor(a, requires_grad=True), lib.tensor(a * 2, requires_grad=True)
        order = seen[lib.__name__] = []

        def pack(t, order=order, x=x):
            order.append(("pack", t is x))
            return t

        def unpack(t, order=order, x=x):
            order.append(("unpack", t is x))
            return t
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = x * w / x
        y.sum().backward()
    assert seen["genesis"] == seen["torch"]
