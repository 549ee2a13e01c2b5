"""Fused cross-entropy on the GPU: "cross_entropy_fwd" and "cross_entropy_bwd" (the contracts of
backends/cpu/loss.py) for (N, C) logits read where they lie and (N,) class indices.

Forward: one program per block of rows computes each row's logsumexp with an online pass
(running max, sum rescaled whenever the max grows) and picks the target's logit on the way; a row
of up to ONE_PASS_LIMIT classes is one chunk, so read once from registers, wider rows (C = 50257)
loop over CHUNK-wide chunks. It writes the row's logsumexp (saved for the backward) and its loss
(lse - x[t]) * weight[t], 0 where t == ignore_index. For "sum" and "mean" the row losses (and,
after them, the row weights) go to one scratch buffer and the reduction happens in the same
launch: each program bumps an int32 counter (reduce.py's per-stream counters) after its stores,
and the last one sums every row in a fixed order (deterministic, no float atomics), divides by
the summed weights for "mean" (0/0 = nan when every target is ignored, as torch) and sets the
counter back to 0.

Backward: one launch, one read of each logit: (exp(x - lse) - onehot(t)) * g * weight[t]
(/ total for "mean"), zero rows where ignored. Half types compute in float32 and round once;
float64 in float64. Targets are not range-checked (as torch's GPU kernels): an out-of-range
target picks no logit and no weight.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._recipe import (Recipe, RecipeCache, cdiv, const, index_type, next_pow2, placeholder,
                       pointer, program_range, scalar)
from ._math import div_rn
from .reduce import split_counters

ONE_PASS_LIMIT = 16384
CHUNK = 4096
_MIN_TILE = 1024
_REDUCE_BLOCK = 1024


@triton.jit
def _targets(t, rows, row_mask, t_s, ignore_index, w, C, HAS_W: tl.constexpr,
             CT: tl.constexpr):
    """Each row's class index, whether it counts, and its weight (weight[t] or 1; 0 if not)."""
    tgt = tl.load(t + rows * t_s, mask=row_mask, other=0).to(tl.int64)
    valid = row_mask & (tgt != ignore_index)
    if HAS_W:
        wt = tl.load(w + tgt, mask=valid & (tgt >= 0) & (tgt < C), other=0.0).to(CT)
    else:
        wt = valid.to(CT)
    return tgt, valid, wt


@triton.jit
def _sum_rows(row_loss, out, total, N, MEAN: tl.constexpr, CT: tl.constexpr,
              BLOCK: tl.constexpr):
    """The sum of the row losses in a fixed order (for the mean divided by the
    summed weights, row_loss[N:], which go to `total`)."""
    lane = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), CT)
    w_acc = tl.zeros((BLOCK,), CT)
    for start in range(0, N, BLOCK):
        i = start + lane
        acc += tl.load(row_loss + i, mask=i < N, other=0.0)
        if MEAN:
            w_acc += tl.load(row_loss + N + i, mask=i < N, other=0.0)
    result = tl.sum(acc, 0)
    if MEAN:
        weights = tl.sum(w_acc, 0)
        tl.store(total, weights)
        result = div_rn(result, weights)
    tl.store(out, result.to(out.dtype.element_ty))


