"""softmax and log_softmax along one dim, forward and backward, on the GPU.

Rows are the input seen as kept dims x the softmax dim (kernels/_strided.py), read where they lie.
A row that fits in a program's registers (up to ONE_PASS_LIMIT elements) is read once and written
once: max, exp, sum and the normalization all happen on the registers. Longer rows take an online
pass (running max, sum rescaled whenever the max grows) and a second pass that writes the result:
two reads and one write. Half types compute in float32 and round once; float64 in float64.

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
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided import (MAX_ROW_DIMS, Recipe, RecipeCache, RowLayout, cdiv, const, next_pow2,
                       offsets, placeholder, pointer, program_range, size_entries, stride_entries)
from .elementwise import div_rn

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
def _softmax_kernel(x, y, out, M, L, ksize1, ksize2, ksize3,
                    a_s0, a_s1, a_s2, a_s3, b_s0, b_s1, b_s2, b_s3, o_s0, o_s1, o_s2, o_s3,
                    a_l, b_l, o_l, LOG: tl.constexpr, BACKWARD: tl.constexpr,
                    ONE_PASS: tl.constexpr, KDIM: tl.constexpr, CT: tl.constexpr,
                    INDEX64: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Rows pid*BM.. of softmax(x) (BACKWARD: the gradient from g = x and the output y)."""
    rows = program_range(BM, INDEX64)
    row_mask = rows < M
    sizes = (1, ksize1, ksize2, ksize3)
    a_row = offsets(rows, sizes, (a_s0, a_s1, a_s2, a_s3), KDIM)
    b_row = offsets(rows, sizes, (b_s0, b_s1, b_s2, b_s3), KDIM)
    o_row = offsets(rows, sizes, (o_s0, o_s1, o_s2, o_s3), KDIM)
    lane = tl.arange(0, BL)
    out_ty = out.dtype.element_ty
    if ONE_PASS:
        mask = row_mask[:, None] & (lane < L)[None, :]
        if BACKWARD:
            g = _load(x, a_row, lane, a_l, mask, 0.0, CT)
            yv = _load(y, b_row, lane, b_l, mask, 0.0, CT)
            r = _backward_row(g, yv, _row_total(g, yv, LOG), LOG)
        else:
            v = _load(x, a_row, lane, a_l, mask, float("-inf"), CT)
            m = tl.max(v, 1)
            r = _forward_row(v, m, tl.sum(tl.exp(v - m[:, None]), 1), LOG)
        tl.store(out + o_row[:, None] + lane[None, :] * o_l, r.to(out_ty), mask=mask)
    else:
        if BACKWARD:
            total = tl.zeros((BM,), CT)
            for c in range(tl.cdiv(L, BL)):
                j = c * BL + lane
                mask = row_mask[:, None] & (j < L)[None, :]
                total += _row_total(_load(x, a_row, j, a_l, mask, 0.0, CT),
                                    _load(y, b_row, j, b_l, mask, 0.0, CT), LOG)
        else:
            m = tl.full((BM,), float("-inf"), CT)
            s = tl.zeros((BM,), CT)
            for c in range(tl.cdiv(L, BL)):
                j = c * BL + lane
                mask = row_mask[:, None] & (j < L)[None, :]
                v = _load(x, a_row, j, a_l, mask, float("-inf"), CT)
                m_new = tl.maximum(m, tl.max(v, 1))
                e = tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new[:, None]))
                s = s * tl.where(m == m_new, 1.0, tl.exp(m - m_new)) + tl.sum(e, 1)
                m = m_new
        for c in range(tl.cdiv(L, BL)):
            j = c * BL + lane
            mask = row_mask[:, None] & (j < L)[None, :]
            if BACKWARD:
                r = _backward_row(_load(x, a_row, j, a_l, mask, 0.0, CT),
                                  _load(y, b_row, j, b_l, mask, 0.0, CT), total, LOG)
            else:
                r = _forward_row(_load(x, a_row, j, a_l, mask, float("-inf"), CT), m, s, LOG)
            tl.store(out + o_row[:, None] + j[None, :] * o_l, r.to(out_ty), mask=mask)


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


def _recipe(x, y, out, dims, backward, log, target=None):
    """The launch for arrays laid out like these (x and y read where they lie, out contiguous)."""
    roles = [("x", "a_", x), ("y", "b_", y), ("out", "o_", out)]
    present = [a for _, _, a in roles if a is not None]
    layout = RowLayout(out.shape, dims, [a.element_strides() for a in present], reorder=False)
    plan = _Plan(layout)
    ity = layout.index_type()
    entries = [pointer(role, role, a) for role, _, a in roles]
    entries += [("M", layout.rows, ity), ("L", layout.length, ity)]
    entries += size_entries("k", layout.kept_sizes, MAX_ROW_DIMS, ity)
    k = 0
    for _, prefix, a in roles:
        kept, red = (layout.kept_strides[k], layout.red_strides[k][0]) if a is not None else ((), 0)
        k += a is not None
        entries += stride_entries(prefix, kept, MAX_ROW_DIMS, ity)
        entries.append((prefix[0] + "_l", red, "constexpr" if red in (0, 1) else ity))
    ct = tl.float64 if out.dtype == np.float64 else tl.float32
    entries += const(LOG=log, BACKWARD=backward, ONE_PASS=plan.one_pass,
                     KDIM=len(layout.kept_sizes), CT=ct, INDEX64=ity == "i64", BM=plan.bm,
                     BL=plan.bl)
    recipe = Recipe(out.device, target)
    recipe.add(_softmax_kernel, (cdiv(layout.rows, plan.bm),), entries, plan.num_warps)
    return recipe


_recipes = RecipeCache()


def _geometry(a):
    return None if a is None else (a.strides, a.dtype, a.ptr % 16 == 0)


def _run(x, y, dim, backward, log):
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    out = CUDAArray.empty(x.shape, x.dtype, device, stream)
    if out.storage.nbytes:
        dims = (dim,) if x.shape else ()
        key = (x.shape, x.strides, x.dtype, x.ptr % 16 == 0, _geometry(y), dims, backward, log,
               device)
        recipe = _recipes.get_or_build(key, lambda: _recipe(x, y, out, dims, backward, log))
        recipe.run(stream, {"x": x, "y": y, "out": out})
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


def compile_all(target):
    """Forward and backward, one pass and online, rows and columns, float32/float16/bfloat16
    (and float64), compiled for `target` (CI, no GPU needed)."""
    import ml_dtypes
    cases = [((4096, 1000), 1), ((64, 16384), 1), ((8, 50257), 1), ((1000, 64), 0),
             ((4, 8, 33), 1)]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for shape, dim in cases if dtype == np.float32 else cases[:1]:
            x = placeholder(shape, dtype)
            for backward in (False, True):
                for log in (False, True):
                    _recipe(x, x if backward else None, x, (dim,), backward, log, target)
