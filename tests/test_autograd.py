"""The autograd engine against PyTorch: graph recording, backward/grad options, hooks, custom
Functions, grad modes, version counters and memory release."""

import contextlib
import gc
import threading
import weakref

import numpy as np
import pytest
import torch

import genesis
from genesis.autograd import Function
from helpers import assert_close, make_pair


def pair(shape=(3, 4), dtype=genesis.float32, rng=None, requires_grad=True, device="cpu"):
    return make_pair(shape, dtype, requires_grad=requires_grad, device=device, rng=rng)


def assert_grads(g_tensors, t_tensors):
    for g, t in zip(g_tensors, t_tensors):
        if t.grad is None:
            assert g.grad is None
        else:
            assert g.grad is not None
            assert_close(g.grad, t.grad)


# requires_grad and the recorded graph


def test_requires_grad_propagates(rng, device):
    x, _ = pair(rng=rng, device=device)
    c, _ = pair(rng=rng, requires_grad=False, device=device)
    y = x * c
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    z = c * c
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None
    assert x.is_leaf and x.grad_fn is None
    assert not (x > 0).requires_grad


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        genesis.tensor([1, 2]).requires_grad_()
    y = genesis.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    with genesis.no_grad():
        assert not (genesis.ones(2, requires_grad=True) * 2).requires_grad


@pytest.mark.parametrize("name,fn", [
    ("add", lambda x: x + 1), ("radd", lambda x: 1 + x), ("sub", lambda x: x - 1),
    ("mul", lambda x: x * 2), ("div", lambda x: x / 2), ("pow", lambda x: x ** 2),
    ("neg", lambda x: -x), ("exp", lambda x: x.exp()), ("log", lambda x: x.log()),
    ("sin", lambda x: x.sin()), ("tanh", lambda x: x.tanh()), ("sigmoid", lambda x: x.sigmoid()),
    ("relu", lambda x: x.relu()), ("abs", lambda x: x.abs()), ("sum", lambda x: x.sum()),
    ("mean", lambda x: x.mean()), ("clone", lambda x: x.clone()),
    ("to", lambda x: x.to(genesis.float64) if isinstance(x, genesis.Tensor) else x.double()),
])
def test_grad_fn_names_match_torch(name, fn):
    g, t = pair((3,))
    assert fn(g).grad_fn.name() == type(fn(t).grad_fn).__name__
    assert type(fn(t).grad_fn).__name__ in repr(fn(g).grad_fn)


# backward


def test_grad_accumulates_across_backward_calls(rng, device):
    (x, w), (tx, tw) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    for _ in range(3):
        (x * w).sum().backward()
        (tx * tw).sum().backward()
    assert_grads([x, w], [tx, tw])
    x.grad = None
    (x * 3).sum().backward()
    assert_close(x.grad, torch.full((3, 4), 3.0))


def test_backward_with_gradient(rng, device):
    x, tx = pair(rng=rng, device=device)
    gy, tgy = make_pair((3, 4), rng=rng, device=device)
    (x * x).backward(gy)
    (tx * tx).backward(tgy)
    assert_grads([x], [tx])


def test_backward_errors(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        genesis.ones(2, device=device).sum().backward()
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).backward(genesis.ones(4, device=device))


def test_leaf_grad_never_aliases_the_gradient_argument(device):
    x = genesis.zeros(4, requires_grad=True, device=device)
    g = genesis.ones(4, device=device)
    (x + 1).backward(g)
    (x + 1).backward(g)
    assert g.tolist() == [1.0] * 4
    assert x.grad.tolist() == [2.0] * 4
    g.mul_(5)
    assert x.grad.tolist() == [2.0] * 4


class _ReturnsGlobal(Function):
    constant = None

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return _ReturnsGlobal.constant


def test_leaf_grad_never_aliases_a_tensor_returned_by_backward():
    _ReturnsGlobal.constant = genesis.ones(3)
    x = genesis.zeros(3, requires_grad=True)
    _ReturnsGlobal.apply(x).sum().backward()
    _ReturnsGlobal.apply(x).sum().backward()
    assert _ReturnsGlobal.constant.tolist() == [1.0] * 3
    assert x.grad.tolist() == [2.0] * 3


