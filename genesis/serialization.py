"""`genesis.save` / `genesis.load`: checkpoints in the safetensors format, never pickle.

Tensors go into the safetensors data section. Everything around them (dicts, lists, tuples,
sets, numbers, strings, None, dtypes, devices) is stored as JSON in the header's
`__metadata__`, so loading never runs code from the file.

Whole modules (`save(model, f)`, PyTorch's "save the entire model") and plain objects (a
dataclass config: an instance that pickle would store as its class and its `__dict__`) are stored
as their class's name and their attributes; functions and classes held in attributes (an
activation) by name. As in PyTorch, loading them takes `weights_only=False`, for files one
trusts: `load` then imports the modules that define those names, makes each object with
`object.__new__` (no `__init__` runs) and restores its attributes. Nothing else is looked up or
called. Tensors of a flat dict are stored under the dict's keys, so
`safetensors.torch.load_file` reads a genesis checkpoint of a state dict, and genesis loads any
safetensors file (as a flat dict), and reads the files `torch.save` writes, weights only
(`_torch_format`: tensors, parameters and containers; no code from the file runs). Writes go to
a temporary file in the same directory that replaces the target only once complete, so a failed
save leaves the old checkpoint intact.
"""

import importlib
import json
import math
import os
import pickle
import secrets
import sys
import types
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from . import _safetensors, _torch_format, dtypes
from .device import as_device
from .device import device as Device
from .tensor import Tensor
from ._safetensors import CheckpointError

STRUCTURE_KEY = "genesis.structure"
_SCALARS = (type(None), bool, int, str)

__all__ = ["save", "load", "CheckpointError"]


class _HostArray:
    """A tensor's data as the safetensors writer sees it: copied to the host only when written."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.dtype = tensor.dtype.numpy_dtype
        self.shape = tuple(tensor.shape)
        self.nbytes = tensor.numel() * tensor.dtype.itemsize

    def __array__(self, dtype=None, copy=None):
        return self.tensor.detach()._host()


class _Encoder:
    """Turns an object into a JSON tree, collecting its tensors (each stored once) by name."""

    def __init__(self):
        self.arrays = {}
        self._names = {}
        self._objects = {}  # id of a whole object -> its memo number

    def encode(self, obj, path):
        if isinstance(obj, _SCALARS):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, np.ndarray):
            return {"ndarray": self._add(path, np.ascontiguousarray(obj), None)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, Mapping):
            tag = "ordered_dict" if isinstance(obj, OrderedDict) else "dict"
            return {tag: [[_encode_key(k, path), self.encode(v, path + (str(k),))]
                          for k, v in obj.items()]}
        if isinstance(obj, list):
            return [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]}
        if isinstance(obj, dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Device):
            return {"device": str(obj)}
        if isinstance(obj, (set, frozenset)):
            return {"set": [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]}
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            return {"global": _global_name(obj, path)}
        if _is_module(obj) or _is_plain_class(type(obj)):
            return self._object(obj, path)
        raise TypeError(f"genesis.save: cannot store an object of type {type(obj).__name__} at "
                        f"{_where(path)}; checkpoints hold tensors, numpy arrays, dicts, lists, "
                        "tuples, sets, str, int, float, bool, None, dtypes, devices, modules, "
                        "plain objects (a dataclass) and functions or classes reachable by their "
                        "names")

    def _tensor(self, t, path):
        node = {"tensor": self._add(path, _HostArray(t), _identity(t)), "device": str(t.device)}
        if t.requires_grad:
            node["requires_grad"] = True
        if _is_parameter(t):
            node["parameter"] = True
        return node

    def _object(self, obj, path):
        """A module or plain object as its class's name and its attributes; one met again
        (shared, or its own ancestor) as a reference to the first."""
        memo = self._objects.get(id(obj))
        if memo is not None:
            return {"object_ref": memo}
        memo = self._objects[id(obj)] = len(self._objects)
        return {"object": {"class": _global_name(type(obj), path), "memo": memo,
                           "state": self.encode(vars(obj), path)}}

    def _add(self, path, array, identity):
        """The name `array` is stored under: a tensor seen before keeps its first name."""
        if identity is not None and identity in self._names:
            return self._names[identity]
        base = ".".join(path) or "tensor"
        name, n = base, 1
        while name in self.arrays:
            name, n = f"{base}#{n}", n + 1
        self.arrays[name] = array
        if identity is not None:
            self._names[identity] = name
        return name


def _is_module(obj):
    from .nn import Module
    return isinstance(obj, Module)


def _is_plain_class(cls):
    """Whether pickle would store an instance of `cls` as its class and its `__dict__` (a
    dataclass config, say): a Python class of its own with no custom pickling, made by
    `object.__new__`."""
    return (cls.__module__ != "builtins" and "__dict__" in dir(cls)
            and cls.__new__ is object.__new__ and cls.__reduce_ex__ is object.__reduce_ex__
            and cls.__reduce__ is object.__reduce__ and cls.__getstate__ is object.__getstate__
            and not hasattr(cls, "__setstate__"))


def _is_parameter(t):
    from .nn import Parameter
    return isinstance(t, Parameter)


def _global_name(obj, path):
    """[module, qualified name] under which `obj` (a function or class) is found again."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    found = _lookup(module, name) if module and "<" not in name else None
    if found is not obj:
        raise TypeError(f"genesis.save: cannot store {obj!r} at {_where(path)}: it is not "
                        f"reachable by its name {module}.{name} (a lambda, a local or nested "
                        "function, or a bound method); store the module's state_dict() instead")
    return [module, name]


