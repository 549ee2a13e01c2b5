"""DLPack: zero-copy exchange of tensors with numpy, PyTorch and any other DLPack library.

`Tensor.__dlpack__` and `genesis.from_dlpack` are device-agnostic: they ask the tensor's backend
for the kernels "to_dlpack" (backend array -> capsule) and "from_dlpack" (producer -> backend
array), chosen by the DLPack device type. The capsule helpers here read and retag the DLTensor
inside a capsule, which lets a backend export types its array library cannot name (numpy has no
bfloat16: the CPU backend exports the bits as uint16 and retags them as bfloat16).
"""

import ctypes

from .device import device as Device
from .dispatch import kernel

# DLDeviceType codes (dlpack.h) and DLDataTypeCode codes.
_DEVICE_CODES = {"cpu": 1, "cuda": 2}
_DEVICE_TYPES = {code: name for name, code in _DEVICE_CODES.items()}
DL_UINT = 1
DL_BFLOAT = 4


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


# DLManagedTensorVersioned puts version (2 x uint32), manager_ctx, deleter, flags before its
# DLTensor; the legacy DLManagedTensor starts with it.
_DLTENSOR_OFFSETS = {b"dltensor": 0, b"dltensor_versioned": 32}

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def capsule_tensor(capsule):
    """The DLTensor struct inside an unconsumed DLPack capsule (writable, in place)."""
    name = _get_name(capsule)
    if name not in _DLTENSOR_OFFSETS:
        raise BufferError(f"from_dlpack: expected an unconsumed DLPack capsule, got one named "
                          f"{name!r} (a capsule can be consumed only once)")
    return _DLTensor.from_address(_get_pointer(capsule, name) + _DLTENSOR_OFFSETS[name])


def retag_capsule(capsule, code, bits=16):
    """Relabel the element type of `capsule`'s tensor as (code, bits); returns the capsule."""
    dtype = capsule_tensor(capsule).dtype
    dtype.code, dtype.bits = code, bits
    return capsule


class CapsuleHolder:
    """Presents a bare capsule through the `__dlpack__` protocol (for consumers that need it)."""

    def __init__(self, capsule):
        self._capsule = capsule
        tensor = capsule_tensor(capsule)
        self._device = (tensor.device_type, tensor.device_id)

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def to_dlpack(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """`Tensor.__dlpack__`: a capsule over the tensor's memory (a copy only if `copy=True`)."""
    if tensor.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    return kernel("to_dlpack", tensor.device.type)(tensor._data, tensor.dtype, stream=stream,
                                                   max_version=max_version, dl_device=dl_device,
                                                   copy=copy)


def dlpack_device(tensor):
    """`Tensor.__dlpack_device__`: (DLPack device type code, device index)."""
    return (_DEVICE_CODES[tensor.device.type], tensor.device.index or 0)


def from_dlpack(ext_tensor, *, copy=None):
    """A genesis tensor over the memory of any DLPack producer (or an unconsumed capsule)."""
    from .tensor import Tensor
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.clone() if copy else ext_tensor
    if is_capsule(ext_tensor):
        ext_tensor = CapsuleHolder(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    code, index = ext_tensor.__dlpack_device__()
    device_type = _DEVICE_TYPES.get(int(code))
    if device_type is None:
        raise BufferError(f"from_dlpack: unsupported DLPack device type {int(code)}")
    data = kernel("from_dlpack", device_type)(ext_tensor, copy=copy)
    device = Device(device_type, None if device_type == "cpu" else int(index))
    return Tensor._make(data, device)
