"""median and median_dim on the GPU: the lower median and its index, as the CPU kernels give.

Each row (the input with the median dim moved last, read where it lies) is sorted stably by the
sort kernels (kernels/sort.py), then one pick kernel reads each row's element at (n - 1) // 2,
or, when the row holds a NaN (the sort puts NaN last, ties by index), its first NaN: the NaN of
lowest index, found by a binary search of the sorted row. Values and indices come from the same
position, so the index is that of the element whose value is returned (ties: the stable order,
as the CPU kernel's argsort picks).
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import cdiv
from .copy import fill
from .shape import contiguous_copy
from .sort import is_nan, key_kind, sort_rows

# One row per thread, 128 a program (4 warps): each row is a few loads, so programs stay short.
ROWS = 128


@triton.jit
def _pick_kernel(
        # pointers: sorted rows and the original index of each element, the medians and theirs
        values_ptr, indices_ptr, out_ptr, out_index_ptr,
        # sizes: rows, row length, binary search steps over a row
        n_rows, row_len, n_steps,
        # meta-parameters
        INF: tl.constexpr, BITS: tl.constexpr, BLOCK: tl.constexpr):
    """Rows pid*BLOCK.. of sorted (values, indices) rows: the lower median, or the first NaN of
    a row that has one."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < n_rows
    base = rows * row_len
    pos = tl.zeros([BLOCK], tl.int64) + (row_len - 1) // 2
    if INF:
        has_nan = is_nan(tl.load(values_ptr + base + row_len - 1, mask=mask), INF, BITS) & mask
        lo = tl.zeros([BLOCK], tl.int64)
        hi = tl.zeros([BLOCK], tl.int64) + (row_len - 1)
        for _ in range(n_steps):
            active = (lo < hi) & has_nan
            mid = (lo + hi) // 2
            nan = is_nan(tl.load(values_ptr + base + mid, mask=active), INF, BITS)
            hi = tl.where(active & nan, mid, hi)
            lo = tl.where(active & ~nan, mid + 1, lo)
        pos = tl.where(has_nan, lo, pos)
    tl.store(out_ptr + rows, tl.load(values_ptr + base + pos, mask=mask), mask=mask)
    tl.store(out_index_ptr + rows, tl.load(indices_ptr + base + pos, mask=mask), mask=mask)


def _pick_launch(launch, stream, values, indices, out, out_index, rows, length):
    """The call of _pick_kernel."""
    launch(stream,
           # pointers
           values, indices, out, out_index,
           # sizes
           rows, length, length.bit_length())


def _pick(dtype, rows, device, target=None):
    """The launch of _pick_kernel over `rows` sorted rows of `dtype`."""
    inf, bits = key_kind(dtype)
    return Launch(_pick_kernel, (cdiv(rows, ROWS),), dict(INF=inf, BITS=bits, BLOCK=ROWS), 4,
                  int_type="i64", types={"n_steps": "i32"}, device=device, target=target)


_picks = LaunchCache()


def _median_rows(x, dim, out_shape):
    """(values, int64 indices) of shape `out_shape`: the lower median of x along `dim`."""
    activate(x.device)
    stream = current_stream_handle(x.device)
    vout = CUDAArray.empty(out_shape, x.dtype, x.device, stream)
    iout = CUDAArray.empty(out_shape, np.int64, x.device, stream)
    length = x.shape[dim]
    rows = vout.size
    if rows == 0 or length == 0:
        return vout, iout
    order = [d for d in range(x.ndim) if d != dim] + [dim]
    last = CUDAArray(x.storage, tuple(x.shape[d] for d in order),
                     tuple(x.strides[d] for d in order), x.offset, x.dtype)
    values, indices = sort_rows(last, x.ndim - 1, False, length, False)
    launch = _picks.get_or_build((x.dtype, rows, length, x.device),
                                 lambda: _pick(x.dtype, rows, x.device))
    _pick_launch(launch, stream, values, indices, vout, iout, rows, length)
    return vout, iout


@register("median_dim", "cuda")
def median_dim(x, dim, keepdim):
    """(values, indices) of the lower median along `dim`."""
    if x.ndim == 0:
        x, dim = CUDAArray(x.storage, (1,), (x.itemsize,), x.offset, x.dtype), 0
        return _median_rows(x, dim, ())
    shape = list(x.shape)
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    return _median_rows(x, dim, tuple(shape))


@register("median", "cuda")
def median(x):
    """The lower median of all elements (nan for an empty input)."""
    if x.size == 0:
        activate(x.device)
        stream = current_stream_handle(x.device)
        out = CUDAArray.empty((), x.dtype, x.device, stream)
        fill(out, float("nan"), stream)
        return out
    if not x.is_contiguous():
        x = contiguous_copy(x)
    flat = CUDAArray(x.storage, (x.size,), (x.itemsize,), x.offset, x.dtype)
    return _median_rows(flat, 0, ())[0]
