"""Reading what `torch.save` writes (the zip archive of PyTorch >= 1.6, and the single pickle
stream before it), weights only, whatever `weights_only` says.

Their pickle runs in an unpickler that knows the names a checkpoint of tensors uses (PyTorch's
tensor and parameter rebuild functions, its storage types, dtypes, devices, sizes,
OrderedDict, set) and maps each to a Genesis function of its own; any other name raises
pickle.UnpicklingError, so no code from the file runs. Storages are read into numpy arrays and
tensors are strided views of them, as PyTorch's are views of its storages.
"""

import collections
import pickle
import sys
import zipfile

import numpy as np

from . import dtypes
from ._safetensors import CheckpointError
from .device import device as Device
from .tensor import Size

_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_MAGIC = pickle.dumps(_LEGACY_MAGIC_NUMBER, protocol=2)
_LEGACY_PROTOCOL = 1001
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
}
_CORRUPT = (TypeError, ValueError, KeyError, IndexError, AttributeError, EOFError)


def is_torch_file(f):
    """Whether the seekable binary file `f` starts as torch.save's files do (position kept)."""
    start = f.tell()
    head = f.read(len(_LEGACY_MAGIC))
    f.seek(start)
    return head.startswith(_ZIP_MAGIC) or head == _LEGACY_MAGIC


def load(f, name, relocate):
    """The object in the torch.save file `f` (named `name` in errors); `relocate(tensor,
    saved_location)` places each tensor, as `map_location` says."""
    start = f.tell()
    zipped = f.read(len(_ZIP_MAGIC)) == _ZIP_MAGIC
    f.seek(start)
    try:
        return _load_zip(f, name, relocate) if zipped else _load_legacy(f, name, relocate)
    except _CORRUPT + (zipfile.BadZipFile,) as e:
        raise CheckpointError(f"{name}: corrupt PyTorch checkpoint ({type(e).__name__}: {e})"
                              ) from None


def _load_zip(f, name, relocate):
    with zipfile.ZipFile(f) as archive:
        prefix = _archive_prefix(archive, name)
        little = _record(archive, prefix + "byteorder", b"little") == b"little"
        storages = {}

        def storage(key, dtype, numel):
            if key not in storages:
                path = f"{prefix}data/{key}"
                if archive.getinfo(path).file_size != numel * dtype.itemsize:
                    raise CheckpointError(f"{name}: corrupt PyTorch checkpoint: {path} does not "
                                          f"hold {numel} {dtype.name} values")
                with archive.open(path) as src:
                    storages[key] = _read_storage(src, dtype, numel, little, name)
            return storages[key]

        with archive.open(prefix + "data.pkl") as pkl:
            return _Unpickler(pkl, name, storage, relocate).load()


def _archive_prefix(archive, name):
    """The folder torch.save put its records in (the file's stem when it was written)."""
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise CheckpointError(f"{name}: a zip archive, but not one torch.save wrote (it has no "
                              "<folder>/data.pkl)")
    prefix = pickles[0][:-len("data.pkl")]
    if prefix + "constants.pkl" in archive.namelist():
        raise CheckpointError(f"{name} is a TorchScript archive (torch.jit.save); Genesis does "
                              "not run TorchScript")
    return prefix


def _record(archive, path, default):
    return archive.read(path) if path in archive.namelist() else default


def _load_legacy(f, name, relocate):
    """PyTorch < 1.6's format: pickles of the magic number, the protocol, the system's byte
    order, the object, and its storages' keys, then each storage's element count and bytes. A
    first pass over the object's pickle learns each storage's dtype; the second builds tensors
    once the data is read."""
    plain = _Unpickler(f, name, None, None)
    if plain.load() != _LEGACY_MAGIC_NUMBER or plain.load() != _LEGACY_PROTOCOL:
        raise CheckpointError(f"{name}: invalid magic number or protocol; corrupt file?")
    little = plain.load().get("little_endian", True)
    start = f.tell()
    planned = {}

    def plan(key, dtype, numel):
        return planned.setdefault(key, (dtype, numel, np.empty(numel, dtype.numpy_dtype)))[2]

    _Unpickler(f, name, plan, lambda t, location: t).load()
    storages = {}
    for key in plain.load():
        dtype, numel, _ = planned[key]
        count = int.from_bytes(f.read(8), "little" if little else "big")
        if count != numel:
            raise CheckpointError(f"{name}: corrupt PyTorch checkpoint: storage {key} holds "
                                  f"{count} values, its tensors {numel}")
        storages[key] = _read_storage(f, dtype, numel, little, name)
    f.seek(start)
    return _Unpickler(f, name, lambda key, dtype, numel: storages[key], relocate).load()


def _read_storage(src, dtype, numel, little, name):
    """`numel` values of `dtype` read from `src` into a new array, in this machine's byte
    order."""
    array = np.empty(numel, dtype.numpy_dtype)
    buffer, got = memoryview(array.view(np.uint8)), 0
    while got < len(buffer):
        n = src.readinto(buffer[got:])
        if not n:
            raise CheckpointError(f"{name}: truncated PyTorch checkpoint (a storage ends after "
                                  f"{got} of {len(buffer)} bytes)")
        got += n
    if little != (sys.byteorder == "little"):
        array.byteswap(inplace=True)
    return array


