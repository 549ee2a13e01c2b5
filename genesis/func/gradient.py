"""grad and grad_and_value: the gradient of a scalar function with respect to the arguments
`argnums` names (each may be a pytree of tensors)."""

import functools

from ..tensor import Tensor
from . import _autodiff
from ._argnums import replace_args, slice_argnums
from ._pytree import tree_flatten, tree_unflatten
from .pullback import split_aux

_API = "grad_and_value(f)(*args)"


def _check_scalar(output):
    if not isinstance(output, Tensor):
        raise RuntimeError(f"{_API}: Expected f(*args) to return a Tensor, got {type(output)}")
    if output.dim() != 0:
        raise RuntimeError(f"{_API}: Expected f(*args) to return a scalar Tensor, got tensor "
                           f"with {output.dim()} dims. Maybe you wanted to use the vjp or "
                           "jacrev APIs instead?")


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient, value) of `func`, or (gradient, (value, aux)) with
    `has_aux`; the gradient has the structure of the arguments `argnums` names."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, spec = tree_flatten(slice_argnums(args, argnums))
        keep = _autodiff.keeps_graph(leaves)
        with _autodiff.running():
            inputs = _autodiff.differentiable(leaves)
            new_args = replace_args(args, tree_unflatten(inputs, spec), argnums)
            output, aux = split_aux(func(*new_args, **kwargs), has_aux, _API)
            _check_scalar(output)
            grads = _autodiff.gradients([output], inputs, [output.new_ones(())], keep)
        grads = tree_unflatten(grads, spec)
        value = _autodiff.detach_tree([output], keep)[0]
        if not has_aux:
            return grads, value
        aux_leaves, aux_spec = tree_flatten(aux)
        return grads, (value, tree_unflatten(_autodiff.detach_tree(aux_leaves, keep), aux_spec))

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar `func` with respect to the arguments
    `argnums` names, and (with `has_aux`) the auxiliary output beside it."""
    with_value = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = with_value(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper
