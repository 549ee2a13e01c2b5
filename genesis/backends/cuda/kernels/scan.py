"""Scan kernels: the running sums and products (cumsum, cumprod) of backends/cpu/reduce.py on
the GPU.

A scan sees its input as reduce.py's reductions do: rows (the kept dims, coalesced and indexed
in the kernel, kernels/_strided_indexing.py) by the scanned dim. Each program takes BM rows and
walks the scanned dim in chunks of BL, scanning each chunk with `tl.cumsum`/`tl.cumprod` and
adding (multiplying) the running carry of the chunks before it; REVERSE walks from the end. The
tile shape and warps are those of a one-accumulator reduction of the same layout (reduce.py's
_Plan); they accumulate as a sum does, in the output's type, float32 for half types and int64
for integers. No splits: each row is scanned by one program. Layouts whose kept dims do not
merge into MAX_ROW_DIMS are scanned one index of the first kept dim at a time.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import (MAX_ROW_DIMS, RowLayout, dim_sizes, dim_strides, offsets,
                                program_range, select)
from .reduce import _TL, _acc_dtype, _mul, _Plan


@triton.jit
def _scan_kernel(
        # pointers
        x_ptr, out_ptr,
        # sizes: rows, the scanned length, the coalesced kept dims (size0 is never read)
        n_rows, n_cols, row_size1, row_size2, row_size3,
        # strides, in elements: of the kept dims in x and in out, of the scanned dim in each
        x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3,
        out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3,
        x_col_stride, out_col_stride,
        # meta-parameters
        KIND: tl.constexpr, REVERSE: tl.constexpr, ROW_DIMS: tl.constexpr,
        ACC: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Inclusive cumsum/cumprod of rows pid*BM.. along the scanned dim, chunk by chunk with a
    running carry (from the end when REVERSE)."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < n_rows
    sizes = (1, row_size1, row_size2, row_size3)
    x_row = offsets(rows, sizes, (x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3),
                    ROW_DIMS)
    o_row = offsets(rows, sizes,
                    (out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3),
                    ROW_DIMS)
    identity: tl.constexpr = 0 if KIND == "cumsum" else 1
    carry = tl.full((BM,), identity, ACC)
    lane = tl.arange(0, BL)
    for c in range(tl.cdiv(n_cols, BL)):
        if REVERSE:
            j = n_cols - (c + 1) * BL + lane
        else:
            j = c * BL + lane
        mask = row_mask[:, None] & ((j >= 0) & (j < n_cols))[None, :]
        v = tl.load(x_ptr + x_row[:, None] + j[None, :] * x_col_stride, mask=mask).to(ACC)
        v = tl.where(mask, v, identity)
        if KIND == "cumsum":
            scanned = tl.cumsum(v, 1, reverse=REVERSE) + carry[:, None]
            carry = carry + tl.sum(v, 1)
        else:
            scanned = tl.cumprod(v, 1, reverse=REVERSE) * carry[:, None]
            carry = carry * tl.reduce(v, 1, _mul)
        tl.store(out_ptr + o_row[:, None] + j[None, :] * out_col_stride,
                 scanned.to(out_ptr.dtype.element_ty), mask=mask)


_scans = LaunchCache()


def scan(kind, x, dim, reverse, out_dtype):
    """Inclusive `kind` ("cumsum" or "cumprod") of `x` along `dim`: a new contiguous array."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    out = CUDAArray.empty(x.shape, out_dtype, device, stream)
    if out.size:
        _write_scan(kind, x, dim, reverse, out, stream)
    return out


def _write_scan(kind, x, dim, reverse, out, stream):
    key = (kind, x.shape, x.strides, x.dtype, x.ptr % 16 == 0, out.ptr % 16 == 0, dim, reverse,
           out.dtype, x.device)
    plan = _scans.get_or_build(key, lambda: _scan_plan(kind, x, dim, reverse, out))
    if plan is not None:
        _scan_launch(*plan, stream, x, out)
        return
    lead = 1 if dim == 0 else 0
    for i in range(x.shape[lead]):
        _write_scan(kind, select(x, lead, i), dim - (lead < dim), reverse, select(out, lead, i),
                    stream)


def _scan_launch(launch, dims, stream, x, out):
    """The call of _scan_kernel; `dims` as _scan_plan makes them."""
    n_rows, n_cols, row_sizes, x_row_strides, out_row_strides, x_col_stride, out_col_stride = dims
    launch(stream,
           # pointers
           x, out,
           # sizes
           n_rows, n_cols, *row_sizes,
           # strides
           *x_row_strides, *out_row_strides, x_col_stride, out_col_stride)


def _scan_plan(kind, x, dim, reverse, out, target=None):
    """(launch, its sizes and strides), or None when more than MAX_ROW_DIMS kept dims do not
    merge (rare: the caller then scans one index of the first kept dim at a time)."""
    dims = (dim,) if x.ndim else ()
    layout = RowLayout(x.shape, dims, [x.element_strides(), out.element_strides()], False)
    if not layout.fits():
        return None
    plan = _Plan(layout, 1)
    ity = layout.index_type()
    acc = _acc_dtype("sum", out.dtype)
    meta = dict(KIND=kind, REVERSE=reverse, ROW_DIMS=len(layout.kept_sizes), ACC=_TL[acc.name],
                INDEX64=ity == "i64", BM=plan.bm, BL=plan.br)
    launch = Launch(_scan_kernel, (plan.grid_m,), meta, plan.num_warps, int_type=ity,
                    device=x.device, target=target)
    x_col, out_col = (s if s != 1 else Const(1) for s in
                      (layout.red_strides[0][0], layout.red_strides[1][0]))
    dims = (layout.rows, layout.length, dim_sizes(layout.kept_sizes, MAX_ROW_DIMS),
            dim_strides(layout.kept_strides[0], MAX_ROW_DIMS),
            dim_strides(layout.kept_strides[1], MAX_ROW_DIMS), x_col, out_col)
    return launch, dims


@register("cumsum", "cuda")
def cumsum(x, dim, reverse, dtype):
    """Inclusive running sum along `dim` giving `dtype` (from the end when `reverse`)."""
    return scan("cumsum", x, dim, reverse, dtype.numpy_dtype)


@register("cumprod", "cuda")
def cumprod(x, dim, dtype):
    return scan("cumprod", x, dim, False, dtype.numpy_dtype)
