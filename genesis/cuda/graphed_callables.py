"""`make_graphed_callables`: a module's or function's forward and backward as CUDA graphs.

Each callable is captured twice: its forward on static inputs, and the gradients of its outputs
with respect to its inputs and parameters (`autograd.grad`) on static output gradients. The
graphed callable is a custom autograd Function: forward copies the caller's tensors into the
static inputs and replays the forward graph; backward copies the incoming gradients into the
static output gradients and replays the backward graph. So a graphed module drops into an
ordinary eager training loop, with its parameters' `.grad` accumulated by the usual engine.
"""

from .. import autograd
from ..amp.autocast_mode import is_autocast_cache_enabled, is_autocast_enabled
from ..backends.cuda.runtime import stream as _streams
from ..nn import Module
from ..ops.creation import empty_like
from ..tensor import Tensor
from . import graphs as _graphs


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """Graphed versions of `callables` (a module or function, or a tuple of them), captured on
    `sample_args` (a tuple of tensors per callable); the graphs of several callables share one
    memory pool and must then run in the order given, forward and backward, as in PyTorch.

    The graphed callables accept tensors of the sample arguments' shapes, dtypes and devices,
    and return outputs that the next call overwrites. A graphed module runs its graphs while its
    `training` flag is what it was at capture, and its eager forward otherwise.
    """
    if is_autocast_enabled("cuda") and is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching. Please "
                           "set `cache_enabled=False`.")
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    for fn in callables:
        _check_callable(fn)
    functions = graph_functions(
        [fn.forward if isinstance(fn, Module) else fn for fn in callables], sample_args,
        [trainable_parameters(fn) for fn in callables], num_warmup_iters, allow_unused_input,
        pool)
    graphed = [_as_module_forward(fn, function) if isinstance(fn, Module) else function
               for fn, function in zip(callables, functions)]
    return graphed[0] if just_one else tuple(graphed)


def graph_functions(functions, sample_args, parameters, num_warmup_iters=3,
                    allow_unused_input=False, pool=None):
    """The graphed form of each function (called with its sample arguments' layout), whose
    backward also yields the gradients of its `parameters`: make_graphed_callables without
    replacing any module's forward."""
    flat_args = []
    for args in sample_args:
        flat, _ = tree_flatten(args)
        if not all(isinstance(a, Tensor) for a in flat):
            raise TypeError("make_graphed_callables: sample_args may only contain Tensors")
        flat_args.append(tuple(flat))
    surfaces = [args + tuple(params) for args, params in zip(flat_args, parameters)]
    pool = _graphs.graph_pool_handle() if pool is None else pool

    _warm_up(functions, sample_args, surfaces, num_warmup_iters, allow_unused_input)
    forwards = [_capture_forward(fn, args, pool) for fn, args in zip(functions, sample_args)]
    backwards = [None] * len(functions)
    for i in reversed(range(len(functions))):
        backwards[i] = _capture_backward(forwards[i][1], surfaces[i], pool, allow_unused_input)

    graphed = []
    for params, surface, (fwd_graph, outputs, spec), (bwd_graph, grad_outputs, grad_inputs) in \
            zip(parameters, surfaces, forwards, backwards):
        apply = _graphed_function(fwd_graph, surface, outputs, bwd_graph, grad_outputs,
                                  grad_inputs)
        graphed.append(_call_with(apply, tuple(params), len(surface), spec))
    return graphed


def trainable_parameters(fn):
    """The parameters of a module that need gradients (none for a plain function)."""
    return tuple(p for p in fn.parameters() if p.requires_grad) if isinstance(fn, Module) else ()


def tree_flatten(value):
    """(the tensors of a tensor or nested tuple/list, its structure for tree_unflatten)."""
    if isinstance(value, (tuple, list)):
        leaves, specs = [], []
        for item in value:
            item_leaves, spec = tree_flatten(item)
            leaves += item_leaves
            specs.append((len(item_leaves), spec))
        return leaves, (type(value), specs)
    return [value], None


