"""The legacy typed-tensor constructors (`FloatTensor`, `LongTensor`, ... and their CUDA forms)
and `Tensor.type`, named with PyTorch's strings so scripts comparing `x.type()` with
'torch.FloatTensor' keep working.

A legacy type is a class whose instances are plain `Tensor`s: calling it builds a tensor of its
dtype on its device, and `isinstance(x, FloatTensor)` asks whether x is a float32 CPU tensor, as
PyTorch answers it. The CUDA forms touch the driver only when one is called.
"""

import numpy as np

from .. import dtypes
from .. import tensor as tensor_module
from .._warnings import warn_once
from ..device import factory_resolve, set_default_device
from ..tensor import Size, Tensor
from .copies import to_device_and_dtype
from .creation import empty, tensor

_NAMES = {
    dtypes.float32: "FloatTensor", dtypes.float64: "DoubleTensor", dtypes.float16: "HalfTensor",
    dtypes.bfloat16: "BFloat16Tensor", dtypes.int64: "LongTensor", dtypes.int32: "IntTensor",
    dtypes.int16: "ShortTensor", dtypes.int8: "CharTensor", dtypes.uint8: "ByteTensor",
    dtypes.bool_: "BoolTensor",
}
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}


def type_name(dtype, device_type):
    """PyTorch's name of a tensor type: 'torch.FloatTensor', 'torch.cuda.LongTensor', ..."""
    return ("torch.cuda." if device_type == "cuda" else "torch.") + _NAMES[dtype]


def error_type_name(dtype, device_type):
    """A tensor type as PyTorch's error messages name it (`Tensor::toString` through its Python
    translation): the legacy name of a CPU or CUDA tensor of the eight oldest dtypes
    ('torch.cuda.FloatTensor'), the dispatch key's form otherwise ('CPUBoolType')."""
    if dtype not in (dtypes.bool_, dtypes.bfloat16) and device_type in ("cpu", "cuda"):
        return type_name(dtype, device_type)
    backend = "Meta" if device_type == "meta" else device_type.upper()
    return f"{backend}{dtypes.scalar_type_name(dtype)}Type"


class LegacyTensorType(type):
    """Metaclass of the legacy types: construction and isinstance by dtype and device."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.device.type == cls.device_type)

    def __call__(cls, *args, device=None):
        return _legacy_new(cls.__name__, cls.dtype, cls.device_type, args, device)

    def __repr__(cls):
        return f"<class '{type_name(cls.dtype, cls.device_type).replace('torch', 'genesis')}'>"


def _legacy_new(name, dtype, device_type, args, device):
    """A tensor built as legacy constructor `name` builds one: empty, of sizes (numpy integers
    count), from a sequence of data, or (of its dtype and device type) a tensor itself."""
    where = device if device is not None else device_type
    if not args:
        return empty(0, dtype=dtype, device=where)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return _existing(name, dtype, device_type, args[0])
    if isinstance(args[0], Size) or all(isinstance(a, (int, np.integer))
                                         and not isinstance(a, bool) for a in args):
        sizes = tuple(args[0]) if isinstance(args[0], Size) else args
        return empty(*sizes, dtype=dtype, device=where)
    if len(args) > 1:
        raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data, "
                        f"got {', '.join(type(a).__name__ for a in args)}")
    if isinstance(args[0], (bool, float, np.number, np.bool_)):
        raise TypeError(f"new(): data must be a sequence (got {typename(args[0])})")
    return tensor(args[0], dtype=dtype, device=where)


def _existing(name, dtype, device_type, t):
    if t.dtype is not dtype or t.device.type != device_type:
        raise TypeError(f"{name}(): expected a tensor of type {type_name(dtype, device_type)}, "
                        f"got {type_name(t.dtype, t.device.type)}")
    return t


def _default_tensor_new(*args, device=None):
    """`Tensor(...)`: the legacy constructor of the default dtype on the default device (or
    `device`); a tensor passed in comes back as an alias of itself, whatever its type."""
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].view_as(args[0])
    where = factory_resolve(device)
    return _legacy_new("Tensor", dtypes.get_default_dtype(), where.type, args, where)


tensor_module._legacy_new = _default_tensor_new


def _legacy_type(dtype, device_type):
    name = _NAMES[dtype]
    doc = f"Legacy constructor of {dtype.name} tensors on the {device_type.upper()}."
    return LegacyTensorType(name, (), {"dtype": dtype, "device_type": device_type,
                                       "__doc__": doc, "__module__": "genesis"})


CPU_LEGACY_TYPES = {name: _legacy_type(dtype, "cpu") for dtype, name in _NAMES.items()}
CUDA_LEGACY_TYPES = {name: _legacy_type(dtype, "cuda") for dtype, name in _NAMES.items()}


def _parse_type_name(name):
    """(dtype, device type) of 'torch.FloatTensor', 'torch.cuda.LongTensor', 'genesis.*';
    'torch.Tensor' names the default type (the default dtype on the CPU)."""
    for prefix in ("torch.", "genesis."):
        if name.startswith(prefix):
            rest = name[len(prefix):]
            if rest == "Tensor":
                return dtypes.get_default_dtype(), "cpu"
            device_type = "cuda" if rest.startswith("cuda.") else "cpu"
            rest = rest[5:] if device_type == "cuda" else rest
            if rest in _DTYPES:
                return _DTYPES[rest], device_type
    raise ValueError(f"invalid type: '{name}'")


def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, the type's name ('torch.FloatTensor'); with a dtype, a type name or a
    legacy type (`Tensor` the default one), this tensor converted to it (itself when it already
    is)."""
    if dtype is None:
        return type_name(self.dtype, self.device.type)
    if isinstance(dtype, str) and dtype.startswith(("torch.", "genesis.")):
        target, device_type = _parse_type_name(dtype)
    elif isinstance(dtype, LegacyTensorType):
        target, device_type = dtype.dtype, dtype.device_type
    elif dtype is Tensor:
        target, device_type = dtypes.get_default_dtype(), "cpu"
    else:
        target, device_type = dtypes.as_dtype(dtype), self.device.type
    device = None if device_type == self.device.type else device_type
    return to_device_and_dtype(self, device, target, non_blocking=non_blocking)


