"""Meta kernels that make, view, move and fill arrays: they touch no data, so creation and
views give metadata, writes (copies, fills, random draws) leave it as it is, and reading
values out raises torch's error."""

from ...dispatch import register
from .array import MetaArray, dense, elementwise_result

NO_DATA = "Cannot copy out of meta tensor; no data!"


@register("storage_of", "meta")
def storage_of(arr):
    """(a 1-D array spanning what `arr` reaches, `arr`'s element offset in it)."""
    itemsize = arr.dtype.itemsize
    return MetaArray((arr.offset + arr.extent(),), (itemsize,), arr.dtype), arr.offset


@register("as_strided", "meta")
def as_strided(storage, shape, strides, offset):
    itemsize = storage.dtype.itemsize
    return MetaArray(shape, [s * itemsize for s in strides], storage.dtype,
                     storage.offset + offset)


@register("storage_as", "meta")
def storage_as(storage, dtype):
    """The bytes of `storage` as a storage of `dtype` (its offset counted in `dtype`'s
    elements)."""
    itemsize = dtype.itemsize
    return MetaArray((storage.nbytes // itemsize,), (itemsize,), dtype.numpy_dtype,
                     storage.offset * storage.itemsize // itemsize)


@register("empty", "meta")
def empty(shape, dtype, device_index=None):
    return dense(shape, dtype.numpy_dtype)


@register("full", "meta")
def full(shape, value, dtype, device_index=None):
    return dense(shape, dtype.numpy_dtype)


@register("from_numpy", "meta")
def from_numpy(array, device_index=None, non_blocking=False):
    """A host array moved to the meta device: its shape and dtype, its values dropped."""
    return dense(array.shape, array.dtype)


@register("to_numpy", "meta")
def to_numpy(arr, non_blocking=False):
    raise NotImplementedError(NO_DATA)


@register("cast", "meta")
def cast(arr, dtype):
    return elementwise_result(arr.shape, dtype.numpy_dtype, (arr,))


@register("contiguous", "meta")
def contiguous(arr):
    return dense(arr.shape, arr.dtype)


@register("data_ptr", "meta")
def data_ptr(arr):
    return 0


def _unchanged(arr, *args):
    """A write into `arr` (values it has none of): `arr` as it was."""
    return arr


for _name in ("fill_", "copy_", "uniform_", "normal_", "exponential_", "random_", "bernoulli_"):
    register(_name, "meta")(_unchanged)


@register("dropout", "meta")
def dropout(x, p, seed, offset):
    return elementwise_result(x.shape, x.dtype, (x,))
