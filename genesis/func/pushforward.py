"""jvp: the function's output and its Jacobian applied to tangents, by the double-backward
trick (genesis has no forward-mode AD): the vjp g(u) = J^T u is linear in a dummy cotangent u,
so the gradient of g . t with respect to u is J t."""

from . import _autodiff
from ._pytree import tree_flatten, tree_unflatten
from .pullback import Traced

_API = "jvp(f, primals, tangents)"


def _check_primals(primals, tangents):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_API}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    primal_leaves, primal_spec = tree_flatten(primals)
    tangent_leaves, tangent_spec = tree_flatten(tangents)
    if primal_spec != tangent_spec:
        raise RuntimeError(f"{_API}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {primal_spec} and tangents "
                           f"with structure {tangent_spec}")
    for p, t in zip(primal_leaves, tangent_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{_API}: Expected primals and tangents to have the same shape, "
                               f"got a primal of shape {list(p.shape)} and a tangent of shape "
                               f"{list(t.shape)}")
    return tangent_leaves


def jacobian_vector(traced, tangents):
    """J t for the traced run, one tensor per output leaf (flat)."""
    keep = traced.keep or any(t.requires_grad for t in tangents)
    with _autodiff.running():
        dummies = [o.new_zeros(o.shape).requires_grad_() for o in traced.out_leaves]
        vjps = _autodiff.gradients(traced.out_leaves, traced.inputs, dummies, True)
        pairs = [(g, t) for g, t in zip(vjps, tangents) if g.requires_grad]
        return _autodiff.gradients([g for g, _ in pairs], dummies, [t for _, t in pairs], keep)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents[, aux]), both with the output's structure; `strict` refuses
    an output that does not depend on the inputs."""
    tangent_leaves = _check_primals(primals, tangents)
    traced = Traced(func, primals, has_aux, _API)
    if strict and not all(o.requires_grad for o in traced.out_leaves):
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                           "independent of the inputs. This is not allowed with strict=True.")
    flat = jacobian_vector(traced, tangent_leaves)
    out = tree_unflatten(_autodiff.detach_tree(flat, traced.keep), traced.out_spec)
    if has_aux:
        return traced.output, out, traced.aux
    return traced.output, out
