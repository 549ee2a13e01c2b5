"""CUDA arrays: the same view contract as numpy arrays, over a block from the caching allocator.

A `CUDAArray` is (storage, shape, byte strides, byte offset, numpy dtype), exactly the fields
numpy exposes, so device-agnostic code treats both alike. A `CUDAStorage` owns one allocator
block and gives it back when the last array over it is garbage.
"""

import numpy as np

from .device import get_context
from .stream import current_stream_handle


class CUDAStorage:
    """One allocation on one device; freed (to the allocator's cache) when garbage."""

    __slots__ = ("block", "device", "nbytes", "_allocator", "__weakref__")

    def __init__(self, nbytes, device, stream=None):
        ctx = get_context(device)
        self._allocator = ctx.allocator
        self.device = device
        self.nbytes = nbytes
        stream = current_stream_handle(device) if stream is None else stream
        self.block = self._allocator.malloc(nbytes, stream)

    @property
    def ptr(self):
        return self.block.ptr

    def record_stream(self, stream_handle):
        """Tell the allocator this memory is used on another stream (Tensor.record_stream)."""
        self._allocator.record_stream(self.block, stream_handle)

    def __del__(self):
        block = getattr(self, "block", None)
        if block is not None:
            try:
                self._allocator.free(block)
            except Exception:  # interpreter shutdown: the driver may be gone
                pass


class CUDAArray:
    """A strided view of a CUDAStorage; `strides` and `offset` are in bytes, as numpy's."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype")

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage = storage
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = np.dtype(dtype)

    @classmethod
    def empty(cls, shape, dtype, device, stream=None):
        dtype = np.dtype(dtype)
        shape = tuple(shape)
        size = 1
        for s in shape:
            size *= s
        storage = CUDAStorage(size * dtype.itemsize, device, stream)
        return cls(storage, shape, contiguous_byte_strides(shape, dtype.itemsize), 0, dtype)

    @property
    def device(self):
        return self.storage.device

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def ptr(self):
        """Device address of the first element."""
        return self.storage.ptr + self.offset

    def is_contiguous(self):
        return self.strides == contiguous_byte_strides(self.shape, self.itemsize) or self.size <= 1

    def element_strides(self):
        return tuple(s // self.itemsize for s in self.strides)

    def __repr__(self):
        return (f"CUDAArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
                f"offset={self.offset}, device=cuda:{self.device})")


def contiguous_byte_strides(shape, itemsize):
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
