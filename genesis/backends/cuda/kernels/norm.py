"""LayerNorm and RMSNorm, forward and backward, fused: one kernel each way.

Registered as "layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd" and "rms_norm_bwd" (the ops
layer uses them when present; see genesis/nn/functional/fused_norm.py). The input is seen as
rows x N normalized elements (the trailing dims); rows must be evenly strided with contiguous
elements, other views are copied first.

Forward: a row that fits (N <= ONE_PASS_LIMIT) is read once into registers; the mean and the
variance are computed two-pass on the registers (exact, no E[x^2] - E[x]^2 cancellation), then
y = (x - mean) * rstd * w + b is written once, rounded once to x's dtype. Longer rows take a
Welford pass (the merge of kernels/reduce.py) and a second pass writing y. mean and rstd are
saved in float32 (float64 for float64 inputs). RMSNorm is the same without the mean.

Backward: each of G programs (G = min(rows, 1024), fixed, so results are the same on every GPU)
takes a contiguous block of rows; per row dx = rstd * (w dy - xhat * mean(xhat w dy) -
mean(w dy)), and dw, db are accumulated per program, in registers (or, for rows longer than
ONE_PASS_LIMIT, in the program's own row of the partial buffer), then the G partial rows are
summed by the deterministic column reduction of kernels/reduce.py: no atomics.

Tiles: the whole row (next_pow2(N) lanes), packing rows up to 1024 lanes per program for short
rows; 1024 lanes per 2 warps, up to 16 warps (16384 float32 in registers, 32 per thread).
"""

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn
from ._strided_indexing import cdiv, coalesce, next_pow2
from .reduce import _contiguous, _welford, reduce

# Tiles (see the module docstring and _tile): rows of up to 16384 elements stay in registers,
# longer ones stream 4096-element chunks; a program gets at least 1024 lanes. The backward runs
# on a fixed 1024 programs, so its partial sums (and bits) are the same on every GPU.
ONE_PASS_LIMIT = 16384
_CHUNK = 4096
_MIN_TILE = 1024
_BACKWARD_PROGRAMS = 1024


@triton.jit
def _rows(pid, BM: tl.constexpr):
    return pid.to(tl.int64) * BM + tl.arange(0, BM)


