"""Shared pieces of the kernels over (N, C, *spatial) arrays (pooling, interpolation): 1-D and
2-D arrays seen as 3-D ones, the memory format of a result (channels-last when the input's
channels are its unit-stride dim, as PyTorch's channels_last), and the element positions of a
result laid out densely in that format.
"""

import triton
import triton.language as tl

from ..array_ops import as_strided
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import index_type


@triton.jit
def divide(n, d):
    """(n // d, n % d) of non-negative `n`: unsigned for int32 `n` and a `d` given at run time,
    some instructions fewer than signed, a constant `d` or int64 `n` as they are."""
    if n.dtype == tl.int64 or not isinstance(d, tl.tensor):
        q = n // d
    else:
        q = (n.to(tl.uint32, bitcast=True) // d.to(tl.uint32, bitcast=True)).to(tl.int32,
                                                                                 bitcast=True)
    return q, n - q * d


@triton.jit
def position(linear, channels, size_d, size_h, size_w, CHANNELS_LAST: tl.constexpr):
    """(n, c, d, h, w) of the `linear` indices of a dense (N, C, D, H, W) array: (N, D, H, W, C)
    in memory with CHANNELS_LAST, else (N, C, D, H, W)."""
    if CHANNELS_LAST:
        rest, c = divide(linear, channels)
    else:
        rest = linear
    rest, w = divide(rest, size_w)
    rest, h = divide(rest, size_h)
    rest, d = divide(rest, size_d)
    if not CHANNELS_LAST:
        rest, c = divide(rest, channels)
    return rest, c, d, h, w


def channels_last(arr):
    """True when a 4-D or 5-D `arr`'s channels are its unit-stride dim: its results are then
    channels-last as well (3-D arrays have no such format in PyTorch)."""
    return arr.ndim in (4, 5) and arr.shape[1] > 1 and arr.element_strides()[1] == 1


def empty(shape, dtype, last, device, stream):
    """An (N, C, *spatial) array, dense channels-last when `last`, else contiguous."""
    if not last:
        return CUDAArray.empty(shape, dtype, device, stream)
    n, c, *spatial = shape
    flat = CUDAArray.empty((n, *spatial, c), dtype, device, stream)
    s = flat.element_strides()
    return as_strided(flat, shape, (s[0], s[-1], *s[1:-1]), 0)


def result(shape, dtype, like):
    """(a dense array of `shape` laid out as `like` is (see `channels_last`), the current
    stream of `like`'s device, whether the layout is channels-last), the device activated."""
    activate(like.device)
    stream = current_stream_handle(like.device)
    last = channels_last(like)
    return empty(shape, dtype, last, like.device, stream), stream, last


def as_3d(arr):
    """`arr` (N, C, *spatial), 1 to 3 spatial dims, as an (N, C, D, H, W) view (new dims of
    size 1 in front)."""
    missing = 5 - arr.ndim
    strides = arr.element_strides()
    return as_strided(arr, (*arr.shape[:2], *(1,) * missing, *arr.shape[2:]),
                      (*strides[:2], *(0,) * missing, *strides[2:]), 0)


def padded(values, fill):
    """A spatial tuple of 1 to 3 values (kernel, stride, ...) with `fill` in front, to 3."""
    return (fill,) * (3 - len(values)) + tuple(values)


def index_width(*arrays):
    """"i64" when an element offset into one of `arrays` or a linear index over it may pass
    int32, else "i32"."""
    for a in arrays:
        if index_type(a.shape, a.element_strides()) == "i64":
            return "i64"
    return "i32"