def test_first_gradient_is_taken_without_copy_when_nothing_else_holds_it(monkeypatch):
    clones = []
    original = genesis.Tensor.clone
    monkeypatch.setattr(genesis.Tensor, "clone", lambda t, *a, **k: clones.append(t) or original(t))
    x = genesis.ones(5, requires_grad=True)
    w = genesis.full((5,), 3.0, requires_grad=True)
    (x * w).backward(genesis.ones(5))
    assert clones == []
    assert x.grad.tolist() == [3.0] * 5 and w.grad.tolist() == [1.0] * 5


def test_retain_graph(device):
    x, tx = pair((3,), device=device)
    y, ty = (x * x).sum(), (tx * tx).sum()
    y.backward(retain_graph=True)
    y.backward()
    ty.backward(retain_graph=True)
    ty.backward()
    assert_grads([x], [tx])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_x_cubed_sin_x_third_derivative(rng, device):
    x, tx = make_pair((5,), genesis.float64, requires_grad=True, rng=rng, device=device)
    g, t = (x ** 3) * genesis.sin(x), (tx ** 3) * torch.sin(tx)
    for _ in range(3):
        (g,) = genesis.autograd.grad(g.sum(), x, create_graph=True)
        (t,) = torch.autograd.grad(t.sum(), tx, create_graph=True)
        assert g.requires_grad
        assert_close(g, t)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_then_grad_of_grad(rng, device):
    x, tx = make_pair((4,), genesis.float64, requires_grad=True, rng=rng, device=device)
    (x * x * x).sum().backward(create_graph=True)
    (tx * tx * tx).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = genesis.autograd.grad(x.grad.sum(), x)
    (tgg,) = torch.autograd.grad(tx.grad.sum(), tx)
    assert_close(gg, tgg)


# autograd.grad


def test_grad_with_grad_outputs_leaves_grad_untouched(rng, device):
    (x, w), (tx, tw) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    go, tgo = make_pair((3, 4), rng=rng, device=device)
    gx, gw = genesis.autograd.grad(x * w.exp(), [x, w], grad_outputs=go)
    tgx, tgw = torch.autograd.grad(tx * tw.exp(), [tx, tw], grad_outputs=tgo)
    assert_close(gx, tgx)
    assert_close(gw, tgw)
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


@pytest.mark.parametrize("order", ["outer first", "inner first"])
def test_outputs_of_which_one_feeds_another(order, rng, device):
    """grad and backward of outputs where one is computed from another (a layer's output
    sequence and its final state): the inner output's node waits for the outer's gradient,
    whatever the outputs' order."""
    (x, w), (tx, tw) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    results = []
    for lib, a, b in ((genesis, x, w), (torch, tx, tw)):
        inner = a * b
        outputs = [inner.exp() * b, inner]
        if order == "inner first":
            outputs.reverse()
        grads = [o.detach() * 0 + k + 1 for k, o in enumerate(outputs)]
        results.append(lib.autograd.grad(outputs, [a, b], grads, retain_graph=True))
        lib.autograd.backward(outputs, grads)
        results.append((a.grad, b.grad))
    for g, t in zip(results[0] + results[1], results[2] + results[3]):
        assert_close(g, t)


def test_grad_only_inputs_is_accepted_and_false_warns(rng, device):
    """only_inputs, PyTorch's deprecated flag that WGAN-GP's gradient penalty passes, is ignored;
    False gives torch's FutureWarning."""
    x, tx = pair(rng=rng, device=device)
    gx, = genesis.autograd.grad((x * x).sum(), x, create_graph=True, only_inputs=True)
    tgx, = torch.autograd.grad((tx * tx).sum(), tx, create_graph=True, only_inputs=True)
    assert_close(gx, tgx)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        genesis.autograd.grad(x.sum(), x, only_inputs=False)


