"""torch.autograd.graph's names against PyTorch: Node and its hooks, GradientEdge with grad and
backward, increment_version, register_multi_grad_hook, allow_mutation_on_saved_tensors; the
other switches of torch.autograd; and which names of torch.autograd, its graph module and
torch.func genesis leaves out, and why."""

import gc
import threading
import types

import pytest
import torch
import torch.func  # read by the names test

import genesis
import genesis.func  # read by the names test
from helpers import assert_close, make_pair

GRAPH = {genesis: genesis.autograd.graph, torch: torch.autograd.graph}


def pair(rng, shape=(2, 3)):
    return make_pair(shape, requires_grad=True, rng=rng)


def error_of(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def assert_same_error(g_call, t_call):
    g_err, t_err = error_of(g_call), error_of(t_call)
    assert type(g_err) is type(t_err), (g_err, t_err)
    assert str(g_err) == str(t_err), (g_err, t_err)


# Node


def test_every_node_is_a_graph_node(rng):
    class Double(genesis.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x, _ = pair(rng)
    y = x.clone()
    accumulate = y.grad_fn.next_functions[0][0]
    for node in (y.grad_fn, Double.apply(x).grad_fn, accumulate):
        assert isinstance(node, genesis.autograd.graph.Node)
        assert issubclass(type(node), genesis.autograd.graph.Node)
    assert not isinstance(x, genesis.autograd.graph.Node)
    assert y.grad_fn.name() == torch.ones(1, requires_grad=True).clone().grad_fn.name()
    assert accumulate.next_functions == ()


def test_node_metadata_is_one_dict_per_node(rng):
    x, _ = pair(rng)
    y = x * 2
    assert y.grad_fn.metadata == {}
    y.grad_fn.metadata["step"] = 3
    assert y.grad_fn.metadata is y.grad_fn.metadata and y.grad_fn.metadata == {"step": 3}
    assert (x * 2).grad_fn.metadata == {}
    y.sum().backward()
    assert y.grad_fn.metadata == {"step": 3}  # kept when backward frees the saved tensors


def _hook_log(lib, x):
    """The order and gradients PyTorch's hooks see: tensor hook, retain_grad, pre-hooks (each
    seeing the last one's result), the node, its post hook."""
    log = []
    y = x * 2
    y.grad_fn.register_prehook(lambda go: log.append(("pre1", go[0].tolist())) or (go[0] * 10,))
    y.register_hook(lambda g: log.append(("tensor", g.tolist())) or g + 1)
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre2", go[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi[0].tolist(), go[0].tolist())))
    (y * y).sum().backward()
    return log, y.grad, x.grad


def test_node_hooks_run_in_torch_order(rng):
    x, tx = pair(rng)
    (log, y_grad, x_grad), (t_log, t_y_grad, t_x_grad) = _hook_log(genesis, x), _hook_log(torch, tx)
    assert [entry[0] for entry in log] == [entry[0] for entry in t_log]
    for entry, t_entry in zip(log, t_log):
        for value, t_value in zip(entry[1:], t_entry[1:]):
            assert_close(genesis.tensor(value), torch.tensor(t_value))
    assert_close(y_grad, t_y_grad)
    assert_close(x_grad, t_x_grad)


def test_node_hooks_of_a_node_grad_only_captures_do_not_run(rng):
    x, tx = pair(rng)
    logs = {}
    for lib, leaf in ((genesis, x), (torch, tx)):
        log = logs[lib] = []
        y = leaf * 2
        y.grad_fn.register_prehook(lambda go, log=log: log.append("pre"))
        y.grad_fn.register_hook(lambda gi, go, log=log: log.append("post"))
        y.register_hook(lambda g, log=log: log.append("tensor"))
        lib.autograd.grad((y * y).sum(), y, retain_graph=True)
        log.append("grad of x")
        lib.autograd.grad((y * y).sum(), leaf)
    assert logs[genesis] == logs[torch] == ["tensor", "grad of x", "tensor", "pre", "post"]


def test_prehook_handle_removes_it():
    """PyTorch's register_prehook example."""
    for lib in (genesis, torch):
        a = lib.tensor([0., 0., 0.], requires_grad=True)
        b = a.clone()
        handle = b.grad_fn.register_prehook(lambda gi: (gi[0] * 2,))
        b.sum().backward(retain_graph=True)
        assert a.grad.tolist() == [2., 2., 2.]
        handle.remove()
        a.grad = None
        b.sum().backward(retain_graph=True)
        assert a.grad.tolist() == [1., 1., 1.]


def _leaf_node_log(lib, x):
    """What the hooks of a leaf's AccumulateGrad see under backward and under grad."""
    log = []
    y = x * 3
    node = y.grad_fn.next_functions[0][0]
    x.register_hook(lambda g: log.append(("tensor", g.tolist())))
    node.register_prehook(lambda go: log.append(("pre", len(go), go[0].tolist())))
    node.register_hook(lambda gi, go: log.append(("post", len(gi), go[0].tolist())))
    y.sum().backward(retain_graph=True)
    log.append("grad")
    lib.autograd.grad(y.sum(), x)
    return log


def test_accumulate_grad_node_hooks_as_torch(rng):
    x, tx = pair(rng)
    assert _leaf_node_log(genesis, x) == _leaf_node_log(torch, tx)


@pytest.mark.parametrize("result", ["tensor", "pair", "list"])
def test_prehook_results_checked_as_torch(result):
    make = {"tensor": lambda go: go[0], "pair": lambda go: (go[0], go[0]),
            "list": lambda go: [go[0]]}[result]

    def run(lib):
        y = lib.ones(3, requires_grad=True) * 3
        y.grad_fn.register_prehook(make)
        return lambda: y.sum().backward()
    assert_same_error(run(genesis), run(torch))


def test_tensor_hook_sees_none_for_an_output_without_gradient(rng):
    x, tx = pair(rng)
    seen = {}
    for lib, leaf in ((genesis, x), (torch, tx)):
        first, second = (leaf * 1).unbind()
        second.register_hook(lambda g, lib=lib: seen.setdefault(lib, g))
        first.sum().backward()
    assert seen[genesis] is None and seen[torch] is None


# GradientEdge


def test_gradient_edge_fields_as_torch(rng):
    x, tx = pair(rng)
    edges = {}
    for lib, leaf in ((genesis, x), (torch, tx)):
        first, second = leaf.exp().split(1)
        edges[lib] = [GRAPH[lib].get_gradient_edge(t) for t in (leaf, first, second)]
    for edge, t_edge in zip(edges[genesis], edges[torch]):
        assert isinstance(edge, genesis.autograd.graph.GradientEdge) and isinstance(edge, tuple)
        assert edge._fields == t_edge._fields
        assert edge.node.name().split("::")[-1] == t_edge.node.name().split("::")[-1]
        assert (edge.output_nr, edge.ownership_token) == (t_edge.output_nr, None)


def test_grad_with_respect_to_an_edge_is_the_grad_of_its_tensor(rng):
    x, tx = pair(rng)
    results = []
    for lib, leaf in ((genesis, x), (torch, tx)):
        edge_of = GRAPH[lib].get_gradient_edge
        y = leaf.sin()
        loss = (y * y).sum()
        by_edges = lib.autograd.grad(loss, [edge_of(y), edge_of(leaf)], retain_graph=True)
        by_tensors = lib.autograd.grad(loss, [y, leaf])
        for a, b in zip(by_edges, by_tensors):
            assert a.tolist() == b.tolist()
        results.append(by_edges)
    for g, t in zip(*results):
        assert_close(g, t)


def test_an_edge_outlives_its_tensor(rng):
    x, tx = pair(rng)
    grads = []
    for lib, leaf in ((genesis, x), (torch, tx)):
        y = leaf.exp()
        edge = GRAPH[lib].get_gradient_edge(y)
        loss = (y * 3).sum()
        del y
        gc.collect()
        grads.append(lib.autograd.grad(loss, edge)[0])
    assert_close(*grads)


def test_edges_as_outputs_of_grad_and_backward(rng):
    x, tx = pair(rng)
    got = []
    for lib, leaf in ((genesis, x), (torch, tx)):
        edge_of = GRAPH[lib].get_gradient_edge
        y = leaf.exp()
        total = y.sum()
        implicit = lib.autograd.grad(edge_of(total), leaf, retain_graph=True)[0]
        seeded = lib.autograd.grad(edge_of(y), leaf, lib.ones_like(y) * 2, retain_graph=True)[0]
        lib.autograd.backward(edge_of(total), inputs=edge_of(leaf))
        got.append((implicit, seeded, leaf.grad))
    for g, t in zip(*got):
        assert_close(g, t)


@pytest.mark.parametrize("case", ["not scalar", "requires no grad", "materialize"])
def test_gradient_edge_errors_as_torch(case):
    def run(lib):
        edge_of = GRAPH[lib].get_gradient_edge
        x = lib.ones(3, requires_grad=True)
        y, unused = x.exp(), lib.ones(2, requires_grad=True)
        if case == "not scalar":
            return lambda: lib.autograd.grad(edge_of(y), x)
        if case == "requires no grad":
            return lambda: edge_of(lib.ones(2))
        return lambda: lib.autograd.grad(y.sum(), [x, edge_of(unused)], materialize_grads=True)
    g_err, t_err = error_of(run(genesis)), error_of(run(torch))
    assert type(g_err) is type(t_err)
    assert str(g_err).startswith(str(t_err))


def test_unused_edge_with_allow_unused(rng):
    x, _ = pair(rng)
    other = genesis.ones(2, requires_grad=True)
    edge = genesis.autograd.graph.get_gradient_edge(other)
    grads = genesis.autograd.grad(x.sum(), [x, edge], allow_unused=True)
    assert grads[1] is None and grads[0].tolist() == [[1.0] * 3] * 2
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        genesis.autograd.grad(x.sum(), [x, edge])


def test_unused_input_is_refused_in_torchs_words(rng):
    g, t = pair(rng)
    errors = []
    for lib, x in ((torch, t), (genesis, g)):
        other = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as error:
            lib.autograd.grad(x.sum(), [x, other])
        errors.append(str(error.value))
    assert errors[0] == errors[1]


# increment_version


def test_increment_version_makes_saved_values_stale(rng):
    for lib in (genesis, torch):
        x = lib.ones(3, requires_grad=True)
        y, z = x * 1, x * 1
        out = (y * y).sum() + (z * z).sum()
        before = (y._version, z._version)
        GRAPH[lib].increment_version(y)
        GRAPH[lib].increment_version([y, z])
        assert (y._version, z._version) == (before[0] + 2, before[1] + 1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


# register_multi_grad_hook


def _multi_all_log(lib, a, b):
    """PyTorch's register_multi_grad_hook example, with the gradients' values."""
    log = []
    c, d = a * b, a * b
    handle = GRAPH[lib].register_multi_grad_hook(
        (a, b, c, d), lambda grads: log.append([None if g is None else g.tolist() for g in grads]))
    c.sum().backward(retain_graph=True)
    (c * d).sum().backward(inputs=(a, d), retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    handle.remove()
    c.sum().backward()
    return log


def test_multi_grad_hook_all_as_torch(rng):
    (a, ta), (b, tb) = pair(rng), pair(rng)
    log, t_log = _multi_all_log(genesis, a, b), _multi_all_log(torch, ta, tb)
    assert len(log) == len(t_log) == 3
    for grads, t_grads in zip(log, t_log):
        assert [g is None for g in grads] == [g is None for g in t_grads]
        for g, t in zip(grads, t_grads):
            if g is not None:
                assert_close(genesis.tensor(g), torch.tensor(t))


def test_multi_grad_hook_all_over_outputs_of_one_node(rng):
    x, tx = pair(rng)
    logs = {}
    for lib, leaf in ((genesis, x), (torch, tx)):
        first, second = leaf.unbind()
        log = logs[lib] = []
        GRAPH[lib].register_multi_grad_hook(
            (first, second), lambda grads, log=log: log.append([g is not None for g in grads]))
        first.sum().backward(retain_graph=True)
        (first.sum() + second.sum()).backward()
    assert logs[genesis] == logs[torch] == [[True, False], [True, True]]


def _multi_any_log(lib, a, b):
    """The first gradient of each pass: c's (its node runs before the leaves'), then a's in a
    pass that does not reach c."""
    log = []
    c = a * b
    GRAPH[lib].register_multi_grad_hook((a, c, lib.ones(2)), log.append, mode="any")
    (c * 2).sum().backward()
    (a * 3).sum().backward()
    return log


def test_multi_grad_hook_any_runs_once_per_pass(rng):
    (a, ta), (b, tb) = pair(rng), pair(rng)
    log, t_log = _multi_any_log(genesis, a, b), _multi_any_log(torch, ta, tb)
    assert len(log) == len(t_log) == 2
    for g, t in zip(log, t_log):
        assert_close(g, t)


def test_multi_grad_hook_mode_error_as_torch():
    assert_same_error(
        lambda: genesis.autograd.graph.register_multi_grad_hook(
            [genesis.ones(1, requires_grad=True)], print, mode="each"),
        lambda: torch.autograd.graph.register_multi_grad_hook(
            [torch.ones(1, requires_grad=True)], print, mode="each"))


# allow_mutation_on_saved_tensors


def _mutated_after_saving(lib, x, write):
    """x's gradient through (b ** 3).sum() when `write` changes b (or memory it shares) after
    the graph saved it, inside allow_mutation_on_saved_tensors."""
    with GRAPH[lib].allow_mutation_on_saved_tensors():
        b = x.clone()
        out = (b ** 3).sum()
        write(b)
        out.backward()
    return x.grad


@pytest.mark.parametrize("write", ["sin_", "setitem", "view at 0", "copy_", "fill_", "relu_"])
def test_allow_mutation_as_torch(write, rng):
    writes = {"sin_": lambda b: b.sin_(), "setitem": lambda b: b.__setitem__(0, 5.0),
              "view at 0": lambda b: b[:1].mul_(2), "copy_": lambda b: b.copy_(b * 7),
              "fill_": lambda b: b.fill_(1.5), "relu_": lambda b: b.relu_()}
    x, tx = pair(rng)
    assert_close(_mutated_after_saving(genesis, x, writes[write]),
                 _mutated_after_saving(torch, tx, writes[write]))


@pytest.mark.parametrize("write", ["view at an offset", "base of a saved view"])
def test_allow_mutation_sees_every_alias(write, rng):
    """A write through any tensor over the saved memory copies it first. PyTorch keys aliases by
    data pointer and misses these two (its gradient comes out wrong): the reference is the
    gradient without the write."""
    x, tx = pair(rng, (4,))
    with genesis.autograd.graph.allow_mutation_on_saved_tensors():
        b = x.clone()
        saved = b if write == "view at an offset" else b[1:]
        out = (saved ** 3).sum()
        (b[2:] if write == "view at an offset" else b).mul_(2)
        out.backward()
    t_saved = tx if write == "view at an offset" else tx[1:]
    (t_saved ** 3).sum().backward()
    assert_close(x.grad, tx.grad)


def _second_order_through_a_copy(lib, x):
    with GRAPH[lib].allow_mutation_on_saved_tensors() as ctx:
        b = x * 1
        out = (b ** 3).sum()
        b.sin_()
        assert len(ctx.cloned) == 1
        first, = lib.autograd.grad(out, x, create_graph=True)
        second, = lib.autograd.grad(first.sum(), x)
    return first, second


def test_allow_mutation_keeps_higher_order_gradients(rng):
    x, tx = pair(rng)
    for g, t in zip(_second_order_through_a_copy(genesis, x),
                    _second_order_through_a_copy(torch, tx)):
        assert_close(g, t)


def _leaf_stepped_after_forward(lib, w, x):
    """An optimizer-like step on a weight between forward and backward; second-order
    gradients still reach the weight through the copy."""
    with GRAPH[lib].allow_mutation_on_saved_tensors():
        loss = ((x @ w) ** 2).sum()
        with lib.no_grad():
            w.sub_(0.5)
        first, = lib.autograd.grad(loss, w, create_graph=True)
        (first ** 2).sum().backward()
    return first, w.grad


def test_allow_mutation_of_a_leaf_between_forward_and_backward(rng):
    (w, tw), (x, tx) = (make_pair((3, 2), genesis.float64, requires_grad=True, rng=rng),
                        make_pair((4, 3), genesis.float64, rng=rng))
    for g, t in zip(_leaf_stepped_after_forward(genesis, w, x),
                    _leaf_stepped_after_forward(torch, tw, tx)):
        assert_close(g, t)


def test_allow_mutation_errors_as_torch():
    def nested(lib):
        def run():
            with GRAPH[lib].allow_mutation_on_saved_tensors():
                with GRAPH[lib].allow_mutation_on_saved_tensors():
                    pass
        return run

    def backward_outside(lib):
        with GRAPH[lib].allow_mutation_on_saved_tensors() as ctx:
            out = (lib.ones(3, requires_grad=True).clone() ** 2).sum()
            assert len(ctx.original) > 0
        assert len(ctx.original) == len(ctx.cloned) == 0
        return out.backward

    assert_same_error(nested(genesis), nested(torch))
    assert_same_error(backward_outside(genesis), backward_outside(torch))
    with genesis.autograd.graph.allow_mutation_on_saved_tensors():  # the failed one closed
        pass


def test_allow_mutation_refuses_a_write_it_did_not_see():
    """A write behind the in-place ops' back (here: a raw write that bumps the version, as a
    fused optimizer's does) cannot be undone: backward raises rather than use the new values."""
    with genesis.autograd.graph.allow_mutation_on_saved_tensors():
        b = genesis.ones(3, requires_grad=True).clone()
        out = (b ** 2).sum()
        b._data[...] = 5.0
        genesis.autograd.graph.increment_version(b)
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors did not see"):
            out.backward()


def test_saved_tensor_hooks_are_refused_inside_disable():
    message = "saved tensors default hooks are disabled"
    with genesis.autograd.graph.disable_saved_tensors_hooks(message):
        with pytest.raises(RuntimeError, match=message):
            with genesis.autograd.graph.allow_mutation_on_saved_tensors():
                pass


# torch.autograd's switches


def _leaf_grad_strides(lib, p, enable):
    p.grad = None
    with lib.autograd.enforce_grad_layout_policy(enable):
        (p * 2).sum().backward()
        (p.exp() * 0).sum().backward()  # a later gradient accumulates in place
    return p.grad.stride()


@pytest.mark.parametrize("enable", [True, False])
def test_enforce_grad_layout_policy_as_torch(enable, rng):
    """A permuted leaf: its first gradient arrives row-major; PyTorch copies it into the leaf's
    layout under the policy and takes it as it is without."""
    p, tp = make_pair((2, 3, 4), rng=rng)
    p, tp = p.permute(2, 0, 1).requires_grad_(), tp.permute(2, 0, 1).requires_grad_()
    assert _leaf_grad_strides(genesis, p, enable) == _leaf_grad_strides(torch, tp, enable)
    assert_close(p.grad, tp.grad)


@pytest.mark.parametrize("names", [
    ("enforce_grad_layout_policy", "_is_grad_layout_enforcement_enabled", None),
    ("set_multithreading_enabled", "_is_multithreading_enabled", "is_multithreading_enabled"),
    ("_force_original_view_tracking", "_is_view_replay_enabled", "is_view_replay_enabled")])
def test_switches_behave_as_torch(names):
    """Set at once by a bare call, restored by a with block, set around each call as a
    decorator; per thread."""
    name, torch_reader, reader = names
    readers = {genesis: (lambda: getattr(genesis.autograd.grad_mode._state, {
                   "enforce_grad_layout_policy": "grad_layout",
                   "set_multithreading_enabled": "multithreading",
                   "_force_original_view_tracking": "view_replay"}[name])),
               torch: getattr(torch._C, torch_reader)}
    if reader is not None:
        assert getattr(genesis.autograd, reader)() == readers[torch]()
    seen = {}
    for lib in (genesis, torch):
        switch, read = getattr(lib.autograd, name), readers[lib]
        default = read()
        with switch(not default):
            inside = read()
            other = []
            thread = threading.Thread(target=lambda other=other, read=read: other.append(read()))
            thread.start()
            thread.join()
        after_with = read()
        decorated = switch(not default)(read)
        after_decorating = read()
        switch(not default)
        after_call = read()
        switch(default)
        seen[lib] = [default, inside, other[0], after_with, decorated(), after_decorating,
                     after_call, read()]
    if name == "set_multithreading_enabled":  # decorating leaves PyTorch's set: not genesis's
        assert seen[genesis][5] == seen[genesis][0] != seen[torch][5]
        seen[genesis][5] = seen[torch][5]
    assert seen[genesis] == seen[torch]


# names left out


LEFT_OUT = {
    "region_activation_memory_budget": "annotates a region for torch.compile's min-cut "
                                        "partitioner and raises outside a compiled region; "
                                        "genesis compiles no graphs to partition",
    "set_warn_on_accumulate_grad_stream_mismatch": "a warning of the engine's per-node CUDA "
                                                   "streams; genesis runs backward on the "
                                                   "current stream",
    "set_override_stale_capture_stream": "the engine's per-node CUDA streams during graph "
                                         "capture; genesis runs backward on the current stream",
    "NestedIOFunction": "the legacy instance-style Function with nested inputs; calling one "
                        "fails in PyTorch itself ('super' object has no attribute "
                        "'_do_forward'): subclass Function",
    "is_tensor_like": "torch.overrides' __torch_function__ protocol, which genesis does not "
                      "have (see tests/test_torch_namespace.py's MODULES_LEFT_OUT)",
    "has_torch_function": "torch.overrides' __torch_function__ protocol (see is_tensor_like)",
    "handle_torch_function": "torch.overrides' __torch_function__ protocol (see "
                             "is_tensor_like)",
    "profiler_legacy": "torch's pre-Kineto profiler internals; genesis.autograd.profiler has "
                       "its public classes",
    "profiler_util": "torch's profiler internals; genesis.autograd.profiler has EventList, "
                     "FunctionEvent and FunctionEventAvg",
    "DeviceType": "binding of the C++ profiler (see profiler_util)",
    "ProfilerActivity": "binding of the C++ profiler: genesis.profiler.ProfilerActivity",
    "ProfilerConfig": "binding of the C++ profiler (see profiler_util)",
    "ProfilerEvent": "binding of the C++ profiler (see profiler_util)",
    "ProfilerState": "binding of the C++ profiler (see profiler_util)",
    "kineto_available": "binding of the C++ profiler (see profiler_util)",
    "SavedTensor": "the type of grad_fn._raw_saved_*; genesis nodes show their saved values "
                   "as grad_fn._saved_*",
}


def _torch_autograd_names():
    """torch.autograd's __all__ and the other public names it defines or binds from torch (its
    typing and standard-library imports are not its API)."""
    def origin(value):
        if isinstance(value, types.ModuleType):
            return value.__name__ if value.__name__.startswith("torch.autograd.") else ""
        return getattr(value, "__module__", None) or type(value).__module__
    names = {n for n in dir(torch.autograd)
             if not n.startswith("_") and origin(getattr(torch.autograd, n)).startswith("torch")}
    return names | set(torch.autograd.__all__)


@pytest.mark.parametrize("module", ["autograd.graph", "autograd", "func"])
def test_every_torch_name_is_present_or_left_out_with_a_reason(module):
    theirs, ours = torch, genesis
    for part in module.split("."):
        theirs, ours = getattr(theirs, part), getattr(ours, part)
    names = _torch_autograd_names() if module == "autograd" else set(theirs.__all__)
    missing = sorted(n for n in names if not hasattr(ours, n) and n not in LEFT_OUT)
    assert not missing
    gained = sorted(n for n in names & set(LEFT_OUT) if hasattr(ours, n))
    assert not gained, f"remove from LEFT_OUT: {gained}"
