"""vjp: the function's output and a function that pulls cotangents back to its inputs."""

from ..tensor import Tensor
from . import _autodiff
from ._pytree import tree_flatten, tree_unflatten


def split_aux(output, has_aux, api):
    """(output, aux), checking that a function with aux returned a pair."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return output


def check_outputs(leaves, api):
    """Every output leaf is a floating-point Tensor."""
    for out in leaves:
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(out)}")
        if not out.is_floating_point():
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {out.dtype}")


class Traced:
    """One run of `func` on fresh differentiable inputs, kept to pull cotangents back through."""

    def __init__(self, func, primals, has_aux, api):
        self.in_leaves, self.in_spec = tree_flatten(primals)
        self.keep = _autodiff.keeps_graph(self.in_leaves)
        with _autodiff.running():
            self.inputs = _autodiff.differentiable(self.in_leaves)
            output, aux = split_aux(func(*tree_unflatten(self.inputs, self.in_spec)), has_aux,
                                    api)
        self.out_leaves, self.out_spec = tree_flatten(output)
        check_outputs(self.out_leaves, api)
        self.output = self._returned(self.out_leaves, self.out_spec)
        self.aux = self._returned(*tree_flatten(aux)) if has_aux else None

    def _returned(self, leaves, spec):
        return tree_unflatten(_autodiff.detach_tree(leaves, self.keep), spec)

    def pull(self, cotangents, create_graph=None):
        """The input gradients (flat) for one cotangent per output leaf (None: skip it); they
        stay differentiable where `create_graph` says, or (None) where something above needs
        them to."""
        if create_graph is None:
            create_graph = self.keep or _autodiff._active[0] > 0 or any(
                c is not None and c.requires_grad for c in cotangents)
        return _autodiff.gradients(self.out_leaves, self.inputs, cotangents, create_graph)


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the gradients of the output
    paired with `cotangents` (the output's structure), one per primal, as a tuple. vjp_fn can be
    called any number of times (the graph is always retained, whatever `retain_graph` says)."""
    traced = Traced(func, primals, has_aux, "vjp(f, *primals)")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        leaves, spec = tree_flatten(cotangents)
        if spec != traced.out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function. cotangents: "
                               f"{spec}, primal output: {traced.out_spec}")
        return tree_unflatten(traced.pull(leaves, create_graph), traced.in_spec)

    if has_aux:
        return traced.output, vjp_fn, traced.aux
    return traced.output, vjp_fn
