"""resize_ and resize_as_: a tensor given a new shape in place, over its storage from its offset,
the storage grown when too small (torch.Tensor.resize_)."""

import math

from .. import memory_formats as formats
from ..dispatch import kernel
from .common import contiguous_strides
from .size_args import _shape_arg, _sizes


def resize_(t, *sizes, size=None, memory_format=None):
    """Give `t` the shape `sizes`, laid out dense (row-major, or in a channels-last
    `memory_format`) from its storage offset, in place. A storage too small for it is
    replaced by a larger one that starts with the old one's values, as PyTorch grows a
    storage; views taken before that keep the old storage."""
    shape = _shape_arg(_sizes(sizes, size, "resize_"), "resize_")
    if t.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    order = formats.dim_order(memory_format)
    if order is None:
        strides = contiguous_strides(shape)
    else:
        formats.check_rank(len(shape), memory_format)
        strides = formats.dense_strides(shape, order)
    device_type = t.device.type
    storage, offset = t._storage, t._offset
    needed = offset + math.prod(shape)
    if needed > storage.size:
        grown = kernel("empty", device_type)((needed,), t.dtype, t.device.index)
        head = kernel("as_strided", device_type)(grown, (storage.size,), (1,), 0)
        kernel("copy_", device_type)(head, storage)
        t._storage = storage = grown
    t._data = kernel("as_strided", device_type)(storage, shape, strides, offset)
    t._bump_version()
    return t


def resize_as_(t, other, memory_format=None):
    """`resize_` to `other`'s shape."""
    return resize_(t, tuple(other.shape), memory_format=memory_format)


class ResizeMethods:
    """Tensor methods of this family: resize_ and resize_as_."""

    resize_ = resize_
    resize_as_ = resize_as_


__all__ = ["resize_as_"]
