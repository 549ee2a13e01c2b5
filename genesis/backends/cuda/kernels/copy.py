"""Copy, cast and fill kernels: what moving data between layouts and dtypes requires.

`strided_copy` writes any strided view into any other of the same shape, converting the dtype on
the way (a cast is a copy into another dtype). Dimensions contiguous in both views are merged
first (kernels/_strided_indexing.py), so most copies become 1-D and run with 16-byte vector
accesses.
Other layouts take the tile kernel: a [BJ, BI] tile over two dims, I (the destination's
contiguous dim) and J (the source's contiguous dim when it has another one: a transpose; else
the next dim in), the remaining dims (at most MAX_DIMS - 2) indexed once per program. A
transposing tile is read along J and written along I, both coalesced (Triton exchanges the tile
through shared memory in between); a row tile (I contiguous in both) is read and written along
I. Launches are kept per geometry (launch.LaunchCache).

Block sizes: the 1-D kernel moves BLOCK=1024 elements per program with 4 warps (8 a thread: two
16-byte float32 vectors). Row tiles hold 4096 elements (up to 1024 along I) and transposing
tiles 64 x 64 (128 x 128 for 1- and 2-byte types, so each row of the tile is at least 128
bytes; as many elements, longer along one dim, when the other is short), 8 warps: enough bytes
in flight per SM to approach copy bandwidth.
"""

import math

import triton
import triton.language as tl

from ..launch import Launch, LaunchCache
from ..runtime import driver
from ._strided_indexing import (MAX_DIMS, cdiv, coalesce, dim_sizes, dim_strides, index_type,
                                next_pow2, offsets, program_range, select, stride_arg)

_FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
# Block sizes (see the module docstring): 1024 elements per 1-D program over 4 warps (8 a thread,
# two 16-byte float32 vectors); tiles of 4096 elements (row tiles up to 1024 along I) over 8
# warps; the dims other than I and J are indexed once per program.
BLOCK = 1024
NUM_WARPS = 4
_TILE_WARPS = 8
_ROW_TILE = 4096
_ROW_BLOCK_MAX = 1024
_OUTER_DIMS = MAX_DIMS - 2


@triton.jit
def _converted(x, dst, TO_BOOL: tl.constexpr):
    """`x` in the destination's element type (any nonzero value is True for bool; into a half
    type through float32, as c10 converts, so that float64 and wide integers round twice)."""
    if TO_BOOL:
        x = x != 0
    to = dst.dtype.element_ty
    if (to == tl.float16 or to == tl.bfloat16) and x.dtype != tl.float16 \
            and x.dtype != tl.bfloat16 and x.dtype != tl.float32:
        if to == tl.bfloat16 and x.dtype.is_int():
            return _bfloat16_rn(x.to(tl.float32))
        x = x.to(tl.float32)
    return x.to(to)


@triton.jit
def _bfloat16_rn(x):
    """The finite float32 `x` rounded to bfloat16, to nearest even, in integer arithmetic: LLVM
    folds an integer's conversion to float32 and then to bfloat16 into one conversion (a single
    rounding, cvt.rn.bf16.s64), which this keeps apart."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def _copy_contiguous_kernel(
        # pointers
        src_ptr, dst_ptr,
        # sizes
        n_elements,
        # meta-parameters
        TO_BOOL: tl.constexpr, BLOCK: tl.constexpr):
    """dst[pid*BLOCK..] = src[pid*BLOCK..] in dst's dtype; both contiguous."""
    offs = program_range(BLOCK, True)
    mask = offs < n_elements
    x = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, _converted(x, dst_ptr, TO_BOOL), mask=mask)


