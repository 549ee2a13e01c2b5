"""Kernels whose output size depends on the data: nonzero and repeat_interleave.

Both find their output length on the device and read it on the host once (a device-to-host
sync, as in PyTorch), then fill the output in parallel:

- nonzero: each block of BLOCK elements counts its non-zeros; an inclusive cumsum of the counts
  (reduce.py's scan) gives each block its first output row and, at the end, the total; a second
  pass re-reads the block, ranks its non-zeros with a block-local cumsum and writes their
  coordinates (row-major order, as numpy's argwhere).
- repeat_interleave: the inclusive cumsum of the repeats gives the total; output position p
  holds the first i whose running total exceeds p (a binary search per element).
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import compile_kernel, get_kernel
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, fit, numel, read_int64
from ._recipe import (MAX_DIMS, Recipe, RecipeCache, Slot, cdiv, const, index_type, offsets,
                       placeholder, pointer_of, program_range, size_entries, stride_entries)
from .reduce import scan

BLOCK = 1024
NUM_WARPS = 4
MAX_COORDS = 8


@triton.jit
def _nonzero_mask(x, e, n, size1, size2, size3, size4, size5,
                  x_s0, x_s1, x_s2, x_s3, x_s4, x_s5, NDIM: tl.constexpr):
    mask = e < n
    sizes = (1, size1, size2, size3, size4, size5)
    v = tl.load(x + offsets(e, sizes, (x_s0, x_s1, x_s2, x_s3, x_s4, x_s5), NDIM), mask=mask,
                other=0)
    return (v != 0) & mask


@triton.jit
def _count_kernel(x, counts, n, size1, size2, size3, size4, size5,
                  x_s0, x_s1, x_s2, x_s3, x_s4, x_s5,
                  NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """counts[pid] = the number of non-zeros among elements pid*BLOCK.."""
    e = program_range(BLOCK, INDEX64)
    nz = _nonzero_mask(x, e, n, size1, size2, size3, size4, size5,
                       x_s0, x_s1, x_s2, x_s3, x_s4, x_s5, NDIM)
    tl.store(counts + tl.program_id(0), tl.sum(nz.to(tl.int64), 0))


@triton.jit
def _emit_kernel(x, ends, out, n, size1, size2, size3, size4, size5,
                 x_s0, x_s1, x_s2, x_s3, x_s4, x_s5,
                 c0, c1, c2, c3, c4, c5, c6, c7, d0, d1, d2, d3, d4, d5, d6, d7, first, ncols,
                 NC: tl.constexpr, NDIM: tl.constexpr, INDEX64: tl.constexpr,
                 BLOCK: tl.constexpr):
    """Coordinates first..first+NC of the non-zeros among elements pid*BLOCK.. into their rows
    of `out` (coordinate c is (linear // d_c) % c_c); ends[pid] is the inclusive cumsum of the
    block counts."""
    e = program_range(BLOCK, INDEX64)
    nz = _nonzero_mask(x, e, n, size1, size2, size3, size4, size5,
                       x_s0, x_s1, x_s2, x_s3, x_s4, x_s5, NDIM)
    ones = nz.to(tl.int64)
    row = tl.load(ends + tl.program_id(0)) - tl.sum(ones, 0) + tl.cumsum(ones, 0) - 1
    base = out + row * ncols + first
    linear = e.to(tl.int64)
    sizes = (c0, c1, c2, c3, c4, c5, c6, c7)
    inner = (d0, d1, d2, d3, d4, d5, d6, d7)
    for c in tl.static_range(NC):
        tl.store(base + c, (linear // inner[c]) % sizes[c], mask=nz)


@triton.jit
def _repeat_kernel(ends, out, count, total, steps, BLOCK: tl.constexpr):
    """out[p] = the first i with ends[i] > p (ends: inclusive cumsum of the repeats)."""
    p = program_range(BLOCK, True)
    mask = p < total
    lo = tl.zeros((BLOCK,), tl.int64)
    hi = tl.zeros((BLOCK,), tl.int64) + count
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) // 2
        right = tl.load(ends + mid, mask=mask & active, other=0) <= p
        lo = tl.where(active & right, mid + 1, lo)
        hi = tl.where(active & ~right, mid, hi)
    tl.store(out + p, lo, mask=mask)


def _start(arr):
    activate(arr.device)
    return current_stream_handle(arr.device)


def _scan_entries(x, sizes, strides):
    ity = index_type(sizes, strides)
    entries = [("x", Slot("x"), pointer_of(x.dtype)), ("n", numel(sizes), ity)]
    entries += size_entries("", sizes, MAX_DIMS, ity)
    entries += stride_entries("x_", strides, MAX_DIMS, ity)
    return entries + const(NDIM=len(sizes), INDEX64=ity == "i64", BLOCK=BLOCK)


def _count_recipe(x, sizes, strides, target=None):
    entries = _scan_entries(x, sizes, strides) + [("counts", Slot("counts"), "*i64")]
    recipe = Recipe(x.device, target)
    recipe.add(_count_kernel, (cdiv(numel(sizes), BLOCK),), entries, NUM_WARPS)
    return recipe


def _emit_recipe(x, sizes, strides, shape, target=None):
    """One launch per MAX_COORDS coordinates of `shape`."""
    recipe = Recipe(x.device, target)
    inner = [numel(shape[d + 1:]) for d in range(len(shape))]
    for first in range(0, len(shape), MAX_COORDS):
        group = range(first, min(first + MAX_COORDS, len(shape)))
        entries = _scan_entries(x, sizes, strides)
        entries += [("ends", Slot("ends"), "*i64"), ("out", Slot("out"), "*i64"),
                    ("first", first, "i64"), ("ncols", len(shape), "i64")]
        for c in range(MAX_COORDS):
            used = c < len(group)
            entries += [(f"c{c}", shape[first + c] if used else 1, "i64" if used else "constexpr"),
                        (f"d{c}", inner[first + c] if used else 1, "i64" if used else "constexpr")]
        entries += const(NC=len(group))
        recipe.add(_emit_kernel, (cdiv(numel(sizes), BLOCK),), entries, NUM_WARPS)
    return recipe


_count_recipes = RecipeCache()
_emit_recipes = RecipeCache()


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
    _count_recipes.get_or_build(key, lambda: _count_recipe(x, sizes, st)).run(
        stream, {"x": x, "counts": counts})
    ends = scan("cumsum", counts, 0, False, INT64)
    total = read_int64(ends, counts.size - 1)
    out = CUDAArray.empty((total, arr.ndim), INT64, arr.device, stream)
    if total and arr.ndim:
        recipe = _emit_recipes.get_or_build(key + (arr.shape,),
                                            lambda: _emit_recipe(x, sizes, st, arr.shape))
        recipe.run(stream, {"x": x, "ends": ends, "out": out})
    return out


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
        kern = get_kernel(_repeat_kernel, _REPEAT_SIGNATURE, {"BLOCK": BLOCK}, (), NUM_WARPS,
                          device=repeats.device)
        kern((cdiv(total, BLOCK),), stream, ends.ptr, out.ptr, count, total,
             count.bit_length() + 1)
    return out


_REPEAT_SIGNATURE = {"ends": "*i64", "out": "*i64", "count": "i64", "total": "i64",
                     "steps": "i32", "BLOCK": "constexpr"}


def compile_all(target):
    """Counting and emitting for each element type and up to 8 and 9 coordinates, and the
    repeat search, compiled for `target` (CI, no GPU needed)."""
    import ml_dtypes
    for dtype in (np.bool_, np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8,
                  np.uint8, np.int16, np.int32, np.int64):
        x = placeholder((300, 70), dtype, (1, 300))
        _count_recipe(x, (300, 70), (1, 300), target)
        _emit_recipe(x, (300, 70), (1, 300), (300, 70), target)
    x = placeholder((2,) * 9, np.bool_)
    _emit_recipe(x, (512,), (1,), (2,) * 9, target)
    compile_kernel(_repeat_kernel, _REPEAT_SIGNATURE, {"BLOCK": BLOCK}, (), NUM_WARPS,
                   target_=target)