class _StorageType:
    """What the name `torch.FloatStorage` (and its siblings) stands for: a storage's dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Storage:
    def __init__(self, array, location):
        self.array, self.location = array, location


class _Unpickler(pickle._Unpickler):
    """Python's own unpickler with its names limited to those of a checkpoint of tensors and
    its BUILD opcode to a state dict's attributes (`_metadata`); Python's, not C's, because C's
    BUILD cannot be limited."""

    def __init__(self, f, name, storage, relocate):
        super().__init__(f)
        self.name, self.storage, self.relocate = name, storage, relocate
        self.names = _allowed_names(self)

    def find_class(self, module, name):
        found = self.names.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {self.name} holds {module}.{name}, which Genesis "
                "does not rebuild from a PyTorch file: it reads tensors, parameters, dicts, "
                "lists, tuples, sets, numbers, strings, dtypes, devices and sizes, and never "
                "runs code from the file. Saving model.state_dict() instead avoids this.")
        return found

    def persistent_load(self, pid):
        if self.storage is None or not isinstance(pid, tuple) or pid[:1] != ("storage",):
            raise CheckpointError(f"{self.name}: corrupt PyTorch checkpoint: unknown persistent "
                                  f"id {pid!r:.60}")
        storage_type, key, location, numel = pid[1:5]
        if not isinstance(storage_type, _StorageType):
            raise CheckpointError(f"{self.name}: corrupt PyTorch checkpoint: bad storage type")
        array = self.storage(str(key), storage_type.dtype, int(numel))
        view = pid[5] if len(pid) > 5 else None
        if view is not None:  # PyTorch < 0.4's storage views: (key, offset, numel)
            array = array[view[1]:view[1] + view[2]]
        return _Storage(array, location.decode() if isinstance(location, bytes) else location)

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is not collections.OrderedDict or not isinstance(state, dict):
            raise pickle.UnpicklingError(f"{self.name}: Weights only load failed: it sets the "
                                         f"state of a {type(inst).__name__}")
        vars(inst).update((str(k), v) for k, v in state.items())

    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BUILD[0]] = load_build

    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):
        """torch._utils._rebuild_tensor(_v2): a strided view of `storage`."""
        if not isinstance(storage, _Storage) or metadata:
            raise CheckpointError(f"{self.name}: a tensor Genesis cannot rebuild (not over a "
                                  "storage, or with Python attributes of its own)")
        from .ops.creation import from_numpy
        t = self.relocate(from_numpy(_strided(storage.array, offset, size, stride, self.name)),
                          storage.location)
        return t.requires_grad_(True) if requires_grad and t.is_leaf else t

    def rebuild_parameter(self, data, requires_grad, hooks):
        from .nn import Parameter
        return Parameter(data, requires_grad=requires_grad)


def _allowed_names(unpickler):
    """(module, name) -> what it stands for, for each name a PyTorch checkpoint may use."""
    names = {("collections", "OrderedDict"): collections.OrderedDict,
             ("torch._utils", "_rebuild_tensor"): unpickler.rebuild_tensor,
             ("torch._utils", "_rebuild_tensor_v2"): unpickler.rebuild_tensor,
             ("torch._utils", "_rebuild_parameter"): unpickler.rebuild_parameter,
             ("torch", "Size"): _size, ("torch", "device"): Device,
             ("_codecs", "encode"): _latin1_bytes}
    for builtins in ("builtins", "__builtin__"):
        names[builtins, "set"], names[builtins, "frozenset"] = set, frozenset
    for storage, dtype in _STORAGE_DTYPES.items():
        names["torch", storage] = _StorageType(dtypes.as_dtype(dtype))
        names["torch", dtype] = dtypes.as_dtype(dtype)
    return names


def _size(shape=()):
    return Size(tuple(int(n) for n in shape))


def _latin1_bytes(text, encoding):
    """How protocol 2 pickles bytes: `_codecs.encode(text, 'latin1')`; no other codec."""
    if encoding != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError("Weights only load failed: bytes in an encoding other "
                                     "than latin1")
    return text.encode("latin1")


def _strided(array, offset, size, stride, name):
    """The view of the 1-D `array` a tensor of `size`, `stride` and `offset` (in elements)
    sees, checked to lie inside it."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or any(not isinstance(v, int) or v < 0
                                       for v in (offset, *size, *stride)):
        raise CheckpointError(f"{name}: corrupt PyTorch checkpoint: tensor geometry {size}, "
                              f"{stride}, {offset}")
    if 0 in size:
        return np.empty(size, array.dtype)
    if offset + sum((n - 1) * s for n, s in zip(size, stride)) >= len(array):
        raise CheckpointError(f"{name}: corrupt PyTorch checkpoint: a tensor of size {size} "
                              f"reaches past its storage of {len(array)} values")
    return np.lib.stride_tricks.as_strided(array[offset:], size,
                                           [s * array.itemsize for s in stride])