def tree_unflatten(leaves, spec):
    """The value tree_flatten took apart, with `leaves` in its place."""
    if spec is None:
        return leaves[0]
    kind, specs = spec
    items, start = [], 0
    for count, item_spec in specs:
        items.append(tree_unflatten(leaves[start:start + count], item_spec))
        start += count
    return kind(items)


def _check_callable(fn):
    if isinstance(fn, Module):
        if fn._forward_hooks or fn._forward_pre_hooks:
            raise RuntimeError("make_graphed_callables: modules must not have hooks registered "
                               "at the time they are passed")
        if any(b.requires_grad for b in fn.buffers()):
            raise RuntimeError("make_graphed_callables: a module's buffers may not require grad")


def _differentiable(tensors):
    return tuple(t for t in tensors if t.requires_grad)


def _gradients(outputs, surface, grad_outputs, allow_unused):
    """Gradients of the outputs that require grad w.r.t. the surface tensors that do."""
    outputs = [o for o in outputs if o.requires_grad]
    inputs = _differentiable(surface)
    if not outputs or not inputs:
        return ()
    return autograd.grad(outputs, inputs, grad_outputs=grad_outputs,
                         allow_unused=allow_unused)


def _warm_up(callables, sample_args, surfaces, iters, allow_unused):
    """Run each callable forward and backward on a side stream, so that capture finds every
    kernel compiled and tuned and every lazily made state in place."""
    _streams.synchronize()
    side = _streams.Stream()
    side.wait_stream(_streams.current_stream())
    with _streams.stream_context(side):
        for fn, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(iters):
                outputs = tree_flatten(fn(*args))[0]
                grads = [empty_like(o).fill_(1) for o in outputs if o.requires_grad]
                _gradients(outputs, surface, grads, allow_unused)
    _streams.current_stream().wait_stream(side)


def _capture_forward(fn, args, pool):
    graph = _graphs.CUDAGraph()
    with _graphs.graph(graph, pool=pool):
        outputs = fn(*args)
    flat, spec = tree_flatten(outputs)
    return graph, tuple(flat), spec


def _capture_backward(outputs, surface, pool, allow_unused):
    """The backward graph: static gradients of the outputs in, gradients of the surface out
    (None where a surface tensor needs none)."""
    grad_outputs = tuple(empty_like(o) if o.requires_grad else None for o in outputs)
    graph = _graphs.CUDAGraph()
    with _graphs.graph(graph, pool=pool):
        grads = _gradients(outputs, surface, [g for g in grad_outputs if g is not None],
                           allow_unused)
    grads = iter(grads)
    grad_inputs = tuple(next(grads) if t.requires_grad else None for t in surface)
    return graph, grad_outputs, grad_inputs


def _graphed_function(fwd_graph, surface, outputs, bwd_graph, grad_outputs, grad_inputs):
    """The autograd Function that replays the two graphs."""

    class Graphed(autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, given in zip(surface, inputs):
                if static.data_ptr() != given.data_ptr():
                    static.copy_(given)
            fwd_graph.replay()
            return tuple(o.detach() for o in outputs)

        @staticmethod
        @autograd.once_differentiable
        def backward(ctx, *grads):
            for static, given in zip(grad_outputs, grads):
                if static is None:
                    continue
                if given is None:  # an output that got no gradient
                    static.zero_()
                elif static.data_ptr() != given.data_ptr():
                    static.copy_(given)
            bwd_graph.replay()
            return tuple(g.detach() if g is not None else None for g in grad_inputs)

    return Graphed.apply


def _call_with(apply, params, surface_size, spec):
    """The graphed callable: user arguments (plus the parameters) through `apply`."""
    def graphed(*args):
        flat = tree_flatten(args)[0]
        if len(flat) + len(params) != surface_size:
            raise TypeError(f"graphed callable: expected {surface_size - len(params)} tensor "
                            f"arguments, got {len(flat)}")
        return tree_unflatten(list(apply(*flat, *params)), spec)
    return graphed


def _as_module_forward(module, graphed):
    """`module` with its forward replaced: the graphs while its `training` flag is what it was
    at capture, its eager forward otherwise."""
    training, eager = module.training, module.forward

    def forward(*args):
        return graphed(*args) if module.training == training else eager(*args)

    module.forward = forward
    return module