def test_grad_unused_inputs(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    unused = genesis.ones(2, requires_grad=True, device=device)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        genesis.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = genesis.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)
    assert gu is None and gx.tolist() == [2.0] * 3
    gx, gu = genesis.autograd.grad(y, [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.0, 0.0]


def test_grad_of_non_leaf_inputs(rng, device):
    x, tx = pair(rng=rng, device=device)
    h, th = x.sin(), tx.sin()
    y, ty = (h * h * x).sum(), (th * th * tx).sum()
    gh, gx = genesis.autograd.grad(y, [h, x])
    tgh, tgx = torch.autograd.grad(ty, [th, tx])
    assert_close(gh, tgh)
    assert_close(gx, tgx)


def test_grad_of_a_non_leaf_does_not_run_or_free_its_history(rng, device):
    x, tx = pair((3,), rng=rng, device=device)
    h, th = x * x, tx * tx
    (gh,) = genesis.autograd.grad((h * 3).sum(), h)
    (tgh,) = torch.autograd.grad((th * 3).sum(), th)
    assert_close(gh, tgh)
    (h * 3).sum().backward(inputs=[h])
    assert x.grad is None
    h.sum().backward()
    th.sum().backward()
    assert_grads([x], [tx])


def test_grad_runs_leaf_hooks_as_torch(device):
    x, tx = pair((3,), device=device)
    x.register_hook(lambda g: g * 2)
    tx.register_hook(lambda g: g * 2)
    (gx,) = genesis.autograd.grad((x * 3).sum(), x)
    (tgx,) = torch.autograd.grad((tx * 3).sum(), tx)
    assert_close(gx, tgx)


def test_backward_inputs_argument(rng, device):
    (x, w), (tx, tw) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    h, th = x * w, tx * tw
    (h * h).sum().backward(inputs=[w, h])
    (th * th).sum().backward(inputs=[tw, th])
    assert x.grad is None and tx.grad is None
    assert_grads([w, h], [tw, th])
    with pytest.raises(RuntimeError):
        (x * 2).sum().backward(inputs=[])


# grad modes


def test_no_grad_enable_grad_nesting():
    x = genesis.ones(2, requires_grad=True)
    with genesis.no_grad():
        assert not (x * 2).requires_grad
        with genesis.enable_grad():
            assert (x * 2).requires_grad
            with genesis.set_grad_enabled(False):
                assert not (x * 2).requires_grad
            assert genesis.is_grad_enabled()
        assert not genesis.is_grad_enabled()
    assert genesis.is_grad_enabled()


def test_grad_mode_decorators():
    @genesis.no_grad()
    def called():
        return genesis.is_grad_enabled()

    @genesis.no_grad
    def bare():
        return genesis.is_grad_enabled()

    @genesis.set_grad_enabled(False)
    def switched():
        return genesis.is_grad_enabled()

    @genesis.enable_grad()
    def enabled():
        return genesis.is_grad_enabled()

    assert genesis.is_grad_enabled()
    assert not called() and not bare() and not switched()
    with genesis.no_grad():
        assert enabled()
    assert genesis.is_grad_enabled()


def test_set_grad_enabled_as_a_function():
    genesis.set_grad_enabled(False)
    assert not genesis.is_grad_enabled()
    genesis.set_grad_enabled(True)
    assert genesis.is_grad_enabled()


def test_inference_mode():
    x = genesis.ones(2, requires_grad=True)
    with genesis.inference_mode():
        assert not (x * 2).requires_grad
        assert genesis.autograd.is_inference_mode_enabled()
    assert genesis.is_grad_enabled() and not genesis.autograd.is_inference_mode_enabled()
    with genesis.no_grad(), torch.no_grad():
        with genesis.inference_mode(False), torch.inference_mode(False):
            assert genesis.is_grad_enabled() == torch.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["start"] = genesis.is_grad_enabled()
        genesis.set_grad_enabled(False)
        seen["set"] = genesis.is_grad_enabled()

    with genesis.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert not genesis.is_grad_enabled()
    assert seen == {"start": True, "set": False}
    assert genesis.is_grad_enabled()


# detach, retain_grad, hooks


def test_detach_shares_memory_and_version():
    x = genesis.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1)
    assert y.tolist() == [3.0] * 3
    z = y * y
    d.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_detach_():
    x = genesis.ones(3, requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad


def test_retain_grad_accumulates_like_torch(rng, device):
    x, tx = pair(rng=rng, device=device)
    y, ty = x * 2, tx * 2
    y.retain_grad()
    ty.retain_grad()
    assert y.retains_grad
    for _ in range(2):
        (y * y).sum().backward(retain_graph=True)
        (ty * ty).sum().backward(retain_graph=True)
    assert_grads([x, y], [tx, ty])
    with pytest.raises(RuntimeError):
        genesis.ones(2, device=device).retain_grad()


def test_hooks_on_leaves_and_non_leaves(rng, device):
    x, tx = pair(rng=rng, device=device)
    for lib_x in (x, tx):
        lib_x.register_hook(lambda g: g * 3)
    y, ty = x.sin(), tx.sin()
    handles = [y.register_hook(lambda g: g + 1), ty.register_hook(lambda g: g + 1)]
    y.retain_grad()
    ty.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * y).sum().backward(retain_graph=True)
    (ty * ty).sum().backward(retain_graph=True)
    assert_grads([x, y], [tx, ty])
    assert_close(genesis.tensor(seen[0], device=device), ty.grad)
    for h in handles:
        h.remove()
    x.grad, tx.grad = None, None
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_grads([x], [tx])
    with pytest.raises(RuntimeError):
        genesis.ones(2, device=device).register_hook(lambda g: g)