@triton.jit
def _copy_tile_kernel(
        # pointers
        src_ptr, dst_ptr,
        # sizes: the tile dims I and J, the outer dims (outer_size0 is never read)
        n_i, n_j, outer_size1, outer_size2, outer_size3,
        # strides, in elements: of the outer dims in src and dst, of I and J in each
        src_outer_stride0, src_outer_stride1, src_outer_stride2, src_outer_stride3,
        dst_outer_stride0, dst_outer_stride1, dst_outer_stride2, dst_outer_stride3,
        src_i_stride, src_j_stride, dst_i_stride, dst_j_stride,
        # meta-parameters
        OUTER_DIMS: tl.constexpr, TO_BOOL: tl.constexpr, INDEX64: tl.constexpr,
        BI: tl.constexpr, BJ: tl.constexpr):
    """One [BJ, BI] tile of dims J x I at one index of the outer dims; the grid is 1-D with
    I blocks fastest, then J blocks, then the outer index."""
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    blocks_i = tl.cdiv(n_i, BI)
    blocks_j = tl.cdiv(n_j, BJ)
    i = (pid % blocks_i) * BI + tl.arange(0, BI)
    rest = pid // blocks_i
    j = (rest % blocks_j) * BJ + tl.arange(0, BJ)
    outer = rest // blocks_j
    sizes = (1, outer_size1, outer_size2, outer_size3)
    src_base = offsets(outer, sizes, (src_outer_stride0, src_outer_stride1, src_outer_stride2,
                                      src_outer_stride3), OUTER_DIMS)
    dst_base = offsets(outer, sizes, (dst_outer_stride0, dst_outer_stride1, dst_outer_stride2,
                                      dst_outer_stride3), OUTER_DIMS)
    mask = (j < n_j)[:, None] & (i < n_i)[None, :]
    x = tl.load(src_ptr + src_base + j[:, None] * src_j_stride + i[None, :] * src_i_stride,
                mask=mask)
    tl.store(dst_ptr + dst_base + j[:, None] * dst_j_stride + i[None, :] * dst_i_stride,
             _converted(x, dst_ptr, TO_BOOL), mask=mask)


@triton.jit
def _fill_kernel(
        # pointers
        dst_ptr,
        # sizes
        n_elements,
        # the value written, as fp64 or i64
        value,
        # meta-parameters
        BLOCK: tl.constexpr):
    offs = program_range(BLOCK, True)
    x = tl.zeros([BLOCK], dtype=value.dtype) + value
    tl.store(dst_ptr + offs, x.to(dst_ptr.dtype.element_ty), mask=offs < n_elements)


_plans = LaunchCache()


def strided_copy(dst, src, stream):
    """dst[...] = src[...] cast to dst's dtype; both are CUDAArrays of one shape on one device."""
    if dst.size == 0:
        return
    if dst.dtype == src.dtype and dst.is_contiguous() and src.is_contiguous():
        driver.memcpy_dtod(dst.ptr, src.ptr, dst.nbytes, stream)
        return
    key = (dst.shape, dst.strides, src.strides, dst.dtype, src.dtype, dst.ptr % 16 == 0,
           src.ptr % 16 == 0, dst.device)
    launch, dims = _plans.get_or_build(key, lambda: _copy_plan(dst, src))
    if launch is None:
        for i in range(dst.shape[0]):
            strided_copy(select(dst, 0, i), select(src, 0, i), stream)
        return
    if dims is None:
        _copy_contiguous_launch(launch, stream, src, dst)
    else:
        _copy_tile_launch(launch, dims, stream, src, dst)


def _copy_contiguous_launch(launch, stream, src, dst):
    """The call of _copy_contiguous_kernel."""
    launch(stream,
           # pointers
           src, dst,
           # sizes
           dst.size)


def _copy_tile_launch(launch, dims, stream, src, dst):
    """The call of _copy_tile_kernel; `dims` as _copy_plan makes them."""
    n_i, n_j, outer_sizes, outer_strides, tile_strides = dims
    src_outer, dst_outer = outer_strides
    launch(stream,
           # pointers
           src, dst,
           # sizes
           n_i, n_j, *outer_sizes,
           # strides
           *src_outer, *dst_outer, *tile_strides)


