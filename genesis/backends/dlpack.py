"""DLPack capsules as the backends see them: the DLTensor struct and its type codes, reading and
retagging the DLTensor inside a capsule, and presenting a bare capsule through the protocol.

Retagging lets a backend export types its array library cannot name (numpy has no bfloat16: the
CPU backend exports the bits as uint16 and retags them as bfloat16).
"""

import ctypes

# DLDeviceType codes (dlpack.h) and DLDataTypeCode codes.
DEVICE_CODES = {"cpu": 1, "cuda": 2}
DEVICE_TYPES = {code: name for name, code in DEVICE_CODES.items()}
DL_UINT = 1
DL_BFLOAT = 4


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
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
    return DLTensor.from_address(_get_pointer(capsule, name) + _DLTENSOR_OFFSETS[name])


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