def _lookup(module, name):
    target = sys.modules.get(module)
    for part in name.split("."):
        target = getattr(target, part, None)
    return target


def _identity(t):
    """What makes two tensors the same data: device, address, geometry and dtype (None if empty)."""
    if t.numel() == 0:
        return None
    return (str(t.device), t.data_ptr(), tuple(t.shape), t.stride(), t.dtype.name)


def _encode_key(key, path):
    if isinstance(key, tuple):
        return {"tuple": [_encode_key(k, path) for k in key]}
    if isinstance(key, _SCALARS + (float,)):
        return key if not isinstance(key, float) or math.isfinite(key) else {"float": repr(key)}
    raise TypeError(f"genesis.save: dict keys must be str, int, float, bool, None or tuples of "
                    f"them; got {type(key).__name__} at {_where(path)}")


def _where(path):
    return "'" + ".".join(path) + "'" if path else "the top level"


def save(obj, f):
    """Write `obj` (a tensor, or a nested dict/list/tuple of tensors and plain values) to `f`.

    `f` is a path (written atomically: temporary file, fsync, rename) or a writable binary file.
    """
    encoder = _Encoder()
    tree = encoder.encode(obj, ())
    metadata = {"format": "pt", STRUCTURE_KEY: json.dumps(tree, separators=(",", ":"))}
    if hasattr(f, "write"):
        _safetensors.write(f, encoder.arrays, metadata)
        return
    _atomic_write(os.fspath(f), lambda out: _safetensors.write(out, encoder.arrays, metadata))


def _atomic_write(path, write):
    """Run `write(file)` on a temporary file next to `path`, then rename it over `path`."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise _save_error(error, path, directory) from error
        raise
    _fsync_directory(directory)


def _save_error(error, path, directory):
    """`error` restated with the path the caller gave (not the temporary file) and what became of
    the file already there."""
    reason = error.strerror or str(error)
    if not os.path.isdir(directory):
        reason += f" (the folder {directory!r} does not exist)"
    kept = (f"the existing {path!r} is unchanged" if os.path.exists(path)
            else f"nothing was written to {path!r}")
    return type(error)(error.errno, f"save(): could not write {path!r}: {reason}; {kept}")


def _fsync_directory(directory):
    """Make the rename durable where the platform allows opening a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load(f, map_location=None, weights_only=True, *, mmap=None):
    """Read what `save` wrote (or any safetensors file, as a flat dict of tensors).

    `map_location` (a device, a string, a dict from saved to new locations, or a callable
    `(tensor, saved_location) -> tensor or None`) moves tensors as PyTorch's does. A whole
    module saved with `save(model, f)` loads only with `weights_only=False` (see the module
    docstring); otherwise it raises pickle.UnpicklingError, as PyTorch's weights-only load does.
    A file torch.save wrote loads weights only, whatever `weights_only` says (`_torch_format`).
    `mmap=True` (for a path only) maps the tensors of a genesis or safetensors file from the
    file instead of reading them into memory; a file torch.save wrote is read.
    """
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("f must be a file path in order to use the mmap argument")
        return _load(f, getattr(f, "name", repr(f)), map_location, weights_only)
    with open(os.fspath(f), "rb") as fh:
        return _load(fh, os.fspath(f), map_location, weights_only, bool(mmap))


def _load(f, name, map_location, weights_only, mmap=False):
    if _torch_format.is_torch_file(f):
        return _torch_format.load(f, name, lambda t, where: _relocate(t, where, map_location))
    arrays, metadata = _safetensors.read(f, name, mmap)
    decoder = _Decoder(arrays, map_location, name, weights_only)
    if STRUCTURE_KEY not in metadata:
        return {key: decoder.tensor(key, "cpu") for key in arrays}
    try:
        return decoder.decode(json.loads(metadata[STRUCTURE_KEY]))
    except (json.JSONDecodeError, TypeError, ValueError, KeyError, IndexError,
            RecursionError) as e:
        raise CheckpointError(f"{name}: corrupt checkpoint: the object structure stored in its "
                              f"header is invalid ({type(e).__name__}: {e})") from None