@triton.jit
def _forward_kernel(x, t, w, loss, lse, out, total, counts, N, C, x_sr, x_sc, t_s,
                    ignore_index, HAS_W: tl.constexpr, REDUCE: tl.constexpr, MEAN: tl.constexpr,
                    CT: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr,
                    BC: tl.constexpr, BLOCK: tl.constexpr):
    """Rows pid*BM..: logsumexp into `lse`, weighted loss into `loss` (MEAN: the weights into
    loss[N:]); REDUCE: the last program to finish reduces `loss` into `out` (and `total`)."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < N
    tgt, valid, wt = _targets(t, rows, row_mask, t_s, ignore_index, w, C, HAS_W, CT)
    x_row = x + rows * x_sr
    lane = tl.arange(0, BC)
    m = tl.full((BM,), float("-inf"), CT)
    s = tl.zeros((BM,), CT)
    picked = tl.zeros((BM,), CT)
    for c in range(tl.cdiv(C, BC)):
        j = c * BC + lane
        mask = row_mask[:, None] & (j < C)[None, :]
        v = tl.load(x_row[:, None] + j[None, :] * x_sc, mask=mask, other=float("-inf")).to(CT)
        m_new = tl.maximum(m, tl.max(v, 1))
        e = tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new[:, None]))
        s = s * tl.where(m == m_new, 1.0, tl.exp(m - m_new)) + tl.sum(e, 1)
        m = m_new
        hit = mask & (j[None, :] == tgt[:, None])
        picked += tl.sum(tl.where(hit, v, 0.0), 1)
    row_lse = m + tl.log(s)
    row_loss = tl.where(valid, (row_lse - picked) * wt, 0.0)
    tl.store(loss + rows, row_loss.to(loss.dtype.element_ty), mask=row_mask)
    tl.store(lse + rows, row_lse, mask=row_mask)
    if MEAN:
        tl.store(loss + N + rows, wt, mask=row_mask)
    if REDUCE:
        # Every thread's stores precede the count (CTA barrier); the count releases them to the
        # program that sees it reach the grid size and acquires them (acq_rel, GPU scope).
        tl.debug_barrier()
        done = tl.atomic_add(counts, 1, sem="acq_rel", scope="gpu")
        if done == tl.num_programs(0) - 1:
            tl.store(counts, 0)
            _sum_rows(loss, out, total, N, MEAN, CT, BLOCK)


@triton.jit
def _backward_kernel(g, x, t, w, lse, total, dx, N, C, x_sr, x_sc, t_s, g_s, ignore_index,
                     HAS_W: tl.constexpr, MEAN: tl.constexpr, ROW_GRAD: tl.constexpr,
                     CT: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr,
                     BC: tl.constexpr):
    """Rows pid*BM.. of dx = (softmax(x) - onehot(t)) * scale, scale = g[n] (or g) * weight[t]
    (/ total for the mean), 0 where ignored; dx contiguous."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < N
    tgt, valid, wt = _targets(t, rows, row_mask, t_s, ignore_index, w, C, HAS_W, CT)
    if ROW_GRAD:
        gv = tl.load(g + rows * g_s, mask=row_mask, other=0.0).to(CT)
    else:
        gv = tl.load(g).to(CT)
    if MEAN:
        gv = div_rn(gv, tl.load(total))
    scale = tl.where(valid, wt * gv, 0.0)
    row_lse = tl.load(lse + rows, mask=row_mask, other=0.0)
    x_row = x + rows * x_sr
    o_row = dx + rows * C
    lane = tl.arange(0, BC)
    for c in range(tl.cdiv(C, BC)):
        j = c * BC + lane
        mask = row_mask[:, None] & (j < C)[None, :]
        v = tl.load(x_row[:, None] + j[None, :] * x_sc, mask=mask, other=0.0).to(CT)
        onehot = tl.where(j[None, :] == tgt[:, None], 1.0, 0.0)
        d = (tl.exp(v - row_lse[:, None]) - onehot) * scale[:, None]
        d = tl.where(valid[:, None], d, 0.0)
        tl.store(o_row[:, None] + j[None, :], d.to(dx.dtype.element_ty), mask=mask)


