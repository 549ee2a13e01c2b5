"""The CPU view model: a numpy array is (storage, shape, strides, offset, dtype).

A storage is a 1-D contiguous numpy array covering a whole buffer; every tensor's array is an
`as_strided` view of it. Strides here are in elements, as PyTorch reports them; numpy's are in
bytes. Kernels never return arrays with negative strides (PyTorch has none).
"""

import numpy as np
from numpy.lib.array_utils import byte_bounds
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ...dispatch import register
from ...dtypes import half_source


@register("storage_of", "cpu")
def storage_of(arr):
    """(storage, element offset) for a fresh array: the 1-D buffer it spans, offset 0."""
    if arr.flags.c_contiguous:
        return arr.reshape(-1), 0
    if any(s < 0 for s in arr.strides):
        raise ValueError("arrays with negative strides are not supported; "
                         "copy the array first (numpy.ascontiguousarray)")
    lo, hi = byte_bounds(arr)
    count = (hi - lo) // arr.itemsize if arr.size else 0
    storage = _np_as_strided(arr, shape=(count,), strides=(arr.itemsize,))
    return storage, 0


@register("as_strided", "cpu")
def as_strided(storage, shape, strides, offset):
    """A view of `storage` with element `strides`, starting `offset` elements in.

    Built with the ndarray constructor over the storage buffer (bounds-checked, and several
    times cheaper than numpy's as_strided); empty views, which may start past the end, use
    as_strided.
    """
    itemsize = storage.itemsize
    byte_strides = tuple([s * itemsize for s in strides])
    if 0 in shape:
        return _np_as_strided(storage[offset:], shape=tuple(shape), strides=byte_strides)
    return np.ndarray(shape, storage.dtype, storage, offset * itemsize, byte_strides)


@register("storage_as", "cpu")
def storage_as(storage, dtype):
    """The bytes of `storage` as a storage of `dtype` (a view; a tail too short for one element
    of `dtype` is left out), for `Tensor.view(dtype)`."""
    raw = storage.view(np.uint8)
    return raw[:raw.size - raw.size % dtype.itemsize].view(dtype.numpy_dtype)


@register("empty", "cpu")
def empty(shape, dtype, device_index=None):
    return np.empty(shape, dtype=dtype.numpy_dtype)


@register("full", "cpu")
def full(shape, value, dtype, device_index=None):
    return np.full(shape, value, dtype=dtype.numpy_dtype)


@register("fill_", "cpu")
def fill_(arr, value):
    """Set every element of `arr` to `value` (converted as `full` converts it), in place."""
    np.copyto(arr, np.array(value, dtype=arr.dtype))
    return arr


@register("from_numpy", "cpu")
def from_numpy(array, device_index=None, non_blocking=False):
    """Host data to this backend: the CPU keeps numpy arrays as they are."""
    return array


@register("to_numpy", "cpu")
def to_numpy(arr, non_blocking=False):
    return arr


@register("copy_", "cpu")
def copy_(dst, src):
    """Write `src` (broadcast and cast to `dst`'s shape and dtype) into `dst` in place; floats
    beyond the range of `dst`'s dtype, and nan or inf into an integer one, silently, as in
    PyTorch."""
    src = half_source(np.asarray(src), dst.dtype)
    if src.dtype.kind == "f" and src.dtype != dst.dtype:
        with np.errstate(over="ignore", invalid="ignore"):
            np.copyto(dst, src, casting="unsafe")
    else:
        np.copyto(dst, src, casting="unsafe")
    return dst


@register("cast", "cpu")
def cast(arr, dtype):
    """`arr` converted to `dtype` (into a half type through float32, as c10 converts); values
    beyond a floating dtype's range become inf, and nan, inf or out-of-range floats cast to an
    integer dtype become what the C cast gives, silently, as in PyTorch."""
    with np.errstate(over="ignore", invalid="ignore"):
        return half_source(arr, dtype.numpy_dtype).astype(dtype.numpy_dtype)


@register("contiguous", "cpu")
def contiguous(arr):
    return np.array(arr, order="C", copy=True)


@register("data_ptr", "cpu")
def data_ptr(arr):
    return arr.__array_interface__["data"][0]