class _Decoder:
    """Rebuilds the saved object from its JSON tree and the arrays read from the file."""

    def __init__(self, arrays, map_location, name, weights_only=True):
        self.arrays, self.map_location, self.name = arrays, map_location, name
        self.weights_only = weights_only
        self._tensors = {}
        self._parameters = {}
        self._objects = []

    def decode(self, node):
        if isinstance(node, list):
            return [self.decode(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "tensor" in node:
            if node.get("parameter"):
                return self.parameter(node)
            t = self.tensor(node["tensor"], node.get("device", "cpu"))
            return t.requires_grad_(True) if node.get("requires_grad") and t.is_leaf else t
        if len(node) != 1:
            self._corrupt(f"unexpected node {sorted(node)}")
        (tag, value), = node.items()
        if tag == "dict":
            return {self.decode(k): self.decode(v) for k, v in value}
        if tag == "ordered_dict":
            return OrderedDict((self.decode(k), self.decode(v)) for k, v in value)
        if tag == "set":
            return {self.decode(v) for v in value}
        if tag in ("object", "object_ref", "global"):
            return self._trusted(tag, value)
        if tag == "tuple":
            return tuple(self.decode(v) for v in value)
        if tag == "float":
            return float(value)
        if tag == "ndarray":
            return self._array(value)
        if tag == "dtype":
            return dtypes.as_dtype(value)
        if tag == "device":
            return as_device(value)
        self._corrupt(f"unknown node type {tag!r}")

    def parameter(self, node):
        """The nn.Parameter stored at this node (one object per tensor key)."""
        key = node["tensor"]
        if key not in self._parameters:
            from .nn import Parameter
            data = self.tensor(key, node.get("device", "cpu"))
            self._parameters[key] = Parameter(data, requires_grad=bool(node.get("requires_grad")))
        return self._parameters[key]

    def _trusted(self, tag, value):
        """A whole module or plain object, a reference to one decoded before, or a function or
        class by name: only with weights_only=False."""
        if self.weights_only:
            what = value["class"] if tag == "object" else value
            described = ".".join(what) if isinstance(what, list) else "an object"
            raise pickle.UnpicklingError(
                f"Weights only load failed: {self.name} holds {described}, saved whole. Load it "
                "with genesis.load(..., weights_only=False) only if you trust its source: that "
                "imports the modules it names. Saving model.state_dict() instead avoids this.")
        if tag == "object_ref":
            return self._objects[value]
        if tag == "global":
            return self._global(value)
        cls = self._global(value["class"])
        if not (isinstance(cls, type) and (_is_module_class(cls) or _is_plain_class(cls))):
            self._corrupt(f"{cls!r} is not a genesis.nn.Module class or a plain class")
        if value["memo"] != len(self._objects):
            self._corrupt("objects out of order")
        obj = object.__new__(cls)
        self._objects.append(obj)
        vars(obj).update(self.decode(value["state"]))
        return obj

    def _global(self, name):
        module, qualname = name
        importlib.import_module(module)
        found = _lookup(module, qualname)
        if found is None:
            self._corrupt(f"{module}.{qualname} does not exist in this program")
        return found

    def _corrupt(self, message):
        raise CheckpointError(f"{self.name}: corrupt checkpoint: {message}")

    def _array(self, key):
        if not isinstance(key, str) or key not in self.arrays:
            self._corrupt(f"the structure refers to a tensor {key!r} that the file does not hold")
        return self.arrays[key]

    def tensor(self, key, location):
        """The tensor stored as `key` (one object per key) on its mapped device."""
        if key not in self._tensors:
            from .ops.creation import from_numpy
            t = _relocate(from_numpy(self._array(key)), location, self.map_location)
            self._tensors[key] = t
        return self._tensors[key]


def _is_module_class(cls):
    from .nn import Module
    return issubclass(cls, Module)


def _relocate(t, location, map_location):
    """Move the CPU tensor `t`, saved from `location`, where `map_location` says."""
    if callable(map_location) and not isinstance(map_location, (str, Device)):
        moved = map_location(t, location)
        if moved is not None:
            return moved
        target = location
    elif isinstance(map_location, Mapping):
        target = map_location.get(location, location)
    else:
        target = location if map_location is None else map_location
    target = as_device(target)
    if target.type == "cuda":
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "genesis.cuda.is_available() is False. If you are running on a "
                               "CPU-only machine, please use genesis.load with "
                               "map_location='cpu' to map your tensors to the CPU.")
    return t.to(target)
