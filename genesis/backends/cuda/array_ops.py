"""The CUDA backend's array-level kernels: the view contract, allocation, transfers, copies.

These are the same entries the CPU backend registers in backends/cpu/array.py (storage_of,
as_strided, storage_as, empty, full, from_numpy, to_numpy, copy_, cast, contiguous, data_ptr),
so device-agnostic code moves and views data identically on both.
"""

import numpy as np

from ...dispatch import register
from .kernels.copy import fill, strided_copy
from .runtime import driver, sync_debug
from .runtime.array import CUDAArray
from .runtime.device import activate, activated
from .runtime.graphs import check_not_capturing
from .runtime.pinned import PinnedBuffer, staging
from .runtime.stream import current_stream_handle


@register("storage_of", "cuda")
def storage_of(arr):
    """(flat array over the whole allocation, element offset of `arr` in it)."""
    itemsize = arr.itemsize
    count = arr.storage.nbytes // itemsize
    flat = CUDAArray(arr.storage, (count,), (itemsize,), 0, arr.dtype)
    return flat, arr.offset // itemsize


@register("as_strided", "cuda")
def as_strided(storage, shape, strides, offset):
    itemsize = storage.dtype.itemsize
    return CUDAArray(storage.storage, shape, tuple([s * itemsize for s in strides]),
                     storage.offset + offset * itemsize, storage.dtype)


@register("storage_as", "cuda")
def storage_as(storage, dtype):
    """The bytes of `storage` as a storage of `dtype`: a flat array over the same allocation."""
    itemsize = dtype.itemsize
    return CUDAArray(storage.storage, (storage.nbytes // itemsize,), (itemsize,), storage.offset,
                     dtype.numpy_dtype)


@register("empty", "cuda")
def empty(shape, dtype, device_index=None):
    return CUDAArray.empty(shape, dtype.numpy_dtype, activated(device_index))


@register("full", "cuda")
def full(shape, value, dtype, device_index=None):
    out = empty(shape, dtype, device_index)
    fill(out, value, current_stream_handle(out.device))
    return out


@register("from_numpy", "cuda")
def from_numpy(array, device_index=None, non_blocking=False):
    """Copy a host array to the device on the current stream.

    Blocking: straight from pageable memory (the call returns once the driver has staged it).
    Non-blocking: through a pinned staging buffer, so the call returns at once.
    """
    index = activated(device_index)
    host = np.require(array, requirements="C")  # ascontiguousarray makes 0-d arrays 1-d
    stream = current_stream_handle(index)
    check_not_capturing("a copy from the host to the device (genesis.tensor(..., "
                        "device='cuda'), .to('cuda') or .cuda() of a CPU tensor)", stream)
    out = CUDAArray.empty(host.shape, host.dtype, index, stream)
    if not host.nbytes:
        return out
    if non_blocking:
        buf = staging.acquire(host.nbytes)
        np.copyto(buf.view(host.shape, host.dtype), host)
        driver.memcpy_htod(out.ptr, buf.ptr, host.nbytes, stream)
        staging.release_after(buf, stream)
    else:
        sync_debug.warn_or_error_on_sync()
        driver.memcpy_htod(out.ptr, host.ctypes.data, host.nbytes, stream)
    return out


@register("to_numpy", "cuda")
def to_numpy(arr, non_blocking=False):
    """A host copy of `arr`.

    Blocking: waits for the current stream. Non-blocking: the copy lands in pinned memory
    asynchronously; the values are valid once the stream is synchronized (as in PyTorch).
    """
    activate(arr.device)
    stream = current_stream_handle(arr.device)
    check_not_capturing("a copy from the device to the host (Tensor.item(), .tolist(), "
                        ".numpy(), .cpu(), printing a tensor, a data-dependent shape)", stream)
    src = arr if arr.is_contiguous() else contiguous(arr)
    if non_blocking:
        host = PinnedBuffer(arr.nbytes).view(arr.shape, arr.dtype)
    else:
        host = np.empty(arr.shape, dtype=arr.dtype)
    if host.nbytes:
        if not non_blocking:
            sync_debug.warn_or_error_on_sync()
        driver.memcpy_dtoh(host.ctypes.data, src.ptr, host.nbytes, stream)
        if not non_blocking:
            driver.stream_synchronize(stream)
    return host


def _broadcast_to(src, shape):
    """`src` viewed as `shape` with stride 0 on broadcast dimensions."""
    if src.shape == tuple(shape):
        return src
    lead = len(shape) - src.ndim
    strides = [0] * lead + [st if sz == full_sz else 0
                            for sz, st, full_sz in zip(src.shape, src.strides, shape[lead:])]
    return CUDAArray(src.storage, shape, strides, src.offset, src.dtype)


@register("copy_", "cuda")
def copy_(dst, src):
    """Write `src` (a CUDAArray, broadcast and cast) into `dst` in place, on the current stream."""
    activate(dst.device)
    if not isinstance(src, CUDAArray):
        src = from_numpy(np.asarray(src, dtype=dst.dtype), dst.device)
    if src.device != dst.device:
        src = from_numpy(to_numpy(src), dst.device)
    strided_copy(dst, _broadcast_to(src, dst.shape), current_stream_handle(dst.device))
    return dst


@register("fill_", "cuda")
def fill_(arr, value):
    """Set every element of `arr` to `value` in place: the fill kernel (or a memset) on a
    contiguous array; a strided view copies from one filled element, broadcast."""
    if arr.size == 0:
        return arr
    activate(arr.device)
    stream = current_stream_handle(arr.device)
    if arr.is_contiguous():
        fill(arr, value, stream)
    else:
        one = CUDAArray.empty((), arr.dtype, arr.device, stream)
        fill(one, value, stream)
        strided_copy(arr, _broadcast_to(one, arr.shape), stream)
    return arr


@register("cast", "cuda")
def cast(arr, dtype):
    activate(arr.device)
    out = CUDAArray.empty(arr.shape, dtype.numpy_dtype, arr.device,
                          current_stream_handle(arr.device))
    strided_copy(out, arr, current_stream_handle(arr.device))
    return out


@register("contiguous", "cuda")
def contiguous(arr):
    activate(arr.device)
    stream = current_stream_handle(arr.device)
    out = CUDAArray.empty(arr.shape, arr.dtype, arr.device, stream)
    strided_copy(out, arr, stream)
    return out


@register("data_ptr", "cuda")
def data_ptr(arr):
    return arr.ptr if arr.size else 0



@register("pin_memory", "cuda")
def pin_memory(host):
    """A copy of the host array in page-locked memory."""
    activated()
    out = PinnedBuffer(host.nbytes).view(host.shape, host.dtype)
    np.copyto(out, host)
    return out


@register("is_pinned", "cuda")
def is_pinned(host):
    base = host
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, PinnedBuffer)