def _compute_dtype(dtype):
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _tile(n, c):
    """(rows per program, classes per chunk, warps): a row of up to ONE_PASS_LIMIT classes in
    one chunk, at least _MIN_TILE lanes per program, 1024 lanes per 2 warps up to 16."""
    bc = next_pow2(c) if c <= ONE_PASS_LIMIT else CHUNK
    bm = min(next_pow2(n), max(1, _MIN_TILE // bc))
    return bm, bc, max(1, min(16, bm * bc // 512))


def _row_entries(x, t, w):
    """Entries shared by both kernels: sizes, strides, the target/weight pointers and tile."""
    n, c = x.shape
    x_sr, x_sc = x.element_strides()
    (t_s,) = t.element_strides()
    ity = index_type([n, c], [x_sr, x_sc], [c, 1])
    bm, bc, warps = _tile(n, c)
    entries = [pointer("x", "x", x), pointer("t", "t", t), pointer("w", "w", w),
               ("N", n, ity), ("C", c, ity), ("x_sr", x_sr, ity),
               ("x_sc", x_sc, "constexpr" if x_sc == 1 else ity), ("t_s", t_s, ity),
               scalar("ignore_index", "ignore_index", 0, "i64")]
    entries += const(HAS_W=w is not None, CT=_triton_type(_compute_dtype(x.dtype)),
                     INDEX64=ity == "i64", BM=bm, BC=bc)
    return entries, cdiv(n, bm), warps


def _triton_type(dtype):
    return tl.float64 if dtype == np.float64 else tl.float32


def _forward_recipe(x, t, w, reduction, target=None):
    n = x.shape[0]
    ct = _compute_dtype(x.dtype)
    recipe = Recipe(x.device, target)
    entries, grid, warps = _row_entries(x, t, w)
    mean, reduce = reduction == "mean", reduction != "none"
    if reduce:
        rows = recipe.scratch_array((2 * n if mean else n,), ct)
        out = pointer("out", "loss", placeholder((), x.dtype))
    else:
        rows, out = ("loss", placeholder((n,), x.dtype)), pointer("out", None, None)
    entries += [pointer("loss", rows[0], rows[1]), pointer("lse", "lse", placeholder((n,), ct)),
                out, pointer("total", "total", placeholder((), ct) if mean else None),
                pointer("counts", "counts", placeholder((1,), np.int32) if reduce else None)]
    entries += const(REDUCE=reduce, MEAN=mean, BLOCK=_REDUCE_BLOCK)
    recipe.add(_forward_kernel, (grid,), entries, warps)
    return recipe


def _backward_recipe(g, x, t, w, reduction, target=None):
    n = x.shape[0]
    ct = _compute_dtype(x.dtype)
    entries, grid, warps = _row_entries(x, t, w)
    row_grad = reduction == "none"
    g_s = g.element_strides()[0] if row_grad else 0
    mean = reduction == "mean"
    entries += [pointer("g", "g", g), pointer("lse", "lse", placeholder((n,), ct)),
                pointer("total", "total", placeholder((), ct) if mean else None),
                pointer("dx", "dx", placeholder(x.shape, x.dtype)),
                ("g_s", g_s, "constexpr" if g_s in (0, 1) else "i64")]
    entries += const(MEAN=mean, ROW_GRAD=row_grad)
    recipe = Recipe(x.device, target)
    recipe.add(_backward_kernel, (grid,), entries, warps)
    return recipe


_recipes = RecipeCache()


def _geometry(a):
    return None if a is None else (a.shape, a.strides, a.dtype, a.ptr % 16 == 0)


def _start(x):
    activate(x.device)
    return current_stream_handle(x.device)


@register("cross_entropy_fwd", "cuda")
def cross_entropy_fwd(x, target, weight, ignore_index, reduction):
    stream = _start(x)
    n = x.shape[0]
    ct = _compute_dtype(x.dtype)
    loss = CUDAArray.empty((n,) if reduction == "none" else (), x.dtype, x.device, stream)
    lse = CUDAArray.empty((n,), ct, x.device, stream)
    total = CUDAArray.empty((), ct, x.device, stream) if reduction == "mean" else None
    key = ("fwd", _geometry(x), _geometry(target), _geometry(weight), reduction, x.device)
    recipe = _recipes.get_or_build(key, lambda: _forward_recipe(x, target, weight, reduction))
    counts = None if reduction == "none" else split_counters(x.device, stream, 1)
    recipe.run(stream, {"x": x, "t": target, "w": weight, "loss": loss, "lse": lse,
                        "total": total, "counts": counts, "ignore_index": ignore_index})
    return loss, lse, total


@register("cross_entropy_bwd", "cuda")
def cross_entropy_bwd(grad, x, target, weight, lse, total, ignore_index, reduction):
    stream = _start(x)
    dx = CUDAArray.empty(x.shape, x.dtype, x.device, stream)
    key = ("bwd", _geometry(grad), _geometry(x), _geometry(target), _geometry(weight),
           reduction, x.device)
    recipe = _recipes.get_or_build(
        key, lambda: _backward_recipe(grad, x, target, weight, reduction))
    recipe.run(stream, {"g": grad, "x": x, "t": target, "w": weight, "lse": lse,
                        "total": total, "dx": dx, "ignore_index": ignore_index})
    return dx


def compile_all(target):
    """Forward (each reduction) and backward for `target`: float32 in one chunk and online
    (C = 50257), with class weights, and the GPT case (C = 50257, mean) in the other dtypes."""
    import ml_dtypes
    t = placeholder((4096,), np.int64)
    cases = [(np.float32, c, False, r) for c in (1000, 50257) for r in ("none", "sum", "mean")]
    cases += [(np.float32, 1000, True, "mean")]
    cases += [(d, 50257, False, "mean") for d in (np.float16, ml_dtypes.bfloat16, np.float64)]
    for dtype, c, weighted, reduction in cases:
        x = placeholder((4096, c), dtype)
        w = placeholder((c,), dtype) if weighted else None
        _forward_recipe(x, t, w, reduction, target)
        g = placeholder((4096,) if reduction == "none" else (), dtype)
        _backward_recipe(g, x, t, w, reduction, target)
