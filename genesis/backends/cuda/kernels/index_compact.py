"""Kernels whose output size depends on the data: nonzero and repeat_interleave.

Both find their output length on the device and read it on the host once (a device-to-host
sync, as in PyTorch), then fill the output in parallel:

- nonzero: each block of BLOCK elements counts its non-zeros; an inclusive cumsum of the counts
  (scan.py's scan) gives each block its first output row and, at the end, the total; a second
  pass re-reads the block, ranks its non-zeros with a block-local cumsum and writes their
  coordinates (row-major order, as numpy's argwhere).
- repeat_interleave: the inclusive cumsum of the repeats gives the total; output position p
  holds the first i whose running total exceeds p (a binary search per element).
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, fit, numel, read_int64
from ._strided_indexing import (MAX_DIMS, cdiv, dim_sizes, dim_strides, index_type, offsets,
                                program_range)
from .scan import scan

# 1024 elements a program over 4 warps (8 a thread); one launch writes up to 8 coordinates.
BLOCK = 1024
NUM_WARPS = 4
MAX_COORDS = 8


@triton.jit
def _nonzero_mask(x_ptr, e, n_elements, sizes, strides, NDIM: tl.constexpr):
    """Which of the elements `e` (linear indices over `sizes`) are non-zero."""
    mask = e < n_elements
    v = tl.load(x_ptr + offsets(e, sizes, strides, NDIM), mask=mask, other=0)
    return (v != 0) & mask


@triton.jit
def _count_kernel(
        # pointers: the input, the per-block counts
        x_ptr, counts_ptr,
        # sizes: elements, the coalesced dims (size0 is never read)
        n_elements, size1, size2, size3, size4, size5,
        # strides of the input, in elements
        x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5,
        # meta-parameters
        NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """counts[pid] = the number of non-zeros among elements pid*BLOCK.."""
    e = program_range(BLOCK, INDEX64)
    nz = _nonzero_mask(x_ptr, e, n_elements, (1, size1, size2, size3, size4, size5),
                       (x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5), NDIM)
    tl.store(counts_ptr + tl.program_id(0), tl.sum(nz.to(tl.int64), 0))


@triton.jit
def _emit_kernel(
        # pointers: the input, the inclusive cumsum of the block counts, the coordinates
        x_ptr, ends_ptr, out_ptr,
        # sizes: elements, the coalesced dims (size0 is never read)
        n_elements, size1, size2, size3, size4, size5,
        # strides of the input, in elements
        x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5,
        # the coordinates written: each one's dim size and the elements inside that dim
        coord_size0, coord_size1, coord_size2, coord_size3, coord_size4, coord_size5,
        coord_size6, coord_size7,
        coord_inner0, coord_inner1, coord_inner2, coord_inner3, coord_inner4, coord_inner5,
        coord_inner6, coord_inner7,
        # the first coordinate written, and the coordinates per output row
        first_coord, n_coords,
        # meta-parameters
        NC: tl.constexpr, NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Coordinates first_coord..+NC of the non-zeros among elements pid*BLOCK.. into their rows
    of `out` (coordinate c is (linear // coord_inner_c) % coord_size_c); ends[pid] is the
    inclusive cumsum of the block counts."""
    e = program_range(BLOCK, INDEX64)
    nz = _nonzero_mask(x_ptr, e, n_elements, (1, size1, size2, size3, size4, size5),
                       (x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5), NDIM)
    ones = nz.to(tl.int64)
    row = tl.load(ends_ptr + tl.program_id(0)) - tl.sum(ones, 0) + tl.cumsum(ones, 0) - 1
    base = out_ptr + row * n_coords + first_coord
    linear = e.to(tl.int64)
    sizes = (coord_size0, coord_size1, coord_size2, coord_size3, coord_size4, coord_size5,
             coord_size6, coord_size7)
    inner = (coord_inner0, coord_inner1, coord_inner2, coord_inner3, coord_inner4, coord_inner5,
             coord_inner6, coord_inner7)
    for c in tl.static_range(NC):
        tl.store(base + c, (linear // inner[c]) % sizes[c], mask=nz)


@triton.jit
def _repeat_kernel(
        # pointers: the inclusive cumsum of the repeats, the result
        ends_ptr, out_ptr,
        # sizes: repeats, result elements, binary search steps
        count, total, steps,
        # meta-parameters
        BLOCK: tl.constexpr):
    """out[p] = the first i with ends[i] > p (ends: inclusive cumsum of the repeats)."""
    p = program_range(BLOCK, True)
    mask = p < total
    lo = tl.zeros((BLOCK,), tl.int64)
    hi = tl.zeros((BLOCK,), tl.int64) + count
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) // 2
        right = tl.load(ends_ptr + mid, mask=mask & active, other=0) <= p
        lo = tl.where(active & right, mid + 1, lo)
        hi = tl.where(active & ~right, mid, hi)
    tl.store(out_ptr + p, lo, mask=mask)


def _start(arr):
    activate(arr.device)
    return current_stream_handle(arr.device)


# Pointers change from call to call of one geometry: never assumed 16-byte aligned.
_PER_CALL = ("x_ptr", "counts_ptr", "ends_ptr", "out_ptr")


def _count_plan(x, sizes, strides, target=None):
    """(launch, the sizes and strides _count_launch passes) of one input geometry."""
    n = numel(sizes)
    ity = index_type(sizes, strides)
    meta = dict(NDIM=len(sizes), INDEX64=ity == "i64", BLOCK=BLOCK)
    launch = Launch(_count_kernel, (cdiv(n, BLOCK),), meta, NUM_WARPS, int_type=ity,
                    per_call=_PER_CALL, device=x.device, target=target)
    return launch, (n, dim_sizes(sizes, MAX_DIMS), dim_strides(strides, MAX_DIMS))


def _count_launch(launch, dims, stream, x, counts):
    """The call of _count_kernel."""
    n, sizes, strides = dims
    launch(stream,
           # pointers
           x, counts,
           # sizes
           n, *sizes,
           # strides
           *strides)


def _emit_plans(x, sizes, strides, shape, target=None):
    """[(launch, the sizes, strides and coordinates _emit_launch passes)]: one launch per
    MAX_COORDS coordinates of `shape`."""
    n = numel(sizes)
    ity = index_type(sizes, strides)
    inner = [numel(shape[d + 1:]) for d in range(len(shape))]
    coord_types = {f"coord_{kind}{c}": "i64" for kind in ("size", "inner")
                   for c in range(MAX_COORDS)}
    plans = []
    for first in range(0, len(shape), MAX_COORDS):
        group = range(first, min(first + MAX_COORDS, len(shape)))
        meta = dict(NC=len(group), NDIM=len(sizes), INDEX64=ity == "i64", BLOCK=BLOCK)
        launch = Launch(_emit_kernel, (cdiv(n, BLOCK),), meta, NUM_WARPS, int_type=ity,
                        types=dict(coord_types, first_coord="i64", n_coords="i64"),
                        per_call=_PER_CALL, device=x.device, target=target)
        coords = range(first, first + MAX_COORDS)
        coord_sizes = tuple(shape[d] if d in group else Const(1) for d in coords)
        coord_inner = tuple(inner[d] if d in group else Const(1) for d in coords)
        plans.append((launch, (n, dim_sizes(sizes, MAX_DIMS), dim_strides(strides, MAX_DIMS),
                               coord_sizes, coord_inner, first, len(shape))))
    return plans


def _emit_launch(launch, dims, stream, x, ends, out):
    """The call of _emit_kernel."""
    n, sizes, strides, coord_sizes, coord_inner, first, n_coords = dims
    launch(stream,
           # pointers
           x, ends, out,
           # sizes
           n, *sizes,
           # strides
           *strides,
           # coordinates
           *coord_sizes, *coord_inner, first, n_coords)


_count_plans = LaunchCache()
_emits = LaunchCache()



@register("nonzero", "cuda")
def nonzero(arr):
    """(count, ndim) int64 coordinates of the non-zero elements, in row-major order."""
    stream = _start(arr)
    shape = arr.shape or (1,)
    n = numel(shape)
    if not n:
        return CUDAArray.empty((0, arr.ndim), INT64, arr.device, stream)
    operand = Operand(arr, shape)
    sizes, strides = fit(shape, {}, {"x": operand})
    x, st = operand.arr, strides["x"]
    key = (tuple(sizes), st, x.dtype, x.device)
    counts = CUDAArray.empty((cdiv(n, BLOCK),), INT64, arr.device, stream)
    launch, dims = _count_plans.get_or_build(key, lambda: _count_plan(x, sizes, st))
    _count_launch(launch, dims, stream, x, counts)
    ends = scan("cumsum", counts, 0, False, INT64)
    total = read_int64(ends, counts.size - 1)
    out = CUDAArray.empty((total, arr.ndim), INT64, arr.device, stream)
    if total and arr.ndim:
        plans = _emits.get_or_build(key + (arr.shape,),
                                               lambda: _emit_plans(x, sizes, st, arr.shape))
        for launch, dims in plans:
            _emit_launch(launch, dims, stream, x, ends, out)
    return out


def _repeat_plan(total, device=0, target=None):
    """The search launch over `total` result elements (one specialization for every size)."""
    return Launch(_repeat_kernel, (cdiv(total, BLOCK),), dict(BLOCK=BLOCK), NUM_WARPS,
                  int_type="i64", types={"steps": "i32"},
                  per_call=("ends_ptr", "out_ptr", "count", "total", "steps"), device=device,
                  target=target)


def _repeat_launch(launch, stream, ends, out, count, total):
    """The call of _repeat_kernel."""
    launch(stream,
           # pointers
           ends, out,
           # sizes
           count, total, count.bit_length() + 1)


_repeat_plans = LaunchCache()


@register("repeat_interleave", "cuda")
def repeat_interleave(repeats):
    """0 repeated repeats[0] times, then 1 repeated repeats[1] times, ... (int64)."""
    stream = _start(repeats)
    count = repeats.shape[0]
    total = 0
    if count:
        ends = scan("cumsum", repeats, 0, False, INT64)
        total = read_int64(ends, count - 1)
    out = CUDAArray.empty((total,), INT64, repeats.device, stream)
    if total:
        launch = _repeat_plans.get_or_build((cdiv(total, BLOCK), repeats.device),
                                            lambda: _repeat_plan(total, repeats.device))
        _repeat_launch(launch, stream, ends, out, count, total)
    return out
