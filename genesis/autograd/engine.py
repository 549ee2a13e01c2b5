"""The backward engine: runs the graph's nodes in dependency order.

The nodes reachable from the roots are put in topological order once (reverse post-order of a
depth-first walk), so a node runs only after every node that feeds it a gradient, however many
paths lead to it. Gradients flowing into each node are summed in a buffer. `backward` accumulates
into leaves' `.grad`; `grad` returns the gradients of chosen inputs instead and touches no `.grad`.
Both take GradientEdges (autograd.graph) wherever they take tensors. Hooks running during a pass
see it as the thread's current GraphTask.
"""

import math
import threading

from .._warnings import warn
from ..tensor import filled
from . import anomaly_mode, autocast_state, grad_mode
from .function import AccumulateGrad, edge_of, tensor_type
from .graph import GradientEdge

_node_observer = None  # set_node_observer's hook, or None
_local = threading.local()  # .tasks: this thread's running backward passes, innermost last


def set_node_observer(observer):
    """While `observer` is set, each node of a backward pass runs inside the context manager
    `observer(node)` (genesis.profiler times nodes this way); None removes it."""
    global _node_observer
    _node_observer = observer


class GraphTask:
    """A running backward pass, as the hooks it runs see it (register_multi_grad_hook)."""

    def __init__(self, order, run, target_nodes):
        self._order, self._run, self._target_nodes = order, run, target_nodes
        self._reached = None

    def will_execute(self, node):
        """Whether this pass runs `node`, or captures the gradient arriving at it."""
        if self._run is not None:
            return node in self._run or node in self._target_nodes
        if self._reached is None:
            self._reached = set(self._order)
        return node in self._reached


def current_graph_task():
    """The innermost backward pass running on this thread, or None."""
    tasks = getattr(_local, "tasks", None)
    return tasks[-1] if tasks else None


def _edge(out):
    """The graph edge (node, index) of a tensor or a GradientEdge."""
    return (out.node, out.output_nr) if isinstance(out, GradientEdge) else edge_of(out)


def _meta(out):
    """(shape, dtype, device) of a tensor, or of the gradient a GradientEdge carries."""
    if not isinstance(out, GradientEdge):
        return tuple(out.shape), out.dtype, out.device
    if isinstance(out.node, AccumulateGrad):
        return _meta(out.node.variable)
    shape, dtype, device = out.node._output_meta[out.output_nr]
    return tuple(shape), dtype, device


def _make_root_grads(tensors, grad_tensors, op):
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"{op}: got {len(grad_tensors)} gradients for {len(tensors)} outputs")
    grads = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, GradientEdge) and not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               "grad_fn")
        shape, dtype, device = _meta(t)
        if g is None:
            if math.prod(shape) != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                   f"(got a tensor of shape {list(shape)})")
            g = filled(shape, 1, dtype, device)
        elif tuple(g.shape) != shape:
            raise RuntimeError(f"{op}: mismatch in shape: grad_output[{i}] has a shape of "
                               f"{list(g.shape)} and output[{i}] has a shape of {list(shape)}.")
        grads.append(g)
    return grads


