"""softmax and log_softmax along one dim, forward and backward, on the GPU.

Rows are the input seen as kept dims x the softmax dim (kernels/_strided_indexing.py), read
where they lie. A row that fits in a program's registers (up to ONE_PASS_LIMIT elements) is read
once and written once: max, exp, sum and the normalization all happen on the registers. Longer
rows take an online pass (running max, sum rescaled whenever the max grows) and a second pass
that writes the result: two reads and one write. Half types compute in float32 and round once;
float64 in float64.

The backward kernels (registered as "softmax_backward" and "log_softmax_backward", taking the
output gradient, the forward's output and the dim) compute y * (g - sum(g * y)) and
g - exp(y) * sum(g) the same way: one read of each input when the row fits.

Tiles: a row of the contiguous dim gets next_pow2(length) lanes, at least 1024 lanes per program
(rows shorter than that are packed several to a program), 1024 lanes per 2 warps up to 16 warps
(16384 float32 in registers: 32 per thread). When the softmax dim is strided and a kept dim is
contiguous, the tile runs along the kept dim (64 rows) so accesses stay coalesced.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn
from ._strided_indexing import (MAX_ROW_DIMS, RowLayout, cdiv, dim_sizes, dim_strides,
                                next_pow2, offsets, program_range)

# Tile sizes (see the module docstring): rows up to 16384 elements stay in registers (32 float32
# a thread at 16 warps); longer ones stream 4096-element chunks; a program gets at least 1024
# lanes; a column tile spans 64 rows of the contiguous kept dim (coalesced 256-byte reads).
ONE_PASS_LIMIT = 16384
_CHUNK = 4096
_MIN_TILE = 1024
_COLUMN_ROWS = 64


@triton.jit
def _load(x, row, j, stride, mask, other, CT: tl.constexpr):
    return tl.load(x + row[:, None] + j[None, :] * stride, mask=mask, other=other).to(CT)


@triton.jit
def _forward_row(v, m, s, LOG: tl.constexpr):
    """softmax (or log_softmax) of the tile `v` given each row's max `m` and sum of exp(v - m)."""
    if LOG:
        y = (v - m[:, None]) - tl.log(s)[:, None]
    else:
        y = tl.exp(v - m[:, None]) * div_rn(1.0, s)[:, None]
    return y


@triton.jit
def _backward_row(g, y, total, LOG: tl.constexpr):
    """The input gradient from the output gradient `g`, the output `y` and each row's
    sum(g * y) (softmax) or sum(g) (log_softmax)."""
    if LOG:
        dx = g - tl.exp(y) * total[:, None]
    else:
        dx = y * (g - total[:, None])
    return dx


@triton.jit
def _row_total(g, y, LOG: tl.constexpr):
    if LOG:
        t = tl.sum(g, 1)
    else:
        t = tl.sum(g * y, 1)
    return t


@triton.jit
def _softmax_kernel(
        # pointers: the input (BACKWARD: the output gradient), the forward's output (BACKWARD
        # only), the contiguous result
        x_ptr, y_ptr, out_ptr,
        # sizes: rows, the softmax dim's length, the coalesced kept dims (size0 is never read)
        n_rows, n_cols, row_size1, row_size2, row_size3,
        # strides, in elements: of the kept dims in x, y and out, of the softmax dim in each
        x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3,
        y_row_stride0, y_row_stride1, y_row_stride2, y_row_stride3,
        out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3,
        x_col_stride, y_col_stride, out_col_stride,
        # meta-parameters
        LOG: tl.constexpr, BACKWARD: tl.constexpr, ONE_PASS: tl.constexpr,
        ROW_DIMS: tl.constexpr, CT: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr,
        BL: tl.constexpr):
    """Rows pid*BM.. of softmax(x) (BACKWARD: the gradient from g = x and the output y)."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < n_rows
    sizes = (1, row_size1, row_size2, row_size3)
    x_row = offsets(rows, sizes, (x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3),
                    ROW_DIMS)
    y_row = offsets(rows, sizes, (y_row_stride0, y_row_stride1, y_row_stride2, y_row_stride3),
                    ROW_DIMS)
    out_row = offsets(rows, sizes,
                      (out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3),
                      ROW_DIMS)
    lane = tl.arange(0, BL)
    out_ty = out_ptr.dtype.element_ty
    if ONE_PASS:
        mask = row_mask[:, None] & (lane < n_cols)[None, :]
        if BACKWARD:
            g = _load(x_ptr, x_row, lane, x_col_stride, mask, 0.0, CT)
            yv = _load(y_ptr, y_row, lane, y_col_stride, mask, 0.0, CT)
            r = _backward_row(g, yv, _row_total(g, yv, LOG), LOG)
        else:
            v = _load(x_ptr, x_row, lane, x_col_stride, mask, float("-inf"), CT)
            m = tl.max(v, 1)
            r = _forward_row(v, m, tl.sum(tl.exp(v - m[:, None]), 1), LOG)
        tl.store(out_ptr + out_row[:, None] + lane[None, :] * out_col_stride, r.to(out_ty),
                 mask=mask)
    else:
        if BACKWARD:
            total = tl.zeros((BM,), CT)
            for c in range(tl.cdiv(n_cols, BL)):
                j = c * BL + lane
                mask = row_mask[:, None] & (j < n_cols)[None, :]
                total += _row_total(_load(x_ptr, x_row, j, x_col_stride, mask, 0.0, CT),
                                    _load(y_ptr, y_row, j, y_col_stride, mask, 0.0, CT), LOG)
        else:
            m = tl.full((BM,), float("-inf"), CT)
            s = tl.zeros((BM,), CT)
            for c in range(tl.cdiv(n_cols, BL)):
                j = c * BL + lane
                mask = row_mask[:, None] & (j < n_cols)[None, :]
                v = _load(x_ptr, x_row, j, x_col_stride, mask, float("-inf"), CT)
                m_new = tl.maximum(m, tl.max(v, 1))
                e = tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new[:, None]))
                s = s * tl.where(m == m_new, 1.0, tl.exp(m - m_new)) + tl.sum(e, 1)
                m = m_new
        for c in range(tl.cdiv(n_cols, BL)):
            j = c * BL + lane
            mask = row_mask[:, None] & (j < n_cols)[None, :]
            if BACKWARD:
                r = _backward_row(_load(x_ptr, x_row, j, x_col_stride, mask, 0.0, CT),
                                  _load(y_ptr, y_row, j, y_col_stride, mask, 0.0, CT), total,
                                  LOG)
            else:
                v = _load(x_ptr, x_row, j, x_col_stride, mask, float("-inf"), CT)
                r = _forward_row(v, m, s, LOG)
            tl.store(out_ptr + out_row[:, None] + j[None, :] * out_col_stride, r.to(out_ty),
                     mask=mask)


class _Plan:
    """Tile and warps for a layout (see the module docstring)."""

    def __init__(self, layout):
        rows, length = layout.rows, layout.length
        red_unit = layout.red_strides[0][-1] == 1 and length > 1
        kept_unit = layout.kept_strides[0][-1] == 1 and layout.kept_sizes[-1] > 1
        if kept_unit and not red_unit:
            self.bm = min(next_pow2(rows), _COLUMN_ROWS)
            self.one_pass = next_pow2(length) * self.bm <= ONE_PASS_LIMIT
            self.bl = next_pow2(length) if self.one_pass else _CHUNK // self.bm
        else:
            self.one_pass = length <= ONE_PASS_LIMIT
            self.bl = next_pow2(length) if self.one_pass else _CHUNK
            self.bm = min(next_pow2(rows), max(1, _MIN_TILE // self.bl))
        self.num_warps = max(1, min(16, self.bm * self.bl // 512))


def _softmax_args(dims, x, y, out):
    """_softmax_kernel's arguments before its meta-parameters; `dims` as _plan makes them."""
    n_rows, n_cols, row_sizes, row_strides, col_strides = dims
    x_rows, y_rows, out_rows = row_strides
    return (
        # pointers
        x, y, out,
        # sizes
        n_rows, n_cols, *row_sizes,
        # strides
        *x_rows, *y_rows, *out_rows, *col_strides)


