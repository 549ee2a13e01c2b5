"""Ops composed of several genesis ops that PyTorch records as a single graph node."""

from ..tensor import filled
from . import forward_ad
from .function import Function, name_node
from .grad_mode import enable_grad, is_grad_enabled


class _OneNode(Function):
    """`fn(*tensors)` as one node whose edges are the tensors: backward recomputes `fn` and
    differentiates it, from aliases of the inputs themselves when the backward is being recorded
    and they require grad, so gradients of every order are those of `fn` (each alias a new node,
    so that its gradient is the partial derivative, none of it reached through another input's
    history, as when a loss's target is computed from its input; a gradient wanted of an input
    that requires none, as forward-mode AD asks, comes from a detached copy). An input `fn`
    reads only through masks gets zeros, as PyTorch's one-kernel ops give it."""

    @staticmethod
    def forward(ctx, *tensors, fn):
        ctx.fn = fn
        ctx.save_for_backward(*tensors)
        return fn(*tensors)

    @staticmethod
    def backward(ctx, grad):
        from .engine import grad as differentiate
        needs, recorded = ctx.needs_input_grad, is_grad_enabled()
        inputs = [t.view_as(t) if recorded and t.requires_grad
                  else t.detach().requires_grad_(need) for t, need in zip(ctx.saved_tensors, needs)]
        wanted = [t for t, need in zip(inputs, needs) if need]
        with enable_grad():
            out = ctx.fn(*inputs)
            found = (differentiate(out, wanted, grad, create_graph=recorded, allow_unused=True)
                     if out.requires_grad else [None] * len(wanted))
        found = iter(found)
        return tuple(_or_zeros(next(found), t) if need else None
                     for t, need in zip(inputs, needs))


def _or_zeros(grad, input):
    """`grad`, or zeros shaped as `input` where `fn` did not use it differentiably."""
    return filled(tuple(input.shape), 0, input.dtype, input.device) if grad is None else grad


def one_node(fn, name, *tensors):
    """`fn(*tensors)` recorded as the single node `name` (e.g. "MseLossBackward0") with an edge
    to each tensor, as PyTorch records the ops it runs as one kernel, so walking the graph
    through `next_functions` meets the producers of `tensors` next."""
    return name_node(_OneNode.apply(*tensors, fn=fn), name)


class _NotImplemented(Function):
    """`fn(*tensors)` as PyTorch records its op `op` that has no derivative: a node named
    NotImplemented whose backward raises PyTorch's error, NotImplementedError where forward-mode
    AD pushes tangents through it."""

    @staticmethod
    def forward(ctx, *tensors, fn, op):
        ctx.op, ctx.node_name = op, "NotImplemented"
        return fn(*tensors)

    @staticmethod
    def backward(ctx, grad):
        if forward_ad.is_pushing_tangents():
            raise NotImplementedError(f"Trying to use forward AD with aten::{ctx.op} that does "
                                      "not support it.")
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


def not_implemented(fn, op, *tensors):
    """`fn(*tensors)`, the values of PyTorch's op `op` (e.g. "hardsigmoid_backward"), recorded
    as PyTorch records an op without a derivative formula: differentiating it raises."""
    return _NotImplemented.apply(*tensors, fn=fn, op=op)
