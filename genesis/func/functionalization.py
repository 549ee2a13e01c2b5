"""functionalize and debug_unwrap: the torch.func names that deal with functorch's wrapper
tensors. Genesis's transforms run `func` on plain tensors and genesis has no tracer to hand a
mutation-free program to, so neither has a program to rewrite or a wrapper to remove; each gives
the eager results PyTorch's does."""

import functools

from ..tensor import Tensor
from ._pytree import tree_flatten, tree_unflatten

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func, *, remove="mutations"):
    """`func` with PyTorch's functionalize semantics in eager mode: the same values and the
    mutations `func` makes to its inputs applied to them, but no output shares memory with an
    input `func` wrote; with remove="mutations_and_views", no output is a view at all (an input
    returned as it is stays itself). Outputs that would are copies."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the "
            "program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators "
            "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        versions = {id(t._version_counter): (t._version_counter, t._version) for t in inputs}
        leaves, spec = tree_flatten(func(*args, **kwargs))
        written = {key for key, (counter, version) in versions.items()
                   if counter.value != version}
        keep_views = remove == "mutations"
        return tree_unflatten([_unaliased(leaf, inputs, written, keep_views)
                               for leaf in leaves], spec)

    return functionalized


def _unaliased(out, inputs, written, keep_views):
    """`out`, or a copy of it where it shares memory with an input that func wrote (tensors
    over one memory share a version counter) or, unless `keep_views`, where it is a view other
    than an input itself."""
    if not isinstance(out, Tensor):
        return out
    if id(out._version_counter) in written or not keep_views and out._base is not None and \
            not any(out is t for t in inputs):
        return out.clone()
    return out


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under functorch's wrappers (BatchedTensor, GradTrackingTensor): genesis's
    transforms wrap nothing, so `tensor` itself."""
    return tensor
