"""Which values vmap's function may not read on the host: those of its batched inputs.

PyTorch runs a vmapped function once, on BatchedTensors, whose values `.item()`, `bool()` and
`.tolist()` cannot read. Genesis runs it once per batch index on plain slices, so it tracks the
backend arrays holding batched values instead: each running vmap (a `Level`) marks the arrays of
its inputs' slices, and a dispatch observer marks every kernel result computed from a marked
array. The user's code reading a tensor whose array is marked raises PyTorch's vmap error;
genesis's own ops read their operands as before. A tensor captured from outside, and whatever
is computed from such tensors alone, stays readable, as in PyTorch.
"""

import weakref

from .. import dispatch
from ..tensor import set_host_read_check

_ERRORS = {
    "item": "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
            "calling .item() on a Tensor, please try to rewrite what you're doing with other "
            "operations. If error is occurring somewhere inside PyTorch internals, please file "
            "a bug report.",
    "control flow": "vmap: It looks like you're attempting to use a Tensor in some "
                    "data-dependent control flow. We don't support that yet, please file an "
                    "issue at https://github.com/pytorch/pytorch/issues .",
    "data": "Cannot access data pointer of Tensor that doesn't have storage",
}

_levels = []  # the running vmaps, innermost last


class Level:
    """One running vmap: the arrays holding its batched values, held weakly by identity."""

    def __init__(self):
        self._arrays = weakref.WeakValueDictionary()

    def holds(self, array):
        return self._arrays.get(id(array)) is array

    def mark(self, array):
        """Count `array` as batched; arrays that cannot be held weakly are left out."""
        try:
            self._arrays[id(array)] = array
        except TypeError:
            pass

    def batched(self, t):
        """The input slice `t`, its values marked batched. Its storage becomes an alias of its
        own, marked too, so that views of it (made from the storage) are batched as well."""
        storage = t._storage
        alias = dispatch.kernel("as_strided", t.device.type)(storage, storage.shape, (1,), 0)
        t._storage = alias
        self.mark(alias)
        self.mark(t._data)
        return t

    def __enter__(self):
        """The outermost level installs the observer and the host read check."""
        if not _levels:
            self.outer_observer = dispatch.set_observer(_observe)
            self.outer_check = set_host_read_check(_check)
        _levels.append(self)
        return self

    def __exit__(self, *exc):
        _levels.pop()
        if not _levels:
            dispatch.set_observer(self.outer_observer)
            set_host_read_check(self.outer_check)
        return False


def _arrays_in(value):
    """The backend arrays among a kernel's arguments or results, in lists and tuples too."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays_in(item)
    elif hasattr(value, "shape"):
        yield value


def _observe(op_name, device_type, kernel):
    """`kernel` (as the observer vmap found set sees it), marking its results batched in each
    level where one of its arguments is."""
    outer = _levels[0].outer_observer
    if outer is not None:
        kernel = outer(op_name, device_type, kernel)

    def run(*args, **kwargs):
        out = kernel(*args, **kwargs)
        inputs = list(_arrays_in((args, tuple(kwargs.values()))))
        for level in _levels:
            if any(level.holds(a) for a in inputs):
                for array in _arrays_in(out):
                    level.mark(array)
        return out

    return run


def _check(t, read, reader):
    """Raise PyTorch's vmap error for a host read (`read`) of a batched tensor's values by the
    module `reader`. Genesis's own reads (a tensor index, a bounds check), which PyTorch's
    kernels make without reading a value on the host, pass: each slice's values are its own."""
    if reader == "genesis" or reader.startswith("genesis."):
        return
    data = t._data
    if any(level.holds(data) for level in _levels):
        raise RuntimeError(_ERRORS[read])
