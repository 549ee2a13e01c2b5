"""Calling a module with other tensors in place of its parameters and buffers, as
torch.nn.utils.stateless. The tensors are swapped straight into the modules' `_parameters` and
`_buffers` (no Parameter checks, so any tensor, even one inside a graph, can stand in) and the
originals are put back afterwards, also when forward raises."""

import contextlib

from ..._warnings import deprecated_alias
from ...tensor import Tensor

_MISSING = object()


def _owner(module, name):
    """(the submodule holding dotted `name`, the name within it)."""
    path, _, leaf = name.rpartition(".")
    return module.get_submodule(path), leaf


def _swap(module, name, tensor):
    """Put `tensor` (or _MISSING: remove) at `name`; returns what was there (_MISSING: none)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of genesis.Tensor")
    owner, leaf = _owner(module, name)
    for registry in (owner._parameters, owner._buffers):
        if leaf in registry:
            orig = registry[leaf]
            if tensor is _MISSING:
                del registry[leaf]
            else:
                registry[leaf] = tensor
            return orig
    orig = owner.__dict__.get(leaf, _MISSING)
    if tensor is _MISSING:
        owner.__dict__.pop(leaf, None)
    else:
        object.__setattr__(owner, leaf, tensor)
    return orig


def _named_tensors(module):
    names = dict(module.named_parameters(remove_duplicate=False))
    names.update(module.named_buffers(remove_duplicate=False))
    return names


def _untie(module, tensors):
    """`tensors` with each value also given to the names tied to its key in `module`; an error
    when the caller gave different values for names that are tied."""
    by_tensor = {}
    for name, tensor in _named_tensors(module).items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in by_tensor.values() if len(names) > 1 for name in names}
    given = [name for name in tensors if name in tied]
    untied = dict(tensors)
    for name in given:
        values = {id(tensors[n]) for n in tied[name] if n in tensors}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(tied[name])}, which are tied. Consider using "
                             "tie_weights=False")
        for other in tied[name]:
            untied[other] = tensors[name]
    return untied


def _check_keys(module, tensors):
    valid = set(_named_tensors(module))
    missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))


@contextlib.contextmanager
def _reparametrize_module(module, tensors, tie_weights=False, strict=False):
    """Inside the block, `module` sees `tensors` (dotted names) as its parameters and buffers."""
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        _check_keys(module, tensors)
    originals = {}
    try:
        for name, tensor in tensors.items():
            originals[name] = _swap(module, name, tensor)
        yield
    finally:
        for name, orig in reversed(list(originals.items())):
            _swap(module, name, orig)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


functional_call = deprecated_alias(
    _functional_call, "functional_call",
    "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
    "removed in a future version of PyTorch. Please use `torch.func.functional_call` instead "
    "which is a drop-in replacement.")