def new(self, *args):
    """A tensor of this tensor's type and device, built as the legacy constructors build one
    (from sizes, a sequence of data or nothing)."""
    types = CUDA_LEGACY_TYPES if self.device.type == "cuda" else CPU_LEGACY_TYPES
    return types[_NAMES[self.dtype]](*args, device=self.device)


def set_default_tensor_type(t):
    """The default dtype (and with a CUDA type the default device) as a legacy type or its name
    gives them: PyTorch's deprecated form of set_default_dtype and set_default_device, which
    says so once a process."""
    warn_once("set_default_tensor_type", "torch.set_default_tensor_type() is deprecated as of "
              "PyTorch 2.1, please use torch.set_default_dtype() and torch.set_default_device() "
              "as alternatives.")
    if isinstance(t, str):
        dtype, device_type = _parse_type_name(t)
    elif isinstance(t, LegacyTensorType):
        dtype, device_type = t.dtype, t.device_type
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.set_default_dtype(dtype)
    set_default_device("cuda" if device_type == "cuda" else None)


def typename(obj):
    """PyTorch's name for `obj`'s type: a tensor's legacy type ('torch.FloatTensor'), else the
    qualified name of a class or function, or of the class of anything else."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


class LegacyMethods:
    """Tensor methods of this family."""

    type = tensor_type
    new = new


FloatTensor = CPU_LEGACY_TYPES["FloatTensor"]
DoubleTensor = CPU_LEGACY_TYPES["DoubleTensor"]
HalfTensor = CPU_LEGACY_TYPES["HalfTensor"]
BFloat16Tensor = CPU_LEGACY_TYPES["BFloat16Tensor"]
LongTensor = CPU_LEGACY_TYPES["LongTensor"]
IntTensor = CPU_LEGACY_TYPES["IntTensor"]
ShortTensor = CPU_LEGACY_TYPES["ShortTensor"]
CharTensor = CPU_LEGACY_TYPES["CharTensor"]
ByteTensor = CPU_LEGACY_TYPES["ByteTensor"]
BoolTensor = CPU_LEGACY_TYPES["BoolTensor"]

__all__ = list(CPU_LEGACY_TYPES) + ["set_default_tensor_type", "typename"]
