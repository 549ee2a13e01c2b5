"""What the differentiating transforms share: a count of the ones running (a transform nested
in another keeps its graph so the outer one can differentiate its result), fresh differentiable
aliases of the inputs, and gradients that come back as zeros where an input is unused."""

import contextlib

from .. import autograd
from ..tensor import Tensor

_active = [0]  # differentiating transforms (grad, vjp, jvp, jacrev, jacfwd) now running func


@contextlib.contextmanager
def running():
    """Counts as a differentiating transform while `func` runs; enables grad."""
    _active[0] += 1
    try:
        with autograd.enable_grad():
            yield
    finally:
        _active[0] -= 1


def keeps_graph(tensors):
    """Whether results must stay differentiable: inside another differentiating transform, or
    when a tensor given to this one is part of a graph being recorded."""
    return _active[0] > 0 or (autograd.is_grad_enabled()
                              and any(isinstance(t, Tensor) and t.requires_grad for t in tensors))


def differentiable(tensors):
    """Fresh tensors to differentiate against: a differentiable alias where the input is part of
    an outer graph (so the outer transform reaches it), else a detached copy requiring grad."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
    with autograd.enable_grad():
        return [t.view_as(t) if t.requires_grad else t.detach().requires_grad_() for t in tensors]


def gradients(outputs, inputs, cotangents, create_graph):
    """d(sum of outputs . cotangents)/d inputs, zeros for an input no output depends on; an
    output whose cotangent is None or that needs no grad is skipped."""
    kept = [(o, c) for o, c in zip(outputs, cotangents) if c is not None and o.requires_grad]
    grads = [None] * len(inputs)
    if kept:
        with autograd.enable_grad():
            grads = autograd.grad([o for o, _ in kept], inputs, [c for _, c in kept],
                                  retain_graph=True, create_graph=create_graph,
                                  allow_unused=True)
    return [t.new_zeros(t.shape) if g is None else g for g, t in zip(grads, inputs)]


def detach_tree(leaves, keep):
    """The tensor leaves as they are when the graph is kept, else detached."""
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return list(leaves) if keep else [leaf.detach() for leaf in leaves]
