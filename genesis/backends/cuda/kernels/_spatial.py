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
def divide(n, d, m=None, s=None):
    """(n // d, n % d) of non-negative `n`: unsigned for int32 `n` and a `d` given at run time,
    some instructions fewer than signed, a constant `d` or int64 `n` as they are. With `m` and
    `s` of `magic(d)`, int32 `n` is divided by a multiplication and a shift instead (3
    instructions, not the 16 of a division by a value known only at run time)."""
    if n.dtype == tl.int64 or not isinstance(d, tl.tensor):
        q = n // d
    elif m is not None:
        high = tl.umulhi(n.to(tl.uint32, bitcast=True), m.to(tl.uint32, bitcast=True))
        q = (high >> s.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True)
    else:
        q = (n.to(tl.uint32, bitcast=True) // d.to(tl.uint32, bitcast=True)).to(tl.int32,
                                                                                 bitcast=True)
    return q, n - q * d


def magic(d):
    """(m, s), int32 (m's bits unsigned), with n // d == umulhi(n, m) >> s for every
    0 <= n < 2**31, of a divisor d >= 2: m = ceil(2**(31 + k) / d) for 2**k >= d errs by less
    than n / 2**(31 + k) < 1/d, too little to reach the next multiple of d."""
    k = (d - 1).bit_length()
    m = -(-(1 << (31 + k)) // d)
    return m - (1 << 32) if m >= 1 << 31 else m, k - 1


@triton.jit
def position(linear, channels, size_d, size_h, size_w, CHANNELS_LAST: tl.constexpr, c_m=None,
             c_s=None, d_m=None, d_s=None, h_m=None, h_s=None, w_m=None, w_s=None):
    """(n, c, d, h, w) of the `linear` indices of a dense (N, C, D, H, W) array: (N, D, H, W, C)
    in memory with CHANNELS_LAST, else (N, C, D, H, W). The *_m, *_s given, `magic` of
    channels, size_d, size_h and size_w, its divisions are multiplications (see `divide`)."""
    if CHANNELS_LAST:
        rest, c = divide(linear, channels, c_m, c_s)
    else:
        rest = linear
    rest, w = divide(rest, size_w, w_m, w_s)
    rest, h = divide(rest, size_h, h_m, h_s)
    rest, d = divide(rest, size_d, d_m, d_s)
    if not CHANNELS_LAST:
        rest, c = divide(rest, channels, c_m, c_s)
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