def test_node_post_hook_can_replace_input_grads(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    y = x * 2
    handle = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 10, None))
    y.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [20.0] * 3
    handle.remove()
    y.sum().backward()
    assert x.grad.tolist() == [22.0] * 3


# graph shapes


def test_diamond_and_shared_subgraphs(rng, device):
    x, tx = pair(rng=rng, device=device)

    def f(x, lib):
        a = lib.sin(x)
        b = a * x
        c = a.exp() + b
        d = c * a - b * b
        return d.sum() + (a * c).sum()
    f(x, genesis).backward()
    f(tx, torch).backward()
    assert_grads([x], [tx])


def test_many_paths_of_different_lengths(rng, device):
    x, tx = pair((5,), rng=rng, device=device)

    def f(x):
        outs = [x]
        for i in range(12):
            outs.append(outs[-1] * 0.9 + outs[i // 2] * 0.1)
        return sum(o.sum() for o in outs)
    f(x).backward()
    f(tx).backward()
    assert_grads([x], [tx])


def test_deep_chain_has_no_recursion_limit():
    x = genesis.ones(2, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_backward_through_two_outputs_sharing_a_graph(rng, device):
    x, tx = pair(rng=rng, device=device)
    ga, ta = make_pair((3, 4), rng=rng, device=device)
    h, th = x.exp(), tx.exp()
    genesis.autograd.backward([(h * 2).sum(), h * x], [None, ga])
    torch.autograd.backward([(th * 2).sum(), th * tx], [None, ta])
    assert_grads([x], [tx])


def test_backward_from_a_tensor_and_its_ancestor(rng, device):
    x, tx = pair(rng=rng, device=device)
    h, th = x * x, tx * tx
    genesis.autograd.backward([h.sum(), (h * 3).sum()])
    torch.autograd.backward([th.sum(), (th * 3).sum()])
    assert_grads([x], [tx])


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (2, 3)),
                                    ((2, 1, 3), (4, 1))])
def test_broadcast_gradients(shapes, rng, device):
    (a, b), (ta, tb) = zip(pair(shapes[0], rng=rng, device=device),
                           pair(shapes[1], rng=rng, device=device))
    ((a * b + a) / (b * b + 1)).sum().backward()
    ((ta * tb + ta) / (tb * tb + 1)).sum().backward()
    assert_grads([a, b], [ta, tb])


@pytest.mark.parametrize("dtypes", [(genesis.float32, genesis.float64),
                                    (genesis.float16, genesis.float32),
                                    (genesis.bfloat16, genesis.float16)])
