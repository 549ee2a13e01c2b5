"""Shape kernels that copy, on the GPU: cat, flip, roll, tril/triu.

flip, roll, tril and triu share one gather kernel: each element of the fresh contiguous output
finds its source element in the input view from its coordinates. A flip is a view with the
flipped dims' strides negated (the kernel never sees it as anything else), a roll subtracts the
shift from a coordinate modulo the dim's size, and tril/triu zero the elements on the wrong side
of the diagonal of the last two dims. Dims that do none of these are merged with their
neighbours where the input allows, so most calls index over two or three dims.

cat writes each input into its slice of the output. Few inputs (CAT_COPY_LIMIT or fewer) and
non-contiguous ones go through the strided copy kernel, one launch each; the contiguous inputs
of a cat of many are copied by one launch over a grid of (blocks of BLOCK elements, inputs),
driven by a table of one row per input (address, width, column offset, size), uploaded with
the call: a few dozen bytes, whatever the inputs' sizes.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.graphs import upload
from ..runtime.stream import current_stream_handle
from ._strided_indexing import MAX_DIMS, cdiv
from .copy import strided_copy

# 1024 elements a program, 4 warps: 8 a thread, a few independent loads each in flight.
BLOCK = 1024
CAT_COPY_LIMIT = 2
MAX_GRID_Y = 65535  # CUDA's limit on grid axis 1: the inputs one table launch takes


@triton.jit
def _gather_kernel(
        # pointers
        x_ptr, out_ptr,
        # sizes: elements, then each dim's (up to MAX_DIMS)
        n_elements, size0, size1, size2, size3, size4, size5,
        # strides of x, in elements
        x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5,
        # each dim's roll shift; the diagonal of tril/triu
        shift0, shift1, shift2, shift3, shift4, shift5, diagonal,
        # meta-parameters
        NDIM: tl.constexpr, TRIANGLE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = x at i's coordinates, each minus its dim's shift modulo the size; TRIANGLE 1
    (tril) or 2 (triu) zeroes elements off the kept side of `diagonal` in the last two dims."""
    linear = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = linear < n_elements
    sizes = (size0, size1, size2, size3, size4, size5)
    strides = (x_stride0, x_stride1, x_stride2, x_stride3, x_stride4, x_stride5)
    shifts = (shift0, shift1, shift2, shift3, shift4, shift5)
    rest = linear
    src = tl.zeros_like(linear)
    col = tl.zeros_like(linear)
    row = tl.zeros_like(linear)
    for d in tl.static_range(NDIM - 1, -1, -1):
        if d > 0:
            c = rest % sizes[d]
            rest = rest // sizes[d]
        else:
            c = rest
        if d == NDIM - 1:
            col = c
        if d == NDIM - 2:
            row = c
        s = c - shifts[d]
        src += tl.where(s < 0, s + sizes[d], s) * strides[d]
    v = tl.load(x_ptr + src, mask=mask)
    if TRIANGLE == 1:
        v = tl.where(col - row <= diagonal, v, tl.zeros_like(v))
    if TRIANGLE == 2:
        v = tl.where(col - row >= diagonal, v, tl.zeros_like(v))
    tl.store(out_ptr + linear, v, mask=mask)


