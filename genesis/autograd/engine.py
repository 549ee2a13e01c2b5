"""The backward engine: runs the graph's nodes in dependency order.

Gradients flowing into each node are summed in a buffer; a node runs once all the nodes that feed
it have run (Kahn's algorithm over the edges reachable from the roots). `backward` accumulates into
leaves' `.grad`; `grad` returns the gradients of chosen inputs instead and touches no `.grad`.
"""

from . import grad_mode
from .function import AccumulateGrad, edge_of, grad_accumulator


def _make_root_grads(tensors, grad_tensors, op):
    from ..ops.creation import ones_like
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"{op}: got {len(grad_tensors)} gradients for {len(tensors)} outputs")
    grads = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               "grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                   f"(got a tensor of shape {list(t.shape)})")
            g = ones_like(t)
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"{op}: mismatch in shape: grad_output[{i}] has a shape of "
                               f"{list(g.shape)} and output[{i}] has a shape of {list(t.shape)}.")
        grads.append(g)
    return grads


def _dependencies(roots):
    """Count, for every node reachable from `roots`, the edges that lead into it."""
    deps, seen, stack = {}, set(), list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for edge in node.next_functions:
            if edge is not None:
                deps[edge[0]] = deps.get(edge[0], 0) + 1
                stack.append(edge[0])
    return deps, seen


def _nodes_leading_to(targets, nodes):
    """The subset of `nodes` from which some target node can be reached."""
    useful = set(targets)
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if node not in useful and any(e is not None and e[0] in useful
                                          for e in node.next_functions):
                useful.add(node)
                changed = True
    return useful


def _zeros_for(meta):
    from ..ops.creation import zeros
    shape, dtype, device = meta
    return zeros(shape, dtype=dtype, device=device)


def _run_tensor_hooks(node, grads, create_graph):
    """Tensor hooks and retain_grad of non-leaf outputs see their gradient before the node runs."""
    for nr, hooks in node._tensor_hooks.items():
        if grads[nr] is not None:
            for hook in list(hooks.values()):
                result = hook(grads[nr])
                if result is not None:
                    grads[nr] = result
    for nr, ref in node._retain_grad_refs.items():
        tensor = ref()
        if tensor is not None and grads[nr] is not None:
            tensor.grad = grads[nr] if create_graph else grads[nr].detach()


def _execute(root_edges, root_grads, retain_graph, create_graph, capture=None):
    """Propagate `root_grads` from `root_edges` through the graph.

    With `capture` (a dict edge -> None) the gradients arriving at those edges are recorded
    there and leaves are left alone; without it, leaves accumulate into `.grad`.
    """
    buffers = {}
    for (node, nr), g in zip(root_edges, root_grads):
        buf = buffers.setdefault(node, [None] * node.num_outputs)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    deps, reachable = _dependencies(buffers)
    useful = None
    if capture is not None:
        useful = _nodes_leading_to({e[0] for e in capture}, reachable)
    ready = [n for n in buffers if deps.get(n, 0) == 0]
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or [None] * node.num_outputs
            _run_tensor_hooks(node, grads, create_graph)
            if capture is not None:
                for nr, g in enumerate(grads):
                    if (node, nr) in capture and g is not None:
                        capture[(node, nr)] = g
            in_grads = _apply_node(node, grads, retain_graph, create_graph, capture, useful)
            for edge, g in zip(node.next_functions, in_grads):
                if edge is None:
                    continue
                nxt, nr = edge
                if g is not None:
                    buf = buffers.setdefault(nxt, [None] * nxt.num_outputs)
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)


def _apply_node(node, grads, retain_graph, create_graph, capture, useful):
    """Run one node; returns the gradients for its next_functions (Nones when it is skipped)."""
    skip = all(g is None for g in grads) or (useful is not None and node not in useful)
    if isinstance(node, AccumulateGrad):
        if not skip and capture is None:
            node.accumulate(grads[0], create_graph)
        return ()
    if skip:
        return (None,) * len(node.next_functions)
    if node.materialize_grads:
        grads = [g if g is not None or meta is None else _zeros_for(meta)
                 for g, meta in zip(grads, node._output_meta)]
    in_grads = node.apply(grads)
    post_hooks = getattr(node, "_post_hooks", None)
    if post_hooks:
        for hook in list(post_hooks.values()):
            result = hook(in_grads, tuple(grads))
            if result is not None:
                in_grads = tuple(result)
    if not retain_graph:
        node.release()
    return in_grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into every leaf's `.grad` (or only into `inputs`')."""
    from ..tensor import Tensor
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    if isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    tensors = tuple(tensors)
    retain_graph = create_graph if retain_graph is None else retain_graph
    grads = _make_root_grads(tensors, grad_tensors, "backward")
    edges = [edge_of(t) for t in tensors]
    if inputs is None:
        _execute(edges, grads, retain_graph, create_graph)
        return
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    captured = grad(tensors, inputs, grads, retain_graph, create_graph, allow_unused=True)
    for t, g in zip(inputs, captured):
        if g is not None:
            if t.is_leaf:
                grad_accumulator(t).accumulate(g, create_graph)
            else:
                g = g if create_graph else g.detach()
                t.grad = g if t.grad is None else t.grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple; `.grad` is untouched."""
    from ..tensor import Tensor
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    single_input = isinstance(inputs, Tensor)
    inputs = (inputs,) if single_input else tuple(inputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    retain_graph = create_graph if retain_graph is None else retain_graph
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {list(t.shape)}) does not require grad")
    grads = _make_root_grads(outputs, grad_outputs, "grad")
    capture = {edge_of(t): None for t in inputs}
    _execute([edge_of(t) for t in outputs], grads, retain_graph, create_graph, capture)
    result = []
    for i, t in enumerate(inputs):
        g = capture[edge_of(t)]
        if g is None:
            if materialize_grads:
                from ..ops.creation import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"grad: one of the differentiated Tensors (input {i}, shape "
                                   f"{list(t.shape)}) appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)