def test_mixed_dtype_gradients_come_back_in_each_input_dtype(dtypes, rng, device):
    (a, b), (ta, tb) = zip(pair((6,), dtypes[0], rng=rng, device=device),
                           pair((6,), dtypes[1], rng=rng, device=device))
    (a * b + a).sum().backward()
    (ta * tb + ta).sum().backward()
    assert a.grad.dtype is dtypes[0] and b.grad.dtype is dtypes[1]
    assert_grads([a, b], [ta, tb])


def test_variable_as_torch(rng):
    """The legacy Variable: a detached tensor sharing memory, requiring grad as asked; every
    tensor is an instance; `volatile` (the argument, a tensor's attribute) warns; non-tensors are
    refused; no data: an empty tensor."""
    x, tx = pair(rng=rng)
    for lib, t in ((genesis, x), (torch, tx)):
        v = lib.autograd.Variable(t)
        assert v is not t and not v.requires_grad and v.grad_fn is None
        assert v.data_ptr() == t.data_ptr() and isinstance(t, lib.autograd.Variable)
        w = lib.autograd.Variable(t.detach(), requires_grad=True)
        assert w.requires_grad and w.is_leaf
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            lib.autograd.Variable(t, volatile=True)
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            v.volatile = True
        with pytest.warns(UserWarning, match=r"Variable.volatile is always False"):
            assert v.volatile is False
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            lib.autograd.Variable([1, 2])
        assert tuple(lib.autograd.Variable().shape) == (0,)
    assert not isinstance([1.0], genesis.autograd.Variable)


# custom Functions


class MulConst(Function):
    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        ctx.seen_needs = ctx.needs_input_grad
        return x * y * k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y * ctx.k if ctx.needs_input_grad[0] else None
        gy = g * x * ctx.k if ctx.needs_input_grad[2] else None
        return gx, None, gy


def test_custom_function_save_for_backward_and_needs_input_grad(rng, device):
    (x, y), (tx, ty) = zip(pair(rng=rng, device=device),
                           pair(rng=rng, requires_grad=False, device=device))
    out = MulConst.apply(x, 3.0, y)
    assert out.grad_fn.name() == "MulConstBackward"
    assert out.grad_fn.seen_needs == (True, False, False)
    out.sum().backward()
    assert_close(x.grad, ty * 3)
    assert y.grad is None


def _edge_names(node):
    """next_functions as names: "AccumulateGrad", a node's name, or None for (None, 0)."""
    return [None if fn is None else type(fn).__name__ if type(fn).__name__ == "AccumulateGrad"
            else fn.name() for fn, _ in node.next_functions]


def test_custom_function_node_as_torch(rng, device):
    """A custom Function's node: named "<Class>Backward", shown with its module, one edge per
    tensor argument ((None, 0) for one that needs no gradient), none for the float."""
    (x, y), (tx, ty) = zip(pair(rng=rng, device=device),
                           pair(rng=rng, requires_grad=False, device=device))
    # the outputs stay alive: torch's node of a custom Function expires with its output
    t_out = type("MulConst", (torch.autograd.Function,), dict(vars(MulConst))).apply(tx, 3.0, ty)
    out = MulConst.apply(x, 3.0, y)
    t_node, node = t_out.grad_fn, out.grad_fn
    assert node.name() == t_node.name() == "MulConstBackward"
    assert repr(node).startswith("<genesis.autograd.function.MulConstBackward object at 0x")
    assert _edge_names(node) == _edge_names(t_node) == ["AccumulateGrad", None]
    assert node.next_functions[0][0].variable is x and node.next_functions[1] == (None, 0)


@pytest.mark.parametrize("op, names", [
    (lambda lib, a, b: a * b, ["self", "other"]), (lambda lib, a, b: a / b, ["self", "other"]),
    (lambda lib, a, b: a ** b, ["self", "exponent", "result"]),
    (lambda lib, a, b: lib.pow(a, 3), ["self", "exponent"]),
    (lambda lib, a, b: lib.exp(a), ["result"]), (lambda lib, a, b: lib.sin(a), ["self"])],
    ids=["mul", "div", "pow", "pow_scalar", "exp", "sin"])
