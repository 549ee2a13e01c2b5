"""Fused cross-entropy on the GPU: "cross_entropy_fwd" and "cross_entropy_bwd" (the contracts of
backends/cpu/loss.py) for (N, C) logits read where they lie and (N,) class indices.

Forward: one program per block of rows computes each row's logsumexp with an online pass
(running max, sum rescaled whenever the max grows) and picks the target's logit on the way; a row
of up to ONE_PASS_LIMIT classes is one chunk, so read once from registers, wider rows (C = 50257)
loop over CHUNK-wide chunks. It writes the row's logsumexp (saved for the backward) and its loss
(lse - x[t]) * weight[t], 0 where t == ignore_index, in x's dtype or the one asked (autocast's
float32 for half logits, read as they lie: no float32 copy of a 50K-class batch). For "sum" and
"mean" the row losses (and, after them, the row weights) go to one scratch buffer and the
reduction happens in the same launch: each program bumps an int32 counter (reduce.py's
per-stream counters) after its stores, and the last one sums every row in a fixed order
(deterministic, no float atomics), divides by the summed weights for "mean" (0/0 = nan when
every target is ignored, as torch) and sets the counter back to 0.

Backward: one launch, one read of each logit: (exp(x - lse) - onehot(t)) * g * weight[t]
(/ total for "mean"), zero rows where ignored. Half types compute in float32 and round once;
float64 in float64. Targets are not range-checked (as torch's GPU kernels): an out-of-range
target picks no logit and no weight.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache, stream_workspace
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn
from ._strided_indexing import cdiv, index_type, next_pow2, program_range, stride_arg
from .reduce import split_counters

# Tiles (see _tile): rows of up to 16384 classes are one chunk held in registers, wider ones
# stream 4096-class chunks; a program gets at least 1024 lanes; the last program sums the row
# losses 1024 at a time.
ONE_PASS_LIMIT = 16384
CHUNK = 4096
_MIN_TILE = 1024
_REDUCE_BLOCK = 1024


@triton.jit
def _targets(target_ptr, rows, row_mask, target_stride, ignore_index, weight_ptr, n_classes,
             HAS_W: tl.constexpr, CT: tl.constexpr):
    """Each row's class index, whether it counts, and its weight (weight[t] or 1; 0 if not)."""
    tgt = tl.load(target_ptr + rows * target_stride, mask=row_mask, other=0).to(tl.int64)
    valid = row_mask & (tgt != ignore_index)
    if HAS_W:
        wt = tl.load(weight_ptr + tgt, mask=valid & (tgt >= 0) & (tgt < n_classes),
                     other=0.0).to(CT)
    else:
        wt = valid.to(CT)
    return tgt, valid, wt


@triton.jit
def _sum_rows(row_loss_ptr, out_ptr, total_ptr, n_rows, MEAN: tl.constexpr, CT: tl.constexpr,
              BLOCK: tl.constexpr):
    """The sum of the row losses in a fixed order (for the mean divided by the
    summed weights, row_loss[n_rows:], which go to `total`)."""
    lane = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), CT)
    w_acc = tl.zeros((BLOCK,), CT)
    for start in range(0, n_rows, BLOCK):
        i = start + lane
        acc += tl.load(row_loss_ptr + i, mask=i < n_rows, other=0.0)
        if MEAN:
            w_acc += tl.load(row_loss_ptr + n_rows + i, mask=i < n_rows, other=0.0)
    result = tl.sum(acc, 0)
    if MEAN:
        weights = tl.sum(w_acc, 0)
        tl.store(total_ptr, weights)
        result = div_rn(result, weights)
    tl.store(out_ptr, result.to(out_ptr.dtype.element_ty))


