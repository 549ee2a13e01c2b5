"""CUDA arrays: the same view contract as numpy arrays, over a block from the caching allocator.

A `CUDAArray` is (storage, shape, byte strides, byte offset, numpy dtype), exactly the fields
numpy exposes, so device-agnostic code treats both alike. A `CUDAStorage` owns one allocator
block and gives it back when the last array over it is garbage.
"""

import numpy as np

from ....dtypes import NUMPY_DTYPE_TYPES
from ...strided import StridedFields
from .device import get_context
from .stream import current_stream_handle

_new = object.__new__
_allocators = {}  # device index -> its context's allocator (contexts live as long as the process)


def _allocator_of(device):
    """get_context(device).allocator, remembered for an explicit index."""
    allocator = get_context(device).allocator
    if device is not None:
        _allocators[device] = allocator
    return allocator


class CUDAStorage:
    """One allocation on one device; freed (to the allocator's cache) when garbage. Made by
    `CUDAArray.empty` (a class without __init__ is the quickest to instantiate)."""

    __slots__ = ("block", "ptr", "device", "nbytes", "_allocator", "__weakref__")

    def record_stream(self, stream_handle):
        """Tell the allocator this memory is used on another stream (Tensor.record_stream)."""
        self._allocator.record_stream(self.block, stream_handle)

    def __del__(self):
        try:
            self._allocator.free(self.block)
        except Exception:  # the allocation itself failed, or interpreter shutdown
            pass


class CUDAArray(StridedFields):
    """A strided view of a CUDAStorage; `strides` and `offset` are in bytes, as numpy's.

    `ptr`, the device address of the first element, and `device`, the storage's device index,
    are fixed with the view (kernels read them on every launch). It can be held weakly, as vmap
    holds the arrays of batched values (genesis.func._batched)."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "ptr", "device", "__weakref__")

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage = storage
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype if dtype.__class__ in NUMPY_DTYPE_TYPES else np.dtype(dtype)
        self.ptr = storage.ptr + offset
        self.device = storage.device

    @classmethod
    def empty(cls, shape, dtype, device, stream=None):
        """A new contiguous array of `shape` over a new CUDAStorage on device index `device`,
        allocated for `stream` (None: the device's current stream)."""
        if dtype.__class__ not in NUMPY_DTYPE_TYPES:  # a numpy dtype object, as in __init__
            dtype = np.dtype(dtype)
        if shape.__class__ is not tuple:
            shape = tuple(shape)
        if len(shape) == 1:  # contiguous_layout's first case, inlined
            strides = (dtype.itemsize,)
            nbytes = shape[0] * strides[0]
        else:
            strides, nbytes = contiguous_layout(shape, dtype.itemsize)
        allocator = _allocators.get(device) or _allocator_of(device)
        block = allocator.malloc(nbytes, current_stream_handle(device) if stream is None
                                 else stream)
        storage = CUDAStorage()
        storage._allocator, storage.block, storage.ptr = allocator, block, block.ptr
        storage.device, storage.nbytes = device, nbytes
        arr = _new(cls)  # the fields as __init__ would set them, without re-checking them
        arr.storage, arr.shape, arr.strides, arr.offset, arr.dtype = storage, shape, strides, 0, dtype
        arr.ptr, arr.device = block.ptr, device
        return arr

    def is_contiguous(self):
        """Row-major with no gaps, as torch counts it: dims of size 1, and empty arrays, have
        any strides (numpy's c_contiguous flag agrees)."""
        itemsize = self.dtype.itemsize
        if self.strides == contiguous_layout(self.shape, itemsize)[0]:
            return True
        expected = itemsize
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return 0 in self.shape
            expected *= size
        return True

    def __repr__(self):
        return (f"CUDAArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
                f"offset={self.offset}, device=cuda:{self.device})")


_layouts = {}


def contiguous_layout(shape, itemsize):
    """(row-major byte strides, bytes) of a contiguous array, `shape` a tuple; cached, but for
    one dimension, whose layout is quicker to build than to look up (and whose sizes vary the
    most: every byte count of a buffer would be an entry)."""
    if len(shape) == 1:
        return (itemsize,), shape[0] * itemsize
    key = (shape, itemsize)
    layout = _layouts.get(key)
    if layout is None:
        if len(_layouts) >= 4096:
            _layouts.clear()
        nbytes = itemsize
        for size in shape:
            nbytes *= size
        layout = _layouts[key] = (contiguous_byte_strides(shape, itemsize), nbytes)
    return layout


def contiguous_byte_strides(shape, itemsize):
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