def _copy_plan(dst, src, target=None):
    """(launch, the sizes and strides its launcher passes: None for the contiguous kernel)
    copying `src` into `dst` laid out like these; (None, None) when more than MAX_DIMS dims
    remain after merging (the caller loops over the leading one)."""
    sizes, (src_st, dst_st) = coalesce(dst.shape, src.element_strides(), dst.element_strides())
    to_bool = dst.dtype.kind == "b" and src.dtype.kind != "b"
    if len(sizes) == 1 and src_st == dst_st == (1,):
        launch = Launch(_copy_contiguous_kernel, (cdiv(dst.size, BLOCK),),
                        dict(TO_BOOL=to_bool, BLOCK=BLOCK), NUM_WARPS, int_type="i64",
                        device=dst.device, target=target)
        return launch, None
    if len(sizes) > MAX_DIMS:
        return None, None
    i, j = _tile_dims(sizes, src_st, dst_st)
    outer = [d for d in range(len(sizes)) if d not in (i, j)]
    bi, bj = _tile(sizes, i, j, src_st, max(src.itemsize, dst.itemsize))
    ity = index_type(sizes, src_st, dst_st)
    n_j = sizes[j] if j is not None else 1
    outer_sizes = [sizes[d] for d in outer] or [1]
    outer_strides = tuple(dim_strides([st[d] for d in outer] or [0], _OUTER_DIMS)
                          for st in (src_st, dst_st))
    tile_strides = tuple(stride_arg(st[d] if d is not None else 0)
                         for st in (src_st, dst_st) for d in (i, j))
    meta = dict(OUTER_DIMS=len(outer_sizes), TO_BOOL=to_bool, INDEX64=ity == "i64", BI=bi,
                BJ=bj)
    programs = cdiv(sizes[i], bi) * cdiv(n_j, bj) * math.prod(outer_sizes)
    launch = Launch(_copy_tile_kernel, (programs,), meta, _TILE_WARPS, int_type=ity,
                    device=dst.device, target=target)
    return launch, (sizes[i], n_j, dim_sizes(outer_sizes, _OUTER_DIMS), outer_strides,
                    tile_strides)


def _tile_dims(sizes, src_st, dst_st):
    """(I, J): I the destination's contiguous dim (else the source's, else the last), J the
    source's contiguous dim when that is another one, else the innermost remaining dim by the
    source's strides (None for a 1-D copy)."""
    i = _unit_dim(dst_st)
    if i is None:
        i = _unit_dim(src_st)
    if i is None:
        i = len(sizes) - 1
    others = [d for d in range(len(sizes)) if d != i]
    if not others:
        return i, None
    j = _unit_dim(src_st)
    if j is None or j == i:
        j = min(others, key=lambda d: (abs(src_st[d]), -d))
    return i, j


def _unit_dim(strides):
    """The innermost dim of stride 1 (None when there is none)."""
    return next((d for d in reversed(range(len(strides))) if strides[d] == 1), None)


def _tile(sizes, i, j, src_st, itemsize):
    """(BI, BJ): side x side tiles when the copy transposes (read along J, written along I),
    stretched along the longer dim when the other is short; else rows of up to _ROW_BLOCK_MAX
    along I."""
    n_i, n_j = next_pow2(sizes[i]), next_pow2(sizes[j]) if j is not None else 1
    if j is not None and src_st[j] == 1 and src_st[i] != 1 and n_i > 1:
        side = 128 if itemsize <= 2 else 64
        bj = min(n_j, side * side // min(n_i, side))
        return min(n_i, side * side // bj), bj
    bi = min(n_i, _ROW_BLOCK_MAX)
    return bi, max(1, min(n_j, _ROW_TILE // bi))


def fill(dst, value, stream):
    """Set every element of the contiguous CUDAArray `dst` to `value` (zeros use memset)."""
    n = dst.size
    if n == 0:
        return
    if value == 0 or (dst.dtype.kind == "b" and not value):
        driver.memset_d8(dst.ptr, 0, dst.nbytes, stream)
        return
    is_float = isinstance(value, float) or dst.dtype.name in _FLOAT_NAMES
    scalar = float(value) if is_float else int(value)
    if dst.dtype.kind == "b":
        scalar = int(bool(value))
    key = (n, dst.dtype, is_float, dst.ptr % 16 == 0, dst.device)
    launch = _fills.get_or_build(key, lambda: _fill_plan(n, is_float, dst.device))
    _fill_launch(launch, stream, dst, n, scalar)


_fills = LaunchCache()


def _fill_launch(launch, stream, dst, n, value):
    """The call of _fill_kernel."""
    launch(stream,
           # pointers
           dst,
           # sizes
           n,
           # the value
           value)


def _fill_plan(n, is_float, device=0, target=None):
    """The fill launch over `n` elements of a value given as fp64 (`is_float`) or i64."""
    return Launch(_fill_kernel, (cdiv(n, BLOCK),), dict(BLOCK=BLOCK), NUM_WARPS, int_type="i64",
                  types={"value": "fp64" if is_float else "i64"}, per_call=("value",),
                  device=device, target=target)