@triton.jit
def _forward_kernel(
        # pointers: logits, class indices, class weights (or None); the row losses (REDUCE: a
        # scratch buffer, with the row weights after them for MEAN), each row's logsumexp; the
        # reduced loss, the summed weights (MEAN) and the finish counter (REDUCE)
        x_ptr, target_ptr, weight_ptr, loss_ptr, lse_ptr, out_ptr, total_ptr, counts_ptr,
        # sizes
        n_rows, n_classes,
        # strides, in elements
        x_row_stride, x_col_stride, target_stride,
        # scalars
        ignore_index,
        # meta-parameters
        HAS_W: tl.constexpr, REDUCE: tl.constexpr, MEAN: tl.constexpr, CT: tl.constexpr,
        INDEX64: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr):
    """Rows pid*BM..: logsumexp into `lse`, weighted loss into `loss` (MEAN: the weights into
    loss[n_rows:]); REDUCE: the last program to finish reduces `loss` into `out` (and
    `total`)."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < n_rows
    tgt, valid, wt = _targets(target_ptr, rows, row_mask, target_stride, ignore_index,
                              weight_ptr, n_classes, HAS_W, CT)
    x_row = x_ptr + rows * x_row_stride
    lane = tl.arange(0, BC)
    m = tl.full((BM,), float("-inf"), CT)
    s = tl.zeros((BM,), CT)
    picked = tl.zeros((BM,), CT)
    for c in range(tl.cdiv(n_classes, BC)):
        j = c * BC + lane
        mask = row_mask[:, None] & (j < n_classes)[None, :]
        v = tl.load(x_row[:, None] + j[None, :] * x_col_stride, mask=mask,
                    other=float("-inf")).to(CT)
        m_new = tl.maximum(m, tl.max(v, 1))
        e = tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new[:, None]))
        s = s * tl.where(m == m_new, 1.0, tl.exp(m - m_new)) + tl.sum(e, 1)
        m = m_new
        hit = mask & (j[None, :] == tgt[:, None])
        picked += tl.sum(tl.where(hit, v, 0.0), 1)
    row_lse = m + tl.log(s)
    row_loss = tl.where(valid, (row_lse - picked) * wt, 0.0)
    tl.store(loss_ptr + rows, row_loss.to(loss_ptr.dtype.element_ty), mask=row_mask)
    tl.store(lse_ptr + rows, row_lse, mask=row_mask)
    if MEAN:
        tl.store(loss_ptr + n_rows + rows, wt, mask=row_mask)
    if REDUCE:
        # Every thread's stores precede the count (CTA barrier); the count releases them to the
        # program that sees it reach the grid size and acquires them (acq_rel, GPU scope).
        tl.debug_barrier()
        done = tl.atomic_add(counts_ptr, 1, sem="acq_rel", scope="gpu")
        if done == tl.num_programs(0) - 1:
            tl.store(counts_ptr, 0)
            _sum_rows(loss_ptr, out_ptr, total_ptr, n_rows, MEAN, CT, BLOCK)


@triton.jit
def _backward_kernel(
        # pointers: the loss gradient, logits, class indices, class weights (or None), the
        # forward's logsumexp and summed weights (MEAN), the contiguous logit gradient
        grad_ptr, x_ptr, target_ptr, weight_ptr, lse_ptr, total_ptr, dx_ptr,
        # sizes
        n_rows, n_classes,
        # strides, in elements
        x_row_stride, x_col_stride, target_stride, grad_stride,
        # scalars
        ignore_index,
        # meta-parameters
        HAS_W: tl.constexpr, MEAN: tl.constexpr, ROW_GRAD: tl.constexpr, CT: tl.constexpr,
        INDEX64: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr):
    """Rows pid*BM.. of dx = (softmax(x) - onehot(t)) * scale, scale = grad[n] (or grad) *
    weight[t] (/ total for the mean), 0 where ignored; dx contiguous."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < n_rows
    tgt, valid, wt = _targets(target_ptr, rows, row_mask, target_stride, ignore_index,
                              weight_ptr, n_classes, HAS_W, CT)
    if ROW_GRAD:
        gv = tl.load(grad_ptr + rows * grad_stride, mask=row_mask, other=0.0).to(CT)
    else:
        gv = tl.load(grad_ptr).to(CT)
    if MEAN:
        gv = div_rn(gv, tl.load(total_ptr))
    scale = tl.where(valid, wt * gv, 0.0)
    row_lse = tl.load(lse_ptr + rows, mask=row_mask, other=0.0)
    x_row = x_ptr + rows * x_row_stride
    o_row = dx_ptr + rows * n_classes
    lane = tl.arange(0, BC)
    for c in range(tl.cdiv(n_classes, BC)):
        j = c * BC + lane
        mask = row_mask[:, None] & (j < n_classes)[None, :]
        v = tl.load(x_row[:, None] + j[None, :] * x_col_stride, mask=mask, other=0.0).to(CT)
        onehot = tl.where(j[None, :] == tgt[:, None], 1.0, 0.0)
        d = (tl.exp(v - row_lse[:, None]) - onehot) * scale[:, None]
        d = tl.where(valid[:, None], d, 0.0)
        tl.store(o_row[:, None] + j[None, :], d.to(dx_ptr.dtype.element_ty), mask=mask)