@triton.jit
def _load(ptr, rows, cols, stride, mask, CT: tl.constexpr):
    return tl.load(ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(CT)


@triton.jit
def _load_vector(ptr, cols, mask, CT: tl.constexpr):
    """A weight/bias chunk as a [1, BN] row (1 where absent: the affine part is optional)."""
    if ptr is None:
        v = tl.full((1, cols.shape[0]), 1.0, CT)
    else:
        v = tl.load(ptr + cols, mask=mask, other=0.0).to(CT)[None, :]
    return v


@triton.jit
def _columns(start, cols, N, row_mask):
    """(column indices, their mask, the tile's mask) of the chunk starting at `start`."""
    c = start + cols
    col_mask = c < N
    return c, col_mask, row_mask[:, None] & col_mask[None, :]


@triton.jit
def _rstd(var, eps):
    return libdevice.rsqrt(var + eps)


@triton.jit
def _forward_kernel(
        # pointers: the input rows, the affine weight and bias (or None), the contiguous output,
        # each row's mean (None for RMSNorm) and reciprocal standard deviation
        x_ptr, weight_ptr, bias_ptr, y_ptr, mean_ptr, rstd_ptr,
        # sizes: rows, normalized elements per row
        n_rows, n_cols,
        # strides, in elements, between rows
        x_row_stride, y_row_stride,
        # scalars
        eps,
        # meta-parameters
        RMS: tl.constexpr, ONE_PASS: tl.constexpr, CT: tl.constexpr, BM: tl.constexpr,
        BN: tl.constexpr):
    """Rows pid*BM.. normalized (see the module docstring)."""
    rows = _rows(tl.program_id(0), BM)
    row_mask = rows < n_rows
    cols = tl.arange(0, BN)
    if ONE_PASS:
        col_mask = cols < n_cols
        mask = row_mask[:, None] & col_mask[None, :]
        v = _load(x_ptr, rows, cols, x_row_stride, mask, CT)
        if RMS:
            mean = tl.zeros((BM,), CT)
            var = div_rn(tl.sum(v * v, 1), n_cols)
        else:
            mean = div_rn(tl.sum(v, 1), n_cols)
            centered = tl.where(mask, v - mean[:, None], 0.0)
            var = div_rn(tl.sum(centered * centered, 1), n_cols)
        rstd = _rstd(var, eps)
        out = (v - mean[:, None]) * rstd[:, None] * _load_vector(weight_ptr, cols, col_mask, CT)
        if bias_ptr is not None:
            out += _load_vector(bias_ptr, cols, col_mask, CT)
        tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :],
                 out.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        avg = tl.zeros((BM, BN), CT)
        m2 = tl.zeros((BM, BN), CT)
        count = tl.zeros((BM, BN), CT)
        for start in range(0, n_cols, BN):
            c, _, mask = _columns(start, cols, n_cols, row_mask)
            v = _load(x_ptr, rows, c, x_row_stride, mask, CT)
            if RMS:
                avg += v * v
            else:
                a2, s2, n2 = _welford(avg, m2, count, v, tl.zeros_like(v),
                                      tl.full(v.shape, 1.0, CT))
                avg = tl.where(mask, a2, avg)
                m2 = tl.where(mask, s2, m2)
                count = tl.where(mask, n2, count)
        if RMS:
            mean = tl.zeros((BM,), CT)
            var = div_rn(tl.sum(avg, 1), n_cols)
        else:
            mean, m2_row, _ = tl.reduce((avg, m2, count), 1, _welford)
            var = div_rn(m2_row, n_cols)
        rstd = _rstd(var, eps)
        for start in range(0, n_cols, BN):
            c, col_mask, mask = _columns(start, cols, n_cols, row_mask)
            out = (_load(x_ptr, rows, c, x_row_stride, mask, CT) - mean[:, None]) \
                * rstd[:, None]
            out = out * _load_vector(weight_ptr, c, col_mask, CT)
            if bias_ptr is not None:
                out += _load_vector(bias_ptr, c, col_mask, CT)
            tl.store(y_ptr + rows[:, None] * y_row_stride + c[None, :],
                     out.to(y_ptr.dtype.element_ty), mask=mask)
    if mean_ptr is not None:
        tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def _row_grad(dy, x, w, mean, rstd, rows, cols, col_mask, mask, N, dy_stride, x_stride,
              RMS: tl.constexpr, CT: tl.constexpr):
    """(xhat, w * dy) of a tile."""
    xhat = (_load(x, rows, cols, x_stride, mask, CT) - mean[:, None]) * rstd[:, None]
    g = _load(dy, rows, cols, dy_stride, mask, CT)
    return xhat, g * _load_vector(w, cols, col_mask, CT), g


@triton.jit
def _mean_term(wdy, RMS: tl.constexpr):
    """sum(w dy) over a row: LayerNorm's gradient through the mean (RMSNorm has none)."""
    if RMS:
        t = tl.zeros((wdy.shape[0],), wdy.dtype)
    else:
        t = tl.sum(wdy, 1)
    return t


