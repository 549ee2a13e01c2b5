"""Reading strided views in place: dimension coalescing, row layouts, per-dim kernel arguments.

Kernels read views where they lie: an N-d view is described by up to MAX_DIMS (size, stride)
pairs after coalescing, passed to the kernel as one argument per dim, and each element's offset
is recomputed from its linear index by `offsets` below. Reductions and row-wise kernels
(softmax, scans) see their input as rows x reduced elements, each side with its own coalesced
dims (`RowLayout`).
"""

import functools

import numpy as np
import triton
import triton.language as tl

from ..launch import Const
from ..runtime.array import CUDAArray, contiguous_byte_strides

MAX_DIMS = 6
MAX_ROW_DIMS = 4


@triton.jit
def program_range(BLOCK: tl.constexpr, INDEX64: tl.constexpr):
    """This program's BLOCK indices along grid axis 0 (int64 when the view needs it)."""
    if INDEX64:
        start = tl.program_id(0).to(tl.int64) * BLOCK
    else:
        start = tl.program_id(0) * BLOCK
    return start + tl.arange(0, BLOCK)


@triton.jit
def offsets(linear, sizes, strides, NDIM: tl.constexpr):
    """Element offsets of row-major `linear` indices over `sizes` (sizes[0] is never read)."""
    rest = linear
    off = tl.zeros_like(linear)
    for d in tl.static_range(NDIM - 1, 0, -1):
        off += (rest % sizes[d]) * strides[d]
        rest = rest // sizes[d]
    return off + rest * strides[0]


def coalesce(shape, *strides):
    """(sizes, per-array strides) with size-1 dims dropped and neighbours merged when every array
    is contiguous across them; strides are in elements. Never empty (a 0-d view is [1]).

    Cached by geometry (a model asks for the same few on every step, and the merge costs
    several microseconds); each call gets lists of its own."""
    sizes, merged = _coalesce(tuple(shape), *[tuple(s) for s in strides])
    return list(sizes), list(merged)


@functools.lru_cache(maxsize=4096)
def _coalesce(shape, *strides):
    dims = [(size, tuple(s[i] for s in strides)) for i, size in enumerate(shape) if size != 1]
    merged = []
    for size, st in dims:
        if merged:
            psize, pst = merged[-1]
            if all(p == s * size for p, s in zip(pst, st)):
                merged[-1] = (psize * size, st)
                continue
        merged.append((size, st))
    if not merged:
        merged = [(1, (0,) * len(strides))]
    sizes = tuple([size for size, _ in merged])
    return sizes, tuple([tuple(st[k] for _, st in merged) for k in range(len(strides))])


class RowLayout:
    """Arrays of one shape seen as `rows` x `length`: the kept dims (in order) and the reduced
    dims (by decreasing stride of the first array when `reorder`), each side coalesced across
    all the arrays. `strides` holds each array's element strides over the full shape;
    kept_strides[k] and red_strides[k] are array k's after coalescing."""

    __slots__ = ("kept_sizes", "kept_strides", "length", "red_sizes", "red_strides", "rows")

    def __init__(self, shape, dims, strides, reorder=True):
        kept = [i for i in range(len(shape)) if i not in dims]
        red = list(dims)
        if reorder:
            red.sort(key=lambda i: -abs(strides[0][i]))
        self.kept_sizes, self.kept_strides = coalesce(
            [shape[i] for i in kept], *([st[i] for i in kept] for st in strides))
        self.red_sizes, self.red_strides = coalesce(
            [shape[i] for i in red], *([st[i] for i in red] for st in strides))
        self.rows = _prod(shape[i] for i in kept)
        self.length = _prod(shape[i] for i in red)

    def fits(self):
        return len(self.kept_sizes) <= MAX_ROW_DIMS and len(self.red_sizes) <= MAX_ROW_DIMS

    def index_type(self):
        """The kernel index type for the first array (see index_type)."""
        return index_type(self.kept_sizes + self.red_sizes,
                          *(k + r for k, r in zip(self.kept_strides, self.red_strides)))


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def index_type(sizes, *strides):
    """"i32" when every linear index and element offset fits in int32 (cheaper div/mod), else
    "i64"; `sizes` may be several lists (e.g. rows and reduced) with matching strides."""
    limit = 2 ** 31 - 1
    if _prod(sizes) > limit:
        return "i64"
    for st in strides:
        if sum(abs(s) * (n - 1) for n, s in zip(sizes, st)) > limit:
            return "i64"
    return "i32"


def dim_sizes(sizes, max_dims):
    """The kernel arguments size1.. of coalesced `sizes` (size0 is never read: the linear index
    bounds it); the dims past the view's are the constant 1."""
    return tuple(sizes[d] if d < len(sizes) else Const(1) for d in range(1, max_dims))


def dim_strides(strides, max_dims):
    """The kernel arguments stride0.. of coalesced `strides`: the dims past the view's are the
    constant 0, and an innermost stride of 1 the constant 1, so Triton knows the accesses are
    contiguous and can vectorize them."""
    n = len(strides)
    return tuple(Const(1) if d == n - 1 and strides[d] == 1 else strides[d] if d < n
                 else Const(0) for d in range(max_dims))


def stride_arg(stride, constants=(0, 1)):
    """A stride as a kernel argument: compiled in as a constant when it is one of `constants`
    (1 tells Triton the access is contiguous, 0 that it is broadcast)."""
    return Const(stride) if stride in constants else stride


def cdiv(a, b):
    return -(-a // b)


def next_pow2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()


def select(arr, dim, index):
    """`arr[..., index, ...]` along `dim` (a view with that dim removed); scalars pass through."""
    if not isinstance(arr, CUDAArray):
        return arr
    return CUDAArray(arr.storage, arr.shape[:dim] + arr.shape[dim + 1:],
                     arr.strides[:dim] + arr.strides[dim + 1:],
                     arr.offset + index * arr.strides[dim], arr.dtype)


def as_rows(arr):
    """`arr` (..., N) seen as a (rows, N) matrix, or None when its leading dims do not collapse
    to one row stride: what row kernels take for any batch shape without a reshape."""
    width = arr.shape[-1] if arr.ndim else 1
    leading = [(n, s) for n, s in zip(arr.shape[:-1], arr.strides[:-1]) if n != 1]
    row_stride = leading[-1][1] if leading else width * arr.dtype.itemsize
    expected = row_stride
    for n, s in reversed(leading):
        if s != expected:
            return None
        expected *= n
    rows = arr.size // width if width else _prod(arr.shape[:-1])
    last = arr.strides[-1] if arr.ndim else arr.dtype.itemsize
    return CUDAArray(arr.storage, (rows, width), (row_stride, last), arr.offset, arr.dtype)


class _NoStorage:
    ptr = 0
    device = 0


def placeholder(shape, dtype, strides=None):
    """A CUDAArray that owns no memory (address 0): compile checks specialize on its layout."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    byte_strides = (contiguous_byte_strides(shape, dtype.itemsize) if strides is None
                    else tuple(s * dtype.itemsize for s in strides))
    return CUDAArray(_NoStorage(), shape, byte_strides, 0, dtype)
