"""`genesis.save` / `genesis.load`: checkpoints in the safetensors format, never pickle.

Tensors go into the safetensors data section. Everything around them (dicts, lists, tuples,
numbers, strings, None, dtypes, devices) is stored as JSON in the header's `__metadata__`, so
loading never runs code from the file. Tensors of a flat dict are stored under the dict's keys,
so `safetensors.torch.load_file` reads a genesis checkpoint of a state dict, and genesis loads
any safetensors file (as a flat dict). Writes go to a temporary file in the same directory that
replaces the target only once complete, so a failed save leaves the old checkpoint intact.
"""

import json
import math
import os
import secrets
from collections.abc import Mapping

import numpy as np

from . import _safetensors, dtypes
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
            return {"dict": [[_encode_key(k, path), self.encode(v, path + (str(k),))]
                             for k, v in obj.items()]}
        if isinstance(obj, list):
            return [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]}
        if isinstance(obj, dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Device):
            return {"device": str(obj)}
        raise TypeError(f"genesis.save: cannot store an object of type {type(obj).__name__} at "
                        f"{_where(path)}; checkpoints hold tensors, numpy arrays, dicts, lists, "
                        "tuples, str, int, float, bool, None, dtypes and devices")

    def _tensor(self, t, path):
        node = {"tensor": self._add(path, _HostArray(t), _identity(t)), "device": str(t.device)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node

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


def load(f, map_location=None, weights_only=True):
    """Read what `save` wrote (or any safetensors file, as a flat dict of tensors).

    `map_location` (a device, a string, a dict from saved to new locations, or a callable
    `(tensor, saved_location) -> tensor or None`) moves tensors as PyTorch's does. Loading never
    executes code from the file, so `weights_only` is accepted for compatibility only.
    """
    if hasattr(f, "read"):
        name = getattr(f, "name", repr(f))
        arrays, metadata = _safetensors.read(f, name)
    else:
        name = os.fspath(f)
        with open(name, "rb") as fh:
            arrays, metadata = _safetensors.read(fh, name)
    decoder = _Decoder(arrays, map_location, name)
    if STRUCTURE_KEY not in metadata:
        return {key: decoder.tensor(key, "cpu") for key in arrays}
    try:
        return decoder.decode(json.loads(metadata[STRUCTURE_KEY]))
    except (json.JSONDecodeError, TypeError, ValueError, KeyError, RecursionError) as e:
        raise CheckpointError(f"{name}: corrupt checkpoint: the object structure stored in its "
                              f"header is invalid ({type(e).__name__}: {e})") from None


class _Decoder:
    """Rebuilds the saved object from its JSON tree and the arrays read from the file."""

    def __init__(self, arrays, map_location, name):
        self.arrays, self.map_location, self.name = arrays, map_location, name
        self._tensors = {}

    def decode(self, node):
        if isinstance(node, list):
            return [self.decode(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "tensor" in node:
            t = self.tensor(node["tensor"], node.get("device", "cpu"))
            return t.requires_grad_(True) if node.get("requires_grad") and t.is_leaf else t
        if len(node) != 1:
            self._corrupt(f"unexpected node {sorted(node)}")
        (tag, value), = node.items()
        if tag == "dict":
            return {self.decode(k): self.decode(v) for k, v in value}
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