@triton.jit
def _backward_kernel(
        # pointers: the output gradient, the input, the weight (or None), the forward's mean
        # (None for RMSNorm) and rstd, the input gradient, the programs' partial sums of the
        # weight and bias gradients (or None)
        dy_ptr, x_ptr, weight_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
        # sizes: rows, normalized elements per row, rows per program
        n_rows, n_cols, rows_per_program,
        # strides, in elements, between rows
        dy_row_stride, x_row_stride, dx_row_stride,
        # meta-parameters
        RMS: tl.constexpr, ONE_PASS: tl.constexpr, CT: tl.constexpr, BM: tl.constexpr,
        BN: tl.constexpr):
    """Rows [pid * rows_per_program, +rows_per_program): dx, and this program's dw/db sums in
    row pid of dw_part/db_part."""
    pid = tl.program_id(0)
    first = pid.to(tl.int64) * rows_per_program
    last = tl.minimum(first + rows_per_program, n_rows)
    cols = tl.arange(0, BN)
    part = pid.to(tl.int64) * n_cols
    dw_acc = tl.zeros((BN,), CT)
    db_acc = tl.zeros((BN,), CT)
    for r0 in range(first, last, BM):
        rows = r0 + tl.arange(0, BM)
        row_mask = rows < last
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0).to(CT)
        if RMS:
            mean = tl.zeros((BM,), CT)
        else:
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0).to(CT)
        if ONE_PASS:
            col_mask = cols < n_cols
            mask = row_mask[:, None] & col_mask[None, :]
            xhat, wdy, g = _row_grad(dy_ptr, x_ptr, weight_ptr, mean, rstd, rows, cols, col_mask,
                                     mask, n_cols, dy_row_stride, x_row_stride, RMS, CT)
            c1 = div_rn(tl.sum(xhat * wdy, 1), n_cols)
            c2 = div_rn(_mean_term(wdy, RMS), n_cols)
            grad = (wdy - xhat * c1[:, None] - c2[:, None]) * rstd[:, None]
            tl.store(dx_ptr + rows[:, None] * dx_row_stride + cols[None, :],
                     grad.to(dx_ptr.dtype.element_ty), mask=mask)
            dw_acc += tl.sum(g * xhat, 0)
            db_acc += tl.sum(g, 0)
        else:
            c1 = tl.zeros((BM,), CT)
            c2 = tl.zeros((BM,), CT)
            for start in range(0, n_cols, BN):
                c, col_mask, mask = _columns(start, cols, n_cols, row_mask)
                xhat, wdy, g = _row_grad(dy_ptr, x_ptr, weight_ptr, mean, rstd, rows, c, col_mask,
                                         mask, n_cols, dy_row_stride, x_row_stride, RMS, CT)
                c1 += tl.sum(xhat * wdy, 1)
                c2 += _mean_term(wdy, RMS)
            c1 = div_rn(c1, n_cols)
            c2 = div_rn(c2, n_cols)
            for start in range(0, n_cols, BN):
                c, col_mask, mask = _columns(start, cols, n_cols, row_mask)
                xhat, wdy, g = _row_grad(dy_ptr, x_ptr, weight_ptr, mean, rstd, rows, c, col_mask,
                                         mask, n_cols, dy_row_stride, x_row_stride, RMS, CT)
                grad = (wdy - xhat * c1[:, None] - c2[:, None]) * rstd[:, None]
                tl.store(dx_ptr + rows[:, None] * dx_row_stride + c[None, :],
                         grad.to(dx_ptr.dtype.element_ty), mask=mask)
                if dw_part_ptr is not None:
                    at = dw_part_ptr + part + c
                    tl.store(at, tl.load(at, mask=col_mask) + tl.sum(g * xhat, 0), mask=col_mask)
                if db_part_ptr is not None:
                    at = db_part_ptr + part + c
                    tl.store(at, tl.load(at, mask=col_mask) + tl.sum(g, 0), mask=col_mask)
    if ONE_PASS:
        col_mask = cols < n_cols
        if dw_part_ptr is not None:
            tl.store(dw_part_ptr + part + cols, dw_acc, mask=col_mask)
        if db_part_ptr is not None:
            tl.store(db_part_ptr + part + cols, db_acc, mask=col_mask)


class _Rows:
    """An array seen as rows x n contiguous elements with one row stride (copied if needed)."""

    def __init__(self, arr, normalized_ndim, stream):
        split = arr.ndim - normalized_ndim
        lead_sizes, lead_strides = _row_sides(arr, split)
        if lead_sizes is None:
            arr = _contiguous(arr, stream)
            lead_sizes, lead_strides = _row_sides(arr, split)
        self.array = arr
        self.n = _prod(arr.shape[split:])
        self.rows = _prod(arr.shape[:split])
        self.stride = lead_strides[0] if lead_sizes[0] > 1 else self.n

    def key(self):
        return self.rows, self.n, self.stride, self.array.dtype, self.array.ptr % 16 == 0