def _post_order(roots):
    """Every node reachable from `roots`, each after all the nodes it sends gradients to."""
    order, seen = [], set()
    for root in roots:
        if root in seen:  # reached from an earlier root: placed already, after its senders
            continue
        seen.add(root)
        stack = [(root, iter(root._edges))]
        while stack:
            node, edges = stack[-1]
            for edge in edges:
                if edge is not None and edge[0] not in seen:
                    seen.add(edge[0])
                    stack.append((edge[0], iter(edge[0]._edges)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _leading_to(targets, order):
    """The nodes of `order` (a post-order) that must run for gradients to reach `targets`.

    A target node itself runs only if another target lies beyond it: its incoming gradient is
    captured without running it, as PyTorch does (so its saved tensors stay alive).
    """
    run = set()
    for node in order:
        if any(e is not None and (e[0] in run or e[0] in targets) for e in node._edges):
            run.add(node)
    return run


def _zeros_for(meta):
    shape, dtype, device = meta
    return filled(tuple(shape), 0, dtype, device)


def _filled_like(t, value):
    return filled(tuple(t.shape), value, t.dtype, t.device)


def _run_pre_hooks(node, grads, runs=True):
    """What runs before a node, in PyTorch's order: its outputs' tensor hooks (each may replace
    its output's gradient; an output that got none shows None), retain_grad, then, if the node
    `runs` (a node whose gradient is only captured does not), its pre-hooks (each may replace
    all the gradients).

    As in PyTorch, a retained `.grad` is a copy of the first gradient and accumulates later
    ones, and it sees the gradient after the tensor's other hooks.
    """
    for nr, hooks in node._tensor_hooks.items():
        for hook in list(hooks.values()):
            result = hook(grads[nr])
            if result is not None:
                grads[nr] = result
    for nr, ref in node._retain_grad_refs.items():
        tensor = ref()
        if tensor is not None and grads[nr] is not None:
            tensor.grad = grads[nr].clone() if tensor.grad is None else tensor.grad + grads[nr]
    if runs and node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            result = hook(tuple(grads))
            if result is not None:
                grads[:] = _hook_result(hook, result, len(grads))


def _hook_result(hook, result, expected):
    """A pre-hook's replacement gradients, checked as PyTorch checks them."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != expected:
        name = getattr(hook, "__name__", repr(hook))
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(result)}, but expected {expected})")
    return result


def _execute(root_edges, root_grads, retain_graph, create_graph, targets=None, accumulate=True):
    """Propagate `root_grads` from `root_edges` through the graph.

    Autocast is suspended: each backward runs in the dtypes its forward chose.

    With `targets` (a dict edge -> None) only the nodes leading to those edges run, and the
    gradient arriving at each target edge is recorded in the dict. Leaves accumulate into
    `.grad` when `accumulate` is true (and run their hooks either way).
    """
    buffers = {}
    for (node, nr), g in zip(root_edges, root_grads):
        _add_to_buffer(buffers, node, nr, g)
    order = _post_order(list(buffers))
    target_nodes = run = None
    if targets is not None:
        target_nodes = {e[0] for e in targets}
        run = _leading_to(target_nodes, order)

    def evaluate(node, grads):
        if isinstance(node, AccumulateGrad):
            _leaf(node, grads, create_graph, targets, accumulate)
            return
        if node._hooked:
            _run_pre_hooks(node, grads, run is None or node in run)
        if run is None:
            _pass_on(node, grads, buffers, retain_graph)
        else:
            _capture(node, grads, targets)
            if node in run:
                _pass_on(node, grads, buffers, retain_graph)

    tasks = _local.__dict__.setdefault("tasks", [])
    tasks.append(GraphTask(order, run, target_nodes))
    try:
        with grad_mode.set_grad_enabled(create_graph), autocast_state.disabled():
            for node in reversed(order):
                grads = buffers.pop(node, None)
                if grads is None or (run is not None and node not in run
                                     and node not in target_nodes):
                    continue
                if _node_observer is None:
                    evaluate(node, grads)
                else:
                    with _node_observer(node):
                        evaluate(node, grads)
    finally:
        tasks.pop()


def _add_to_buffer(buffers, node, nr, grad):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.num_outputs
    buf[nr] = grad if buf[nr] is None else buf[nr] + grad


def _leaf(node, grads, create_graph, targets, accumulate):
    """A leaf's gradient: hooks, then accumulated into `.grad` or captured for `grad`.

    The gradient is handed on without keeping a reference, so AccumulateGrad can take it
    without a copy when nothing else holds it.
    """
    if accumulate:
        if node._hooked:
            _accumulate_hooked(node, grads, create_graph)
        else:
            node.accumulate(node.run_hooks(grads.pop()), create_graph)
    elif (node, 0) in targets:
        targets[(node, 0)] = node.run_hooks(grads.pop())


def _accumulate_hooked(node, grads, create_graph):
    """A leaf's accumulation with hooks on its AccumulateGrad node, in PyTorch's order: the
    leaf's tensor hooks, the node's pre-hooks, the accumulation, the node's post hooks (called
    with no grad_inputs)."""
    grads[0] = node.run_hooks(grads[0])
    _run_pre_hooks(node, grads)
    node.accumulate(grads[0], create_graph)
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            hook((), tuple(grads))


def _capture(node, grads, targets):
    """Record the gradients arriving at targeted outputs of `node`."""
    if targets is not None:
        for nr, g in enumerate(grads):
            if (node, nr) in targets and g is not None:
                targets[(node, nr)] = g


def _pass_on(node, grads, buffers, retain_graph):
    """Run `node` and add its input gradients to the buffers of the nodes they flow to."""
    for edge, g in zip(node._edges, _apply_node(node, grads, retain_graph)):
        if edge is not None and g is not None:
            _add_to_buffer(buffers, edge[0], edge[1], g)


def _apply_node(node, grads, retain_graph):
    """Run one node; returns the gradients for its graph edges (Nones when it is skipped)."""
    if len(grads) == 1:  # the usual case: one output, its gradient present
        if grads[0] is None:
            return ()
    elif any(g is None for g in grads):  # (`None in grads` would compare tensors)
        if all(g is None for g in grads):
            return ()
        if node.materialize_grads:
            grads = [g if g is not None or meta is None else _zeros_for(meta)
                     for g, meta in zip(grads, node._output_meta)]
    in_grads = anomaly_mode.apply_checked(node, grads) if anomaly_mode._enabled \
        else node.apply(grads)
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            result = hook(in_grads, tuple(grads))
            if result is not None:
                in_grads = tuple(result)
    if not retain_graph:
        node.release()
    return in_grads


def _as_tuple(tensors):
    if tensors is None:
        return None
    return (tensors,) if isinstance(tensors, (tensor_type(), GradientEdge)) else tuple(tensors)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into every leaf's `.grad` (or only into `inputs`')."""
    tensors = _as_tuple(tensors)
    retain_graph = create_graph if retain_graph is None else retain_graph
    grads = _make_root_grads(tensors, _as_tuple(grad_tensors), "backward")
    edges = [_edge(t) for t in tensors]
    inputs = _as_tuple(inputs)
    if inputs is None:
        _execute(edges, grads, retain_graph, create_graph)
        return
    if not inputs:
        raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
    targets = {_edge(t): None for t in _check_inputs(inputs, "backward")}
    _execute(edges, grads, retain_graph, create_graph, targets)
    for t in inputs:
        g = targets[_edge(t)]
        if g is not None and not isinstance(t, GradientEdge) and not t.is_leaf:
            g = g if create_graph else g.detach()
            t.grad = g.clone() if t.grad is None else t.grad + g


def _check_inputs(inputs, op):
    for i, t in enumerate(inputs):
        if not isinstance(t, GradientEdge) and not t.requires_grad:
            raise RuntimeError(f"{op}: input {i} (shape {list(t.shape)}) does not require grad")
    return inputs


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple; `.grad` is untouched.
    `only_inputs` is PyTorch's deprecated flag, ignored (False warns)."""
    if not only_inputs:
        warn("only_inputs argument is deprecated and is ignored now (defaults to True). To "
             "accumulate gradient for other parts of the graph, please use "
             "torch.autograd.backward.", FutureWarning)
    outputs = _as_tuple(outputs)
    inputs = _check_inputs(_as_tuple(inputs), "grad")
    retain_graph = create_graph if retain_graph is None else retain_graph
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True")
    grads = _make_root_grads(outputs, _as_tuple(grad_outputs), "grad")
    targets = {_edge(t): None for t in inputs}
    _execute([_edge(t) for t in outputs], grads, retain_graph, create_graph, targets,
             accumulate=False)
    result = []
    for i, t in enumerate(inputs):
        g = targets[_edge(t)]
        if g is None:
            if materialize_grads:
                if isinstance(t, GradientEdge):
                    raise RuntimeError("materialize_grads cannot be used when the given input is "
                                       "a GradientEdge")
                g = _filled_like(t, 0)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)
