"""jvp and linearize: the function's output and its Jacobian applied to tangents, by the
double-backward trick (genesis has no forward-mode AD): the vjp g(u) = J^T u is linear in a
dummy cotangent u, so the gradient of g . t with respect to u is J t. linearize builds g once
and applies it to each call's tangents."""

from ..autograd.forward_ad import pushing_tangents
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


def vjp_graph(traced):
    """(dummies, vjps): a dummy cotangent per output leaf and, per input, the graph of its
    vjp g(u), ready to be differentiated with respect to the dummies."""
    with _autodiff.running(), pushing_tangents():
        dummies = [o.new_zeros(o.shape).requires_grad_() for o in traced.out_leaves]
        return dummies, _autodiff.gradients(traced.out_leaves, traced.inputs, dummies, True)


def pushed(traced, graph, tangents):
    """J t for the traced run and its vjp `graph`, one tensor per output leaf (flat)."""
    dummies, vjps = graph
    keep = traced.keep or any(t.requires_grad for t in tangents)
    with _autodiff.running(), pushing_tangents():
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
    flat = pushed(traced, vjp_graph(traced), tangent_leaves)
    out = tree_unflatten(_autodiff.detach_tree(flat, traced.keep), traced.out_spec)
    if has_aux:
        return traced.output, out, traced.aux
    return traced.output, out


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents), tangents shaped as the primals, gives J
    tangents at `primals` with the output's structure. func runs once; its vjp's graph is built
    once and kept (memory, as PyTorch's linearize keeps its traced graph), and each jvp_fn call
    differentiates it."""
    traced = Traced(func, primals, False, "linearize(func, *primals)")
    graph = vjp_graph(traced)

    def jvp_fn(*tangents):
        leaves, spec = tree_flatten(tangents)
        if spec != traced.in_spec:
            raise RuntimeError(f"Expected the tangents {spec} to have the same argspec as the "
                               f"primals {traced.in_spec}")
        _check_like_primals(leaves, traced.in_leaves)
        flat = pushed(traced, graph, leaves)
        return tree_unflatten(_autodiff.detach_tree(flat, traced.keep), traced.out_spec)

    return traced.output, jvp_fn


def _check_like_primals(tangents, primals):
    """PyTorch's linearize errors for a tangent whose shape, device or dtype is not its
    primal's."""
    for i, (t, p) in enumerate(zip(tangents, primals)):
        for what, mine, theirs in (("shape", t.shape, p.shape), ("device", t.device, p.device),
                                   ("dtype", t.dtype, p.dtype)):
            if mine != theirs:
                raise RuntimeError(f"tangent:{i} with {what} {mine} in flattened pytree doesn't "
                                   f"match the {what} {theirs} of the corresponding primal.")