def test_saved_values_by_name_as_torch(op, names, rng, device):
    """grad_fn._saved_<name> gives what the node saved, as PyTorch's node does: the operand
    itself, a Python scalar, or a new tensor equal to the output; after backward, the freed-graph
    error."""
    (a, b), (ta, tb) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    with genesis.no_grad():
        a.abs_().add_(0.5)
    ta.detach().abs_().add_(0.5)
    out, t_out = op(genesis, a, b), op(torch, ta, tb)
    for name in names:
        saved, t_saved = getattr(out.grad_fn, "_saved_" + name), getattr(t_out.grad_fn,
                                                                         "_saved_" + name)
        if isinstance(t_saved, torch.Tensor):
            assert_close(saved, t_saved.detach())
            for g, t, orig, t_orig in ((saved, t_saved, a, ta), (saved, t_saved, b, tb),
                                       (saved, t_saved, out, t_out)):
                assert (g is orig) == (t is t_orig)
        else:
            assert saved == t_saved
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        getattr(out.grad_fn, "_saved_" + names[0])
    with pytest.raises(AttributeError, match="_saved_bogus"):
        out.grad_fn._saved_bogus


def test_custom_function_higher_order(rng, device):
    x, tx = make_pair((4,), genesis.float64, requires_grad=True, rng=rng, device=device)
    (g,) = genesis.autograd.grad(MulConst.apply(x, 2.0, x).sum(), x, create_graph=True)
    (gg,) = genesis.autograd.grad(g.sum(), x)
    assert_close(g, 4 * tx.detach())
    assert gg.tolist() == [4.0] * 4


class SortedWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        order = np.argsort(x.detach().numpy(), kind="stable")
        idx = genesis.tensor(order)
        out = genesis.tensor(x.detach().numpy()[order])
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return out, idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (idx,) = ctx.saved_tensors
        assert g_idx is None or not g_idx.requires_grad
        out = np.zeros(g.shape, dtype=np.float32)
        out[idx.numpy()] = g.detach().numpy()
        return genesis.tensor(out)


def test_custom_function_multiple_outputs_and_non_differentiable(rng):
    x, tx = pair((6,), rng=rng)
    out, idx = SortedWithIndex.apply(x)
    assert out.requires_grad and not idx.requires_grad
    w, tw = make_pair((6,), rng=rng)
    (out * w).sum().backward()
    tout, _ = torch.sort(tx, stable=True)
    (tout * tw).sum().backward()
    assert_grads([x], [tx])


class Halves(Function):
    @staticmethod
    def forward(ctx, x, materialize):
        ctx.set_materialize_grads(materialize)
        return x * 0.5, x * 0.5

    @staticmethod
    def backward(ctx, ga, gb):
        if ga is None or gb is None:
            return (ga if gb is None else gb) * 0.5, None
        return (ga + gb) * 0.5, None