def _compute_dtype(dtype):
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _tile(n, c):
    """(rows per program, classes per chunk, warps): a row of up to ONE_PASS_LIMIT classes in
    one chunk, at least _MIN_TILE lanes per program, 1024 lanes per 2 warps up to 16."""
    bc = next_pow2(c) if c <= ONE_PASS_LIMIT else CHUNK
    bm = min(next_pow2(n), max(1, _MIN_TILE // bc))
    return bm, bc, max(1, min(16, bm * bc // 512))


def _triton_type(dtype):
    return tl.float64 if dtype == np.float64 else tl.float32


def _plan(kernel, x, t, meta, target=None, types=None):
    """(launch of `kernel` over x's rows, the sizes and strides of x and t its launcher
    passes)."""
    n, c = x.shape
    x_row_stride, x_col_stride = x.element_strides()
    ity = index_type([n, c], [x_row_stride, x_col_stride], [c, 1])
    bm, bc, warps = _tile(n, c)
    meta = dict(meta, CT=_triton_type(_compute_dtype(x.dtype)), INDEX64=ity == "i64", BM=bm,
                BC=bc)
    launch = Launch(kernel, (cdiv(n, bm),), meta, warps, int_type=ity,
                    types=dict(types or {}, ignore_index="i64"), per_call=("ignore_index",),
                    device=x.device, target=target)
    return launch, (n, c, x_row_stride, stride_arg(x_col_stride, (1,)), t.element_strides()[0])


def _forward_plan(x, t, w, reduction, target=None):
    meta = dict(HAS_W=w is not None, REDUCE=reduction != "none", MEAN=reduction == "mean",
                BLOCK=_REDUCE_BLOCK)
    return _plan(_forward_kernel, x, t, meta, target)


def _forward_launch(launch, dims, stream, x, t, w, loss, lse, out, total, counts,
                    ignore_index):
    """The call of _forward_kernel; `dims` as _plan makes them."""
    n_rows, n_classes, x_row_stride, x_col_stride, target_stride = dims
    launch(stream,
           # pointers
           x, t, w, loss, lse, out, total, counts,
           # sizes
           n_rows, n_classes,
           # strides
           x_row_stride, x_col_stride, target_stride,
           # scalars
           ignore_index)


def _backward_plan(g, x, t, w, reduction, target=None):
    """(launch, dims): _plan's dims and the gradient's stride (0 for a reduced loss)."""
    row_grad = reduction == "none"
    meta = dict(HAS_W=w is not None, MEAN=reduction == "mean", ROW_GRAD=row_grad)
    launch, dims = _plan(_backward_kernel, x, t, meta, target, {"grad_stride": "i64"})
    g_stride = g.element_strides()[0] if row_grad else 0
    return launch, dims + (stride_arg(g_stride),)


def _backward_launch(launch, dims, stream, g, x, t, w, lse, total, dx, ignore_index):
    """The call of _backward_kernel; `dims` as _backward_plan makes them."""
    n_rows, n_classes, x_row_stride, x_col_stride, target_stride, grad_stride = dims
    launch(stream,
           # pointers
           g, x, t, w, lse, total, dx,
           # sizes
           n_rows, n_classes,
           # strides
           x_row_stride, x_col_stride, target_stride, grad_stride,
           # scalars
           ignore_index)


_plans = LaunchCache()


def _geometry(a):
    return None if a is None else (a.shape, a.strides, a.dtype, a.ptr % 16 == 0)


def _start(x):
    activate(x.device)
    return current_stream_handle(x.device)


def _row_losses(x, reduction, stream):
    """Where the forward writes its row losses (and, for the mean, the row weights after them):
    the loss itself for "none", else scratch in the stream's workspace (the one launch writes
    and reads it)."""
    n = x.shape[0]
    ct = _compute_dtype(x.dtype)
    length = 2 * n if reduction == "mean" else n
    workspace = stream_workspace(x.device, stream, length * ct.itemsize)
    return CUDAArray(workspace.storage, (length,), (ct.itemsize,), workspace.offset, ct)


@register("cross_entropy_fwd", "cuda")
def cross_entropy_fwd(x, target, weight, ignore_index, reduction, loss_dtype=None):
    stream = _start(x)
    n = x.shape[0]
    ct = _compute_dtype(x.dtype)
    loss = CUDAArray.empty((n,) if reduction == "none" else (), loss_dtype or x.dtype, x.device,
                           stream)
    lse = CUDAArray.empty((n,), ct, x.device, stream)
    total = CUDAArray.empty((), ct, x.device, stream) if reduction == "mean" else None
    key = ("fwd", _geometry(x), _geometry(target), _geometry(weight), loss.dtype, reduction,
           x.device)
    launch, dims = _plans.get_or_build(
        key, lambda: _forward_plan(x, target, weight, reduction))
    if reduction == "none":
        rows, out, counts = loss, None, None
    else:
        rows, out = _row_losses(x, reduction, stream), loss
        counts = split_counters(x.device, stream, 1)
    _forward_launch(launch, dims, stream, x, target, weight, rows, lse, out, total, counts,
                    ignore_index)
    return loss, lse, total


@register("cross_entropy_bwd", "cuda")
def cross_entropy_bwd(grad, x, target, weight, lse, total, ignore_index, reduction):
    stream = _start(x)
    dx = CUDAArray.empty(x.shape, x.dtype, x.device, stream)
    key = ("bwd", _geometry(grad), _geometry(x), _geometry(target), _geometry(weight),
           reduction, x.device)
    launch, dims = _plans.get_or_build(
        key, lambda: _backward_plan(grad, x, target, weight, reduction))
    _backward_launch(launch, dims, stream, grad, x, target, weight, lse, total, dx,
                     ignore_index)
    return dx
