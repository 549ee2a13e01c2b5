"""vmap: `func` mapped over a dimension of its inputs.

Genesis has no batching rules: vmap runs `func` once per batch index, on the inputs with that
index selected, and stacks the results along `out_dims`. This is what PyTorch itself falls back
to for an op without a batching rule: correct for every op, but not fast (one call of `func`
per example; `chunk_size` changes nothing). Results are stacked copies, so in-place changes to
an output do not reach the inputs. Reading a batched value on the host (`.item()`, `bool()`,
`.tolist()`) raises PyTorch's vmap error (genesis.func._batched).
"""

import functools

from ..ops.shape_copies import stack
from ..tensor import Tensor
from . import _random
from ._batched import Level
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _check_out_dims(out_dims, func):
    for leaf in tree_flatten(out_dims)[0]:
        if leaf is not None and not isinstance(leaf, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             "be an int, None or a python collection of ints representing where "
                             "in the outputs the vmapped dimension should appear.")


def _flat_in_dims(in_dims, args, func):
    """(batch size, one in_dim per flat argument (non-negative or None), flat args, spec)."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. The "
                         "latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    flat_dims = [_check_in_dim(arg, dim, where) for arg, dim in zip(flat_args, flat_dims)]
    return _batch_size(flat_dims, flat_args), flat_dims, flat_args, spec


def _check_in_dim(arg, in_dim, where):
    if in_dim is None:
        return None
    if not isinstance(in_dim, int):
        raise ValueError(f"{where}: Got in_dim={in_dim} for an input but in_dim must be either an "
                         "integer dimension or None.")
    if not isinstance(arg, Tensor):
        raise ValueError(f"{where}: Got in_dim={in_dim} for an input but the input is of type "
                         f"{type(arg)}. We cannot vmap over non-Tensor arguments, please use None "
                         "as the respective in_dim")
    if not -arg.dim() <= in_dim < arg.dim():
        raise ValueError(f"{where}: Got in_dim={in_dim} for some input, but that input is a "
                         f"Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                         f"-{arg.dim()} <= in_dim < {arg.dim()}.")
    return in_dim % arg.dim()


def _batch_size(flat_dims, flat_args):
    sizes = [arg.size(dim) for dim, arg in zip(flat_dims, flat_args) if dim is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _flat_out_dims(out_dims, output, spec, func):
    """One out_dim per flat output."""
    if isinstance(output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        flat = None
    else:
        flat = broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is "
                         "not compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    return flat


def _stacked(results, out_dim, func):
    """The per-index results of one output stacked along `out_dim` (None: the first one)."""
    if out_dim is None:
        return results[0]
    if not isinstance(results[0], Tensor):
        raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, "
                         f"got type {type(results[0])}. Did you mean to set out_dims= to None "
                         "for output?")
    return stack(results, out_dim)


class _Calls:
    """Calls of `func` per batch index, with the default generators handled as `randomness`
    says: "error" raises if the first call draws random numbers, "same" replays the state for
    each index, "different" lets it run on."""

    def __init__(self, func, randomness):
        self.func, self.randomness = func, randomness
        self.start = _random.get_state() if randomness == "same" else None

    def __call__(self, index, args, kwargs):
        if self.randomness == "same":
            _random.set_state(self.start)
        if self.randomness == "error" and index == 0:
            return _random.call_checked(self.func, args, kwargs)
        return self.func(*args, **kwargs)


def _select(flat_args, flat_dims, index, spec, level):
    """The arguments of batch index `index`: each mapped one's slice, batched in `level`."""
    return tree_unflatten([a if d is None else level.batched(a.select(d, index))
                           for a, d in zip(flat_args, flat_dims)], spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over dimension `in_dims` of its inputs (a pytree prefix of the positional
    arguments, None for an argument passed whole), its outputs stacked along `out_dims`."""
    _random.check_randomness(randomness)
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, flat_dims, flat_args, spec = _flat_in_dims(in_dims, args, func)
        if size == 0:
            raise ValueError(f"vmap({_name(func)}, ...): genesis runs func once per batch index "
                             "and cannot map over a dimension of size 0")
        call = _Calls(func, randomness)
        with Level() as level:
            outputs = [call(i, _select(flat_args, flat_dims, i, spec, level), kwargs)
                       for i in range(size)]
        flat_outputs = [tree_flatten(out)[0] for out in outputs]
        out_spec = tree_flatten(outputs[0])[1]
        dims = _flat_out_dims(out_dims, outputs[0], out_spec, func)
        return tree_unflatten([_stacked([flat[k] for flat in flat_outputs], dim, func)
                               for k, dim in enumerate(dims)], out_spec)

    return wrapped