def _row_sides(arr, split):
    """The coalesced leading dims (sizes, element strides) of a view whose dims from `split` on
    are its rows' elements, or (None, None) when it is not rows x contiguous elements."""
    strides = arr.element_strides()
    lead_sizes, (lead_strides,) = coalesce(arr.shape[:split], strides[:split])
    trail_sizes, (trail_strides,) = coalesce(arr.shape[split:], strides[split:])
    if len(lead_sizes) > 1 or len(trail_sizes) > 1 or \
            (trail_sizes[0] > 1 and trail_strides[0] != 1):
        return None, None
    return lead_sizes, lead_strides


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def _compute_type(dtype):
    return (tl.float64, np.dtype(np.float64)) if dtype == np.float64 else \
        (tl.float32, np.dtype(np.float32))


def _tile(rows, n, ct):
    """(one_pass, BM, BN, num_warps) for rows of n elements: 512 lanes per warp (128 in
    float64, whose values take two registers each), at most 16 warps."""
    one_pass = n <= ONE_PASS_LIMIT
    bn = next_pow2(n) if one_pass else _CHUNK
    bm = min(next_pow2(rows), max(1, _MIN_TILE // bn))
    lanes = 128 if ct == tl.float64 else 512
    return one_pass, bm, bn, max(1, min(16, bm * bn // lanes))


def _vector(arr, stream):
    """A weight or bias, contiguous (the kernels index it densely), or None."""
    if arr is None or arr.is_contiguous():
        return arr
    return _contiguous(arr, stream)


def _geometry(arr):
    return None if arr is None else (arr.dtype, arr.ptr % 16 == 0)


_plans = LaunchCache()


def _forward_plan(x, rms, target=None):
    """The forward launch over the rows `x` (a _Rows)."""
    ct, _ = _compute_type(x.array.dtype)
    one_pass, bm, bn, warps = _tile(x.rows, x.n, ct)
    meta = dict(RMS=rms, ONE_PASS=one_pass, CT=ct, BM=bm, BN=bn)
    return Launch(_forward_kernel, (cdiv(x.rows, bm),), meta, warps, int_type="i64",
                  types={"eps": "fp64" if ct == tl.float64 else "fp32"}, per_call=("eps",),
                  device=x.array.device, target=target)


def _forward_launch(launch, stream, x, weight, bias, y, mean, rstd, eps):
    """The call of _forward_kernel; `x` a _Rows, `y` contiguous like it."""
    launch(stream,
           # pointers
           x.array, weight, bias, y, mean, rstd,
           # sizes
           x.rows, x.n,
           # strides
           x.stride, x.n,
           # scalars
           eps)


def forward(x, weight, bias, normalized_ndim, eps, rms):
    """(y, mean or None, rstd): mean and rstd are float32 (float64) arrays of the rows."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    rows = _Rows(x, normalized_ndim, stream)
    weight, bias = _vector(weight, stream), _vector(bias, stream)
    _, stats = _compute_type(x.dtype)
    y = CUDAArray.empty(x.shape, x.dtype, device, stream)
    mean = None if rms else CUDAArray.empty((rows.rows,), stats, device, stream)
    rstd = CUDAArray.empty((rows.rows,), stats, device, stream)
    if rows.rows:
        key = ("forward", rows.key(), _geometry(weight), _geometry(bias), rms, device)
        launch = _plans.get_or_build(key, lambda: _forward_plan(rows, rms))
        _forward_launch(launch, stream, rows, weight, bias, y, mean, rstd, float(eps))
    return y, mean, rstd


def _backward_plan(x, programs, per_program, rms, target=None):
    """The backward launch over the rows `x` (a _Rows): `programs` of `per_program` rows."""
    ct, _ = _compute_type(x.array.dtype)
    one_pass, bm, bn, warps = _tile(per_program, x.n, ct)
    meta = dict(RMS=rms, ONE_PASS=one_pass, CT=ct, BM=bm if one_pass else 1, BN=bn)
    return Launch(_backward_kernel, (programs,), meta, warps, int_type="i64",
                  device=x.array.device, target=target)


def _backward_launch(launch, stream, dy, x, weight, mean, rstd, dx, dw_part, db_part,
                     per_program):
    """The call of _backward_kernel; `dy` and `x` are _Rows, `dx` contiguous like x."""
    launch(stream,
           # pointers
           dy.array, x.array, weight, mean, rstd, dx, dw_part, db_part,
           # sizes
           x.rows, x.n, per_program,
           # strides
           dy.stride, x.stride, x.n)


def backward(dy, x, weight, mean, rstd, normalized_ndim, weight_grad, bias_grad, rms):
    """(dx, dw or None, db or None) given the forward's saved mean (None for RMSNorm) and rstd."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    xr, dyr = _Rows(x, normalized_ndim, stream), _Rows(dy, normalized_ndim, stream)
    weight = _vector(weight, stream)
    _, stats = _compute_type(x.dtype)
    dx = CUDAArray.empty(x.shape, x.dtype, device, stream)
    per_program = cdiv(max(xr.rows, 1), _BACKWARD_PROGRAMS)
    programs = cdiv(xr.rows, per_program)
    one_pass = _tile(per_program, xr.n, _compute_type(x.dtype)[0])[0]
    dw_part, db_part = (_partials((programs, xr.n), stats, device, stream, not one_pass)
                        if wanted else None for wanted in (weight_grad, bias_grad))
    if xr.rows:
        key = ("backward", xr.key(), dyr.key(), _geometry(weight), weight_grad, bias_grad, rms,
               device)
        launch = _plans.get_or_build(
            key, lambda: _backward_plan(xr, programs, per_program, rms))
        _backward_launch(launch, stream, dyr, xr, weight, mean, rstd, dx, dw_part, db_part,
                         per_program)
    shape = x.shape[x.ndim - normalized_ndim:]
    dw = _column_sum(dw_part, shape, weight.dtype if weight is not None else x.dtype)
    db = _column_sum(db_part, shape, x.dtype)
    return dx, dw, db


def _partials(shape, dtype, device, stream, zeroed):
    """A buffer for the programs' partial sums of dw or db: zeroed when the kernel accumulates
    into it (rows longer than one pass); each program stores its row once otherwise."""
    out = CUDAArray.empty(shape, dtype, device, stream)
    if zeroed:
        from .copy import fill
        fill(out, 0, stream)
    return out


def _column_sum(part, shape, dtype):
    """The partial rows summed (deterministically) into an array of `shape`, or None."""
    if part is None:
        return None
    return reduce("sum", part, (0,), shape, dtype)[0]


@register("layer_norm_fwd", "cuda")
def layer_norm_fwd(x, weight, bias, normalized_ndim, eps):
    """(y, mean, rstd) of LayerNorm over the trailing `normalized_ndim` dims."""
    return forward(x, weight, bias, normalized_ndim, eps, False)


@register("layer_norm_bwd", "cuda")
def layer_norm_bwd(dy, x, weight, mean, rstd, normalized_ndim, weight_grad, bias_grad):
    """(dx, dweight or None, dbias or None) of LayerNorm."""
    return backward(dy, x, weight, mean, rstd, normalized_ndim, weight_grad, bias_grad, False)


@register("rms_norm_fwd", "cuda")
def rms_norm_fwd(x, weight, normalized_ndim, eps):
    """(y, rstd) of RMSNorm over the trailing `normalized_ndim` dims."""
    y, _, rstd = forward(x, weight, None, normalized_ndim, eps, True)
    return y, rstd


@register("rms_norm_bwd", "cuda")
def rms_norm_bwd(dy, x, weight, rstd, normalized_ndim, weight_grad):
    """(dx, dweight or None) of RMSNorm."""
    dx, dw, _ = backward(dy, x, weight, None, rstd, normalized_ndim, weight_grad, False, True)
    return dx, dw
