"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

import operator
from collections import OrderedDict
from itertools import chain, islice

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent


def _index(idx, length):
    """`idx` as a non-negative position in a container of `length` (IndexError when outside)."""
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return idx % length


def _renumber(modules, values):
    """Refill the ordered dict `modules` with `values` keyed "0", "1", ..."""
    modules.clear()
    modules.update((str(i), m) for i, m in enumerate(values))


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: positional access, insertion and removal.

    Keys are renumbered "0", "1", ... after an insertion or a removal, as in torch.
    """

    def _item(self, idx):
        return next(islice(self._modules.values(), _index(idx, len(self)), None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        targets = keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]
        for key in targets:
            del self._modules[key]
        _renumber(self._modules, list(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if isinstance(modules, (Module, Tensor)) or not hasattr(modules, "__iter__"):
            raise TypeError(f"{self._get_name()}.extend should be called with an iterable, but "
                            f"got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")  # noqa: TRY004
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        items = list(self._modules.values())
        items.insert(index + n if index < 0 else index, module)
        _renumber(self._modules, items)
        return self

    def pop(self, key):
        module = self[key]
        del self[key]
        return module


class Sequential(_ModuleSequence):
    """Modules called in order, each on the previous one's output.

    Built from modules (`Sequential(a, b)`) or an OrderedDict of named modules.
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._item(idx)

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(  # noqa: TRY004
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                "given.")
        return Sequential(*self, *other)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_ModuleSequence):
    """A list of modules, registered so their parameters belong to the owner."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._item(idx)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(chain(self, other))

    def __repr__(self):
        """Runs of identical children are shown once, as "(0-2): 3 x Linear(...)" (as torch)."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            label = f"({start})" if i - 1 == start else f"({start}-{i - 1}): {i - start} x"
            sep = ": " if i - 1 == start else " "
            lines.append(label + sep + _addindent(reprs[start], 2))
            start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules keyed by name, registered so their parameters belong to the owner."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for j, item in enumerate(items):
            if len(item) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(item)}; 2 is required")
            self[item[0]] = item[1]


def _as_parameter(value):
    """Plain tensors put in a parameter container become Parameters, as in torch."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _parameter_line(key, value):
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.shape)
    device = "" if value.device.type == "cpu" else f" ({value.device})"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [genesis.{value.dtype.name} of size {size}{device}]"


class ParameterList(Module):
    """A list of parameters (tensors given to it become Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self))))

    def __setitem__(self, idx, param):
        setattr(self, str(_index(idx, len(self))), _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_parameter_line(i, p) for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters keyed by name (tensors given to it become Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self):
        return "\n".join(_parameter_line(k, v) for k, v in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
