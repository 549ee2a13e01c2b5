"""DLPack on the GPU: share device memory with PyTorch, CuPy and others without copying.

Export builds a DLManagedTensor (legacy layout, capsule name "dltensor") over a CUDAArray; its
deleter drops the reference that keeps the array's memory alive. Import takes a producer's
capsule, marks it used, and wraps the device pointer in a CUDAArray whose storage calls the
producer's deleter when the last genesis view of it is garbage.

Streams (the DLPack protocol): the consumer names its stream; the producer makes its pending
writes visible there. Both directions here synchronize with an event on the producer's stream.
"""

import ctypes

import ml_dtypes
import numpy as np

from ...dispatch import register
from ..dlpack import DL_BFLOAT, DLDataType, DLTensor, capsule_tensor
from .runtime import driver
from .runtime.array import CUDAArray, contiguous_byte_strides
from .runtime.device import activate
from .runtime.stream import current_stream_handle

_DL_CUDA = 2
_CODES = {"b": 6, "i": 0, "u": 1, "f": 2}  # kDLBool, kDLInt, kDLUInt, kDLFloat
_NUMPY_BY_CODE = {(6, 8): "bool", (0, 8): "int8", (0, 16): "int16", (0, 32): "int32",
                  (0, 64): "int64", (1, 8): "uint8", (2, 16): "float16", (2, 32): "float32",
                  (2, 64): "float64", (DL_BFLOAT, 16): "bfloat16"}


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _Deleter)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype, _set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_exported = {}  # address of a DLManagedTensor -> what keeps it and its memory alive


@_Deleter
def _release_export(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# The destructor gets the dying capsule as a raw PyObject*: call the C API on the address.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@_CapsuleDestructor
def _capsule_destructor(capsule_ptr):
    """A capsule never consumed still owns its tensor: release it (consumers rename it)."""
    if _raw_is_valid(capsule_ptr, b"dltensor"):
        _exported.pop(_raw_pointer(capsule_ptr, b"dltensor"), None)


def _dl_dtype(np_dtype):
    if np_dtype.name == "bfloat16":
        return DLDataType(DL_BFLOAT, 16, 1)
    return DLDataType(_CODES[np_dtype.kind], np_dtype.itemsize * 8, 1)


def _sync_for_consumer(device, stream):
    """Make work queued on our current stream visible to the consumer's `stream` (an int)."""
    ours = current_stream_handle(device)
    if stream is None or stream == -1 or stream == ours:
        return
    event = driver.event_create()
    driver.event_record(event, ours)
    driver.stream_wait_event(stream, event)  # 1 and 2 are CUDA's legacy/per-thread handles
    driver.event_destroy(event)


@register("to_dlpack", "cuda")
def to_dlpack(arr, dtype, stream=None, max_version=None, dl_device=None, copy=None):
    """A "dltensor" capsule over `arr`'s device memory (a copy first only if `copy=True`)."""
    activate(arr.device)
    if copy:
        from .array_ops import contiguous
        arr = contiguous(arr)
    _sync_for_consumer(arr.device, stream)
    ndim = arr.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*arr.element_strides())
    managed = _DLManagedTensor()
    managed.dl_tensor = DLTensor(arr.ptr if arr.size else 0, _DL_CUDA, arr.device, ndim,
                                  _dl_dtype(arr.dtype), ctypes.addressof(shape),
                                  ctypes.addressof(strides), 0)
    managed.deleter = _release_export
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, arr)
    return _capsule_new(address, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _ImportedStorage:
    """Device memory owned by another library; its DLPack deleter runs when genesis is done."""

    def __init__(self, managed_address, ptr, nbytes, device):
        self._managed = managed_address
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device

    def record_stream(self, stream_handle):
        """The producer's allocator owns this memory; nothing to tell ours."""

    def __del__(self):
        managed = ctypes.cast(self._managed, ctypes.POINTER(_DLManagedTensor))
        if managed.contents.deleter:
            managed.contents.deleter(managed)


def _extent_bytes(shape, strides, itemsize):
    if 0 in shape:
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


@register("from_dlpack", "cuda")
def from_dlpack(producer, copy=None):
    """A CUDAArray over the producer's device memory, kept alive until genesis drops it."""
    device = int(producer.__dlpack_device__()[1])
    activate(device)
    capsule = producer.__dlpack__(stream=current_stream_handle(device) or 1)
    tensor = capsule_tensor(capsule)
    if tensor.device_type != _DL_CUDA:
        raise BufferError(f"from_dlpack: expected CUDA memory, got DLPack device type "
                          f"{tensor.device_type}")
    key = (tensor.dtype.code, tensor.dtype.bits)
    if key not in _NUMPY_BY_CODE or tensor.dtype.lanes != 1:
        raise BufferError(f"from_dlpack: unsupported DLPack dtype (code {key[0]}, bits {key[1]})")
    np_dtype = np.dtype(ml_dtypes.bfloat16 if key == (DL_BFLOAT, 16) else _NUMPY_BY_CODE[key])
    shape = tuple(ctypes.cast(tensor.shape, ctypes.POINTER(ctypes.c_int64))[i]
                  for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(ctypes.cast(tensor.strides, ctypes.POINTER(ctypes.c_int64))[i]
                        for i in range(tensor.ndim))
    else:
        strides = contiguous_byte_strides(shape, 1)  # in elements
    ptr = (tensor.data or 0) + tensor.byte_offset
    name = b"dltensor"
    managed_address = _capsule_pointer(capsule, name)
    _set_name(capsule, b"used_dltensor")
    nbytes = _extent_bytes(shape, strides, np_dtype.itemsize)
    storage = _ImportedStorage(managed_address, ptr, nbytes, device)
    arr = CUDAArray(storage, shape, tuple(s * np_dtype.itemsize for s in strides), 0, np_dtype)
    if copy:
        from .array_ops import contiguous
        arr = contiguous(arr)
    return arr