def _softmax_launch(launch, dims, stream, x, y, out):
    """The call of _softmax_kernel; `dims` as _plan makes them."""
    launch(stream, *_softmax_args(dims, x, y, out))


def _plan(x, y, out, dims, backward, log, target=None):
    """(launch, the sizes and strides _softmax_launch passes) for arrays laid out like these
    (x and y read where they lie, out contiguous)."""
    arrays = [x, y, out]
    present = [a for a in arrays if a is not None]
    layout = RowLayout(out.shape, dims, [a.element_strides() for a in present], reorder=False)
    plan = _Plan(layout)
    ity = layout.index_type()
    row_strides, col_strides, k = [], [], 0
    for a in arrays:
        kept, red = (layout.kept_strides[k], layout.red_strides[k][0]) if a is not None else ((), 0)
        k += a is not None
        row_strides.append(dim_strides(kept, MAX_ROW_DIMS))
        col_strides.append(Const(red) if red in (0, 1) else red)
    ct = tl.float64 if out.dtype == np.float64 else tl.float32
    meta = dict(LOG=log, BACKWARD=backward, ONE_PASS=plan.one_pass,
                ROW_DIMS=len(layout.kept_sizes), CT=ct, INDEX64=ity == "i64", BM=plan.bm,
                BL=plan.bl)
    launch = Launch(_softmax_kernel, (cdiv(layout.rows, plan.bm),), meta, plan.num_warps,
                    int_type=ity, device=out.device, target=target)
    return launch, (layout.rows, layout.length, dim_sizes(layout.kept_sizes, MAX_ROW_DIMS),
                    tuple(row_strides), tuple(col_strides))


def _bound(x, y, out, dims, backward, log):
    """(bound kernel, grid, the arguments after the three pointers) of the launch for arrays
    laid out like these: all a later call of the same geometry needs besides the addresses."""
    launch, geometry = _plan(x, y, out, dims, backward, log)
    args = _softmax_args(geometry, x, y, out)
    kernel = launch.bind(args)
    return kernel, launch.grid, args[3:kernel.n_args]


_launches = LaunchCache()


def _run(x, y, dim, backward, log):
    """A new contiguous array: softmax (or its gradient, from g = x and the output y) along
    `dim`. A geometry seen before launches with one dict lookup and its kept arguments."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    out = CUDAArray.empty(x.shape, x.dtype, device, stream)
    if out.storage.nbytes:
        key = (x.shape, x.strides, x.dtype, x.ptr % 16 == 0,
               None if y is None else (y.strides, y.dtype, y.ptr % 16 == 0), dim, backward, log,
               device)
        bound = _launches.get(key)
        if bound is None:
            dims = (dim,) if x.shape else ()
            bound = _launches.get_or_build(key, lambda: _bound(x, y, out, dims, backward, log))
        kernel, grid, args = bound
        kernel(grid, stream, x.ptr, None if y is None else y.ptr, out.ptr, *args)
    return out


@register("softmax", "cuda")
def softmax(x, dim):
    return _run(x, None, dim, False, False)


@register("log_softmax", "cuda")
def log_softmax(x, dim):
    return _run(x, None, dim, False, True)


@register("softmax_backward", "cuda")
def softmax_backward(grad, output, dim):
    """d softmax: output * (grad - sum(grad * output, dim))."""
    return _run(grad, output, dim, True, False)


@register("log_softmax_backward", "cuda")
def log_softmax_backward(grad, output, dim):
    """d log_softmax: grad - exp(output) * sum(grad, dim)."""
    return _run(grad, output, dim, True, True)