@triton.jit
def _cat_table_kernel(
        # pointers: the table (int64 rows of four, one per input), the output
        table_ptr, out_ptr,
        # the output's row length (its dims from the cat dim on)
        out_width,
        # meta-parameters
        BLOCK: tl.constexpr):
    """Block program_id(0) of input program_id(1) (the table's row): BLOCK elements of that
    contiguous input, seen as rows of `width` elements, written at column `column` of the
    output's rows of out_width elements. The grid spans the largest input; a smaller one's
    programs past its end store nothing."""
    entry = table_ptr + tl.program_id(1).to(tl.int64) * 4
    src = tl.load(entry).to(tl.pointer_type(out_ptr.dtype.element_ty))
    width = tl.load(entry + 1)
    column = tl.load(entry + 2)
    size = tl.load(entry + 3)
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < size
    v = tl.load(src + e, mask=mask)
    tl.store(out_ptr + (e // width) * out_width + column + e % width, v, mask=mask)


def _merge_dims(shape, strides, keep_apart):
    """(sizes, strides, shifts) with size-1 dims dropped (unless kept apart) and neighbours that
    are not kept apart merged when the input is contiguous across them. `keep_apart` maps a dim
    to its shift (rolled dims and tril/triu's last two)."""
    dims = []
    for d, (size, stride) in enumerate(zip(shape, strides)):
        special = d in keep_apart
        if size == 1 and not special:
            continue
        if dims and not special and not dims[-1][3] and dims[-1][1] == stride * size:
            prev = dims[-1]
            dims[-1] = (prev[0] * size, stride, 0, False)
            continue
        dims.append((size, stride, keep_apart.get(d, 0), special))
    if not dims:
        dims = [(1, 0, 0, False)]
    return [d[0] for d in dims], [d[1] for d in dims], [d[2] for d in dims]


def _gather_launch(launch, dims, stream, x, out):
    """The call of _gather_kernel; `dims` as _gather_plan makes them."""
    n, sizes, strides, shifts, diagonal = dims
    launch(stream,
           # pointers
           x, out,
           # sizes
           n, *sizes,
           # strides
           *strides,
           # shifts and diagonal
           *shifts, diagonal)


def _gather_plan(n, sizes, strides, shifts, triangle, device, target=None):
    """(launch, the sizes, strides and shifts _gather_launch passes) of one geometry."""
    pad = MAX_DIMS - len(sizes)
    meta = dict(NDIM=len(sizes), TRIANGLE=triangle[0], BLOCK=BLOCK)
    launch = Launch(_gather_kernel, (cdiv(n, BLOCK),), meta, 4, int_type="i64", device=device,
                    target=target)
    return launch, (n, tuple(sizes) + (1,) * pad, tuple(strides) + (0,) * pad,
                    tuple(shifts) + (0,) * pad, triangle[1])


_launches = LaunchCache()


def _gather(x, shifts, triangle=(0, 0)):
    """A contiguous copy of the view `x`, rolled by `shifts` ({dim: shift}) and masked to a
    triangle ((1 or 2, diagonal); (0, 0): none)."""
    activate(x.device)
    stream = current_stream_handle(x.device)
    out = CUDAArray.empty(x.shape, x.dtype, x.device, stream)
    if out.size == 0:
        return out
    apart = dict(shifts)
    if triangle[0]:
        apart.setdefault(x.ndim - 2, 0)
        apart.setdefault(x.ndim - 1, 0)
    sizes, strides, steps = _merge_dims(x.shape, x.element_strides(), apart)
    if len(sizes) > MAX_DIMS:
        return _gather_in_steps(x, shifts, triangle)
    key = (tuple(sizes), tuple(strides), tuple(steps), triangle, x.dtype, x.ptr % 16 == 0,
           x.device)
    launch, dims = _launches.get_or_build(
        key, lambda: _gather_plan(out.size, sizes, strides, steps, triangle, x.device))
    _gather_launch(launch, dims, stream, x, out)
    return out


def contiguous_copy(arr):
    """A contiguous copy of the view `arr` (on the current stream)."""
    stream = current_stream_handle(arr.device)
    out = CUDAArray.empty(arr.shape, arr.dtype, arr.device, stream)
    strided_copy(out, arr, stream)
    return out


def _gather_in_steps(x, shifts, triangle):
    """More dims than the kernel indexes (rare): a contiguous copy first, one roll at a time."""
    out = x if x.is_contiguous() else contiguous_copy(x)
    for dim, shift in shifts.items():
        out = _gather(out, {dim: shift})
    return _gather(out, {}, triangle) if triangle[0] else out


def _flipped(arr, dims):
    """`arr` seen with `dims` reversed (negative strides)."""
    strides, offset = list(arr.strides), arr.offset
    for d in dims:
        if arr.shape[d] > 1:
            offset += (arr.shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    return CUDAArray(arr.storage, arr.shape, strides, offset, arr.dtype)


@register("flip", "cuda")
def flip(arr, dims):
    return _gather(_flipped(arr, dims) if arr.size else arr, {})


@register("roll", "cuda")
def roll(arr, shifts, dims):
    total = {}
    for shift, dim in zip(shifts, dims):
        total[dim] = total.get(dim, 0) + shift
    return _gather(arr, {d: s % arr.shape[d] for d, s in total.items() if arr.shape[d]})


@register("tril", "cuda")
def tril(arr, k):
    return _gather(arr, {}, (1, k))


@register("triu", "cuda")
def triu(arr, k):
    return _gather(arr, {}, (2, k))


def _slice(out, dim, start, size):
    return CUDAArray(out.storage, out.shape[:dim] + (size,) + out.shape[dim + 1:], out.strides,
                     out.offset + start * out.strides[dim], out.dtype)


def _upload(host, device, stream):
    """A device copy of the int64 host array `host` (enqueued on `stream`)."""
    out = CUDAArray.empty(host.shape, host.dtype, device, stream)
    upload(out.ptr, host, stream)
    return out


def _cat_table(parts, out, dim, stream):
    """Launches copying the contiguous `parts` ((array, first index along dim) pairs), one per
    MAX_GRID_Y of them."""
    inner = 1
    for size in out.shape[dim + 1:]:
        inner *= size
    out_width = out.shape[dim] * inner
    for first in range(0, len(parts), MAX_GRID_Y):
        chunk = parts[first:first + MAX_GRID_Y]
        rows = [(arr.ptr, arr.shape[dim] * inner, start * inner, arr.size) for arr, start in chunk]
        table = _upload(np.array(rows, np.int64), out.device, stream)
        blocks = cdiv(max(arr.size for arr, _ in chunk), BLOCK)
        key = ("cat", out.dtype, out_width, blocks, len(chunk), out.device)
        launch = _launches.get_or_build(key, lambda: _cat_plan(blocks, len(chunk), out.device))
        _cat_launch(launch, stream, table, out, out_width)


def _cat_launch(launch, stream, table, out, out_width):
    """The call of _cat_table_kernel."""
    launch(stream, table, out, out_width)


def _cat_plan(blocks, inputs, device, target=None):
    """The launch of _cat_table_kernel over `blocks` blocks of each of `inputs` inputs."""
    return Launch(_cat_table_kernel, (blocks, inputs), dict(BLOCK=BLOCK), 4, int_type="i64",
                  device=device, target=target)


@register("cat", "cuda")
def cat(arrays, dim):
    """Arrays of one dtype joined along `dim` (shapes checked by the ops layer)."""
    first = arrays[0]
    activate(first.device)
    stream = current_stream_handle(first.device)
    shape = list(first.shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    out = CUDAArray.empty(tuple(shape), first.dtype, first.device, stream)
    if out.size == 0:
        return out
    parts, start = [], 0
    for arr in arrays:
        parts.append((arr, start))
        start += arr.shape[dim]
    parts = [(a, s) for a, s in parts if a.size]
    batched = len(parts) > CAT_COPY_LIMIT
    table = []
    for arr, start in parts:
        if batched and arr.is_contiguous():
            table.append((arr, start))
        else:
            strided_copy(_slice(out, dim, start, arr.shape[dim]), arr, stream)
    if table:
        _cat_table(table, out, dim, stream)
    return out