@pytest.mark.parametrize("materialize", [True, False])
def test_custom_function_materialize_grads(materialize, device):
    x = genesis.ones(3, requires_grad=True, device=device)
    a, _ = Halves.apply(x, materialize)
    a.sum().backward()
    assert x.grad.tolist() == [0.5] * 3


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_custom_function_mark_dirty(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    h = x * 2
    out = AddOneInPlace.apply(h)
    assert out is h and h.grad_fn.name() == "AddOneInPlaceBackward"
    assert h.tolist() == [3.0] * 3
    (h * h).sum().backward()
    assert x.grad.tolist() == [12.0] * 3
    with pytest.raises(RuntimeError, match="leaf"):
        AddOneInPlace.apply(genesis.ones(2, requires_grad=True, device=device))


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_returning_its_input_gives_a_new_tensor():
    x = genesis.ones(3, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    assert x.grad.tolist() == [2.0] * 3


class Square(Function):
    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    @genesis.autograd.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert not genesis.is_grad_enabled()
        return 2 * x * g


def test_custom_function_setup_context_and_once_differentiable(rng, device):
    x, tx = pair(rng=rng, device=device)
    Square.apply(x).sum().backward()
    (tx * tx).sum().backward()
    assert_grads([x], [tx])


class Checkpoint(Function):
    """Recomputes `fn` in backward and runs a nested backward through it (re-entrant engine)."""

    @staticmethod
    def forward(ctx, fn, x):
        ctx.fn = fn
        ctx.save_for_backward(x)
        return fn(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_()
        with genesis.enable_grad():
            out = ctx.fn(x)
        genesis.autograd.backward(out, g)
        return None, x.grad


def test_backward_inside_backward(rng, device):
    (x, w), (tx, tw) = zip(pair((5,), rng=rng, device=device), pair((5,), rng=rng, device=device))
    y = Checkpoint.apply(lambda t: (t * w).sin(), x)
    (y * y).sum().backward()
    ty = (tx * tw).sin()
    (ty * ty).sum().backward()
    assert_grads([x, w], [tx, tw])


class WrongGradients(Function):
    @staticmethod
    def forward(ctx, x, mode):
        ctx.mode = mode
        return x * 1

    @staticmethod
    def backward(ctx, g):
        if ctx.mode == "shape":
            return genesis.ones(7), None
        return ()


@pytest.mark.parametrize("mode,message", [("shape", "invalid gradient"),
                                          ("count", "incorrect number of gradients")])
def test_custom_function_bad_gradients_raise(mode, message):
    x = genesis.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        WrongGradients.apply(x, mode).sum().backward()


def test_custom_function_under_no_grad_records_nothing():
    x = genesis.ones(3, requires_grad=True)
    with genesis.no_grad():
        out = MulConst.apply(x, 2.0, x)
    assert not out.requires_grad and out.grad_fn is None



class InspectCtx(genesis.autograd.Function):
    """Records what its forward sees of `ctx`."""

    seen = None

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        InspectCtx.seen = (ctx.needs_input_grad, ctx.saved_tensors[0] is x, ctx.scale)
        return x * scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


class InspectSetupContext(genesis.autograd.Function):
    """PyTorch 2's form: forward without ctx, then setup_context."""

    seen = None

    @staticmethod
    def forward(x, scale):
        return x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        InspectSetupContext.seen = (ctx.needs_input_grad, ctx.saved_tensors[0] is inputs[0])

    @staticmethod
    def backward(ctx, g):
        return g * 2.0, None


@pytest.mark.parametrize("grad_mode", ["no_grad", "no input requires grad"])
def test_custom_function_untracked_ctx(grad_mode):
    """An untracked call's ctx still works as forward expects: needs_input_grad all False, one
    per argument; saved tensors read back; attributes kept."""
    x = genesis.ones(3, requires_grad=grad_mode == "no_grad")
    context = genesis.no_grad() if grad_mode == "no_grad" else contextlib.nullcontext()
    with context:
        out = InspectCtx.apply(x, 2.0)
        other = InspectSetupContext.apply(x, 2.0)
    assert InspectCtx.seen == ((False, False), True, 2.0)
    assert InspectSetupContext.seen == ((False, False), True)
    for y in (out, other):
        assert not y.requires_grad and y.grad_fn is None and y.tolist() == [2.0] * 3

# version counters and in-place ops


def test_modifying_a_saved_tensor_raises(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    h = x * 2
    y = h * h
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_modifying_a_saved_output_raises(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = genesis.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    assert x.tolist() == [1.0] * 3 and x._version == 0


def test_inplace_on_leaf_under_no_grad_is_allowed(device):
    x = genesis.ones(3, requires_grad=True, device=device)
    y = x * x
    with genesis.no_grad():
        x.sub_(0.5)
    assert x.tolist() == [0.5] * 3 and x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [1.0] * 3


@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "div_", "pow_"])
def test_inplace_on_non_leaf_matches_torch(op, rng, device):
    x, tx = make_pair((3, 4), rng=rng, low=0.5, high=2.0, requires_grad=True, device=device)
    c, tc = make_pair((3, 4), rng=rng, low=0.5, high=2.0, requires_grad=True, device=device)

    def f(x, c):
        h = x * 2
        getattr(h, op)(c)
        return (h * x).sum()
    f(x, c).backward()
    f(tx, tc).backward()
    assert_grads([x, c], [tx, tc])


@pytest.mark.parametrize("op", ["add_", "sub_", "div_", "pow_"])
def test_inplace_node_leads_to_the_history_it_overwrote(op, rng, device):
    """An in-place op's node links straight to the node that made the tensor it overwrote
    (PyTorch's graph: no clone between), and the tensor it was given."""
    (x, c), (tx, tc) = zip(pair(rng=rng, device=device), pair(rng=rng, device=device))
    h, th = x.exp(), tx.exp()
    getattr(h, op)(c)
    getattr(th, op)(tc)
    assert _edge_names(h.grad_fn) == _edge_names(th.grad_fn) == ["ExpBackward0", "AccumulateGrad"]
    assert h.grad_fn.next_functions[1][0].variable is c


@pytest.mark.parametrize("write", [
    lambda t: t.copy_(genesis.ones(4) if isinstance(t, genesis.Tensor) else torch.ones(4)),
    lambda t: t.zero_(), lambda t: t.fill_(2.5)], ids=["copy_", "zero_", "fill_"])
def test_overwriting_a_non_leaf_with_a_constant_cuts_its_gradient(write, rng, device):
    x, tx = pair((4,), rng=rng, device=device)
    y, ty = x * 3, tx * 3
    write(y)
    write(ty)
    assert y.requires_grad and y.grad_fn is not None
    (y * x).sum().backward()
    (ty * tx).sum().backward()
    assert_grads([x], [tx])


def test_inplace_into_tensor_without_grad_joins_the_graph(rng, device):
    x, tx = pair((4,), rng=rng, device=device)
    buf, tbuf = genesis.zeros(4, device=device), torch.zeros(4)
    buf.add_(x * 2)
    tbuf.add_(tx * 2)
    assert buf.requires_grad and not buf.is_leaf
    (buf * buf).sum().backward()
    (tbuf * tbuf).sum().backward()
    assert_grads([x], [tx])


# memory


def test_saved_tensors_are_released_after_backward(device):
    x = genesis.ones(4, requires_grad=True, device=device)
    h = x * 2
    ref = weakref.ref(h)
    y = (h * h).sum()
    del h
    assert ref() is not None
    y.backward()
    assert ref() is None
    with pytest.raises(RuntimeError, match="second time"):
        y.grad_fn.next_functions[0][0].saved_tensors


def test_ctx_attributes_holding_tensors_are_released():
    x = genesis.ones(4, requires_grad=True)
    h = x * 2
    ref = weakref.ref(h)
    y = MulConst.apply(x, 1.0, h)
    y.grad_fn.extra = (h, 1)
    del h
    y.sum().backward()
    assert ref() is None


def test_saved_outputs_form_no_reference_cycle():
    gc.collect()
    gc.disable()
    try:
        x = genesis.ones(4, requires_grad=True)
        y = x.exp()
        ref = weakref.ref(y)
        del y
        assert ref() is None
    finally:
        gc.enable()


def test_saved_output_gives_higher_order_gradients(rng, device):
    x, tx = make_pair((4,), genesis.float64, requires_grad=True, rng=rng, device=device)
    (g,) = genesis.autograd.grad(x.exp().tanh().sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(tx.exp().tanh().sum(), tx, create_graph=True)
    assert_close(genesis.autograd.grad(g.sum(), x)[0], torch.autograd.grad(tg.sum(), tx)[0])



def test_graph_walk_as_torchviz_does():
    """Every next_functions entry is a (node, index) pair, (None, 0) where no gradient flows, so
    code that walks the graph as torchviz's make_dot does reaches the same leaves as in torch."""
    leaves = []
    for lib in (genesis, torch):
        w = lib.ones(3, 2, requires_grad=True)
        b = lib.zeros(2, requires_grad=True)
        x = lib.ones(4, 3)
        out = ((x @ w + b).relu() * 2).sum()
        seen, stack, found = set(), [out.grad_fn], []
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            if hasattr(fn, "variable"):
                found.append(tuple(fn.variable.shape))
            for u, _ in fn.next_functions:
                if u is not None:
                    stack.append(u)
        leaves.append(sorted(found))
    assert leaves[0] == leaves[1] == [(2,), (3, 2)]
