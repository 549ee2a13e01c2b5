"""jacrev, jacfwd and hessian. Both Jacobians are built row by row from vector-Jacobian
products (one backward pass per output element), so jacfwd gives jacrev's values; the result
has the output's structure with each leaf holding the structure of the arguments `argnums`
names, each block of shape output.shape + input.shape."""

import functools

from ..ops.shape_copies import stack
from . import _random
from ._argnums import replace_args, slice_argnums, wrap_argnums
from ._pytree import tree_unflatten
from .pullback import Traced


def _one_hot(out, index):
    basis = out.new_zeros(out.numel())
    basis[index] = 1
    return basis.reshape(out.shape)


def _blocks(traced, position):
    """The Jacobian blocks of output leaf `position` against each input leaf (flat)."""
    out = traced.out_leaves[position]
    none = [None] * len(traced.out_leaves)
    rows = []
    for index in range(out.numel()):
        cotangents = list(none)
        cotangents[position] = _one_hot(out, index)
        rows.append(traced.pull(cotangents))
    blocks = []
    for k, inp in enumerate(traced.inputs):
        shape = tuple(out.shape) + tuple(inp.shape)
        blocks.append(stack([row[k] for row in rows]).reshape(shape) if rows
                      else inp.new_zeros(shape))
    return blocks


def _jacobian(func, args, argnums, has_aux, api):
    """(the Jacobian of func at args with respect to `argnums`, aux or None)."""
    diff = slice_argnums(args, argnums)
    as_tuple = isinstance(wrap_argnums(argnums, len(args)), tuple)

    def of_diff(*new):
        return func(*replace_args(args, new if as_tuple else new[0], argnums))

    traced = Traced(of_diff, diff if as_tuple else (diff,), has_aux, api)
    per_output = []
    for position in range(len(traced.out_leaves)):
        inputs = tree_unflatten(_blocks(traced, position), traced.in_spec)
        per_output.append(inputs if as_tuple else inputs[0])
    return tree_unflatten(per_output, traced.out_spec), traced.aux


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of `func` with respect to the arguments `argnums` names, by reverse mode;
    `chunk_size` is accepted (rows are computed one at a time)."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        jac, aux = _jacobian(func, args, argnums, has_aux, "jacrev(f, ...)(*args)")
        return (jac, aux) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of `func` with respect to the arguments `argnums` names, with jacfwd's
    signature; randomness="error" raises if `func` draws random numbers."""
    _random.check_randomness(randomness)

    def checked(*args):
        return _random.call_checked(func, args, {})

    run = checked if randomness == "error" else func

    @functools.wraps(func)
    def wrapper(*args):
        jac, aux = _jacobian(run, args, argnums, has_aux, "jacfwd(f, ...)(*args)")
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of `func` with respect to the arguments `argnums` names:
    jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)
