"""Reduction kernels: the contracts of backends/cpu/reduce.py on the GPU (its scans are in
kernels/scan.py).

Any set of dims is reduced by seeing the input as rows x reduced elements without copying: the
kept dims (in order; the output is contiguous over them) and the reduced dims (reordered by
stride, so the contiguous one is innermost) are each coalesced and indexed in the kernel
(kernels/_strided_indexing.py). One kernel body serves every reduction: each keeps a state per
lane of a [BM, BR] tile of rows x reduced elements, folds the tile's elements into it while
walking the row, then combines the lanes with `tl.reduce`. The states: a single accumulator
(sum, prod, max, min, any, all, norms, mean), (value, index) for arg reductions, (mean, m2,
count) for the variance (Welford/Chan merges), (max, scaled sum) for logsumexp.

Determinism: no float atomics. Rows too long for their programs alone (few rows, long
reductions) are split over a second grid axis, each split writing its state to a scratch buffer
of partial states, merged in split order. The split count depends only on the shape, so the
same input gives the same bits on every run (and on every GPU). Half types accumulate in
float32, float64 in float64, integer sums and products in int64.

Splits merge in the same launch (STAGE "split"): each program stores its partial state and
bumps an int32 counter of its row block; the program that brings it to the split count merges
the block's states in split order and sets the counter back to 0. That saves the second launch
and the gap before it (a few us: several percent of a 256 MB sum's ~75 us). The counters live
for the process, one zeroed buffer per (device, stream) (split_counters). The last program reads
BM x splits states alone, so when that is more than two tiles (column reductions: BM up to
64) the states are merged by a second launch over many programs instead (STAGE "partial",
then "merge").

Tiles: 4096 elements per iteration for one-accumulator states (2048 for two or three), 8 warps:
16 float32 elements per thread per iteration, in 16-byte vector loads along the contiguous
axis; ptxas overlaps the loads of successive iterations (about four vectors in flight per
thread) when they are unpredicated, which they are whenever BM divides the row count (EVEN_M).
Rows of at least a tile's length get a whole tile (BM=1); shorter rows are packed several to a
program. When the kept dims are the contiguous ones (reducing a leading dim, as a bias gradient
does) the tile is laid along the rows instead, BM up to 64 columns, so loads stay coalesced, and
splits aim at 512 programs: GPT-2 small's bias gradients, (8192, 768 to 3072) bfloat16, take
27-42 us so on an H200, against 58-107 us with 256 columns and 4096 programs (PyTorch: 24-39
us). Elsewhere splits aim at 4096 programs in all (a 256 MB float32 sum: 4096 programs of four
tiles, 64 KB, each): many times the programs
resident at once (about 4 a SM, 528 on an H100/H200), short enough that the last ones end soon
after the rest, and their 4096 partial states are one tile for the merging program.

Inputs of 64 MB or more (past the 50 MB L2 of an H100/H200) are read with an evict-first L2
policy: they are read once and cannot stay in L2 anyway, so their lines are recycled among
themselves instead of evicting what L2 holds (the next kernel's data, or dirty lines that
would otherwise be written back to DRAM inside this reduction's time).
"""

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..launch import Launch, LaunchCache, workspace_views
from ..runtime import driver
from ..runtime.array import CUDAArray, contiguous_byte_strides
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn, is_float, sqrt_rn
from ._strided_indexing import (MAX_ROW_DIMS, RowLayout, cdiv, dim_sizes, dim_strides,
                                next_pow2, offsets, placeholder, program_range)

# Why these sizes: see the module docstring (programs in all, elements a tile, tiles of states
# the last program may merge alone, the input size read with an evict-first policy).
_SPLIT_TARGET = 4096
_COLUMN_SPLIT_TARGET = 512
_COLUMN_TILE_WIDTH = 64
_MAX_TILE = 4096
_FUSED_MERGE_TILES = 2
_STREAM_BYTES = 64 << 20


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _max(a, b):
    """The larger; NaN wins."""
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _min(a, b):
    """The smaller; NaN wins."""
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _argmax(va, ia, vb, ib):
    """(value, index) of the larger; the first index on ties; NaN wins (the first NaN)."""
    nan_a = va != va
    take_a = (va > vb) | ((va == vb) & (ia < ib)) | (nan_a & ((vb == vb) | (ia < ib)))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _argmin(va, ia, vb, ib):
    """(value, index) of the smaller; the first index on ties; NaN wins (the first NaN)."""
    nan_a = va != va
    take_a = (va < vb) | ((va == vb) & (ia < ib)) | (nan_a & ((vb == vb) | (ia < ib)))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _welford(ma, m2a, na, mb, m2b, nb):
    """Chan's merge of (mean, sum of squared deviations, count) pairs; empty states are exact."""
    n = na + nb
    wb = div_rn(nb, tl.where(n == 0, 1.0, n))
    delta = mb - ma
    return ma + delta * wb, m2a + m2b + delta * delta * na * wb, n


@triton.jit
def _logsumexp(ma, sa, mb, sb):
    """(max, sum of exp(x - max)) pairs merged; equal maxima (also +-inf) need no rescaling."""
    m = _max(ma, mb)
    ea = tl.where(ma == m, sa, sa * libdevice.exp(ma - m))
    eb = tl.where(mb == m, sb, sb * libdevice.exp(mb - m))
    return m, ea + eb


@triton.jit
def _identity(KIND: tl.constexpr, FAMILY: tl.constexpr, shape: tl.constexpr,
              ACC: tl.constexpr):
    """The state an empty reduction starts from, an (a, b, c) tuple of `shape` tensors."""
    zero = tl.zeros(shape, ACC)
    if KIND == "any":
        a = zero
    elif FAMILY == "mul" or KIND == "all":
        a = zero + 1
    elif FAMILY == "max" or FAMILY == "argmax" or FAMILY == "lse":
        if ACC.is_floating():
            a = zero + float("-inf")
        else:
            a = zero - (2 ** 63 - 1)
    elif FAMILY == "min" or FAMILY == "argmin":
        if ACC.is_floating():
            a = zero + float("inf")
        else:
            a = zero + (2 ** 63 - 1)
    else:
        a = zero
    if FAMILY == "argmax" or FAMILY == "argmin":
        b = tl.full(shape, 2 ** 62, tl.int64)
    else:
        b = zero
    return a, b, zero


@triton.jit
def _element(KIND: tl.constexpr, FAMILY: tl.constexpr, v, r, p0, ACC: tl.constexpr):
    """The state of one loaded element `v` at reduced index `r`."""
    if KIND == "nansum":
        a = tl.where(v != v, 0, v).to(ACC)
    elif KIND == "count_nonzero" or KIND == "norm0" or KIND == "any" or KIND == "all":
        a = (v != 0).to(ACC)
    elif KIND == "norm1" or KIND == "norminf" or KIND == "normninf":
        a = tl.abs(v.to(ACC))
    elif KIND == "norm2":
        a = v.to(ACC) * v.to(ACC)
    elif KIND == "normp":
        a = libdevice.pow(tl.abs(v.to(ACC)), p0)
    else:
        a = v.to(ACC)
    zero = tl.zeros_like(a)
    if FAMILY == "welford":
        s = (a, zero, zero + 1)
    elif FAMILY == "lse":
        s = (a, zero + 1, zero)
    elif FAMILY == "argmax" or FAMILY == "argmin":
        s = (a, r.to(tl.int64) + tl.zeros(a.shape, tl.int64), zero)
    else:
        s = (a, zero, zero)
    return s


@triton.jit
def _combine(FAMILY: tl.constexpr, s, t):
    """Merge states `s` and `t` (elementwise over their tiles)."""
    if FAMILY == "add":
        out = (s[0] + t[0], s[1], s[2])
    elif FAMILY == "mul":
        out = (s[0] * t[0], s[1], s[2])
    elif FAMILY == "max":
        out = (_max(s[0], t[0]), s[1], s[2])
    elif FAMILY == "min":
        out = (_min(s[0], t[0]), s[1], s[2])
    elif FAMILY == "argmax":
        v, i = _argmax(s[0], s[1], t[0], t[1])
        out = (v, i, s[2])
    elif FAMILY == "argmin":
        v, i = _argmin(s[0], s[1], t[0], t[1])
        out = (v, i, s[2])
    elif FAMILY == "welford":
        out = _welford(s[0], s[1], s[2], t[0], t[1], t[2])
    else:
        m, e = _logsumexp(s[0], s[1], t[0], t[1])
        out = (m, e, s[2])
    return out


@triton.jit
def _masked(s, t, mask):
    """`t` where `mask`, else `s` (a masked-off lane keeps its state)."""
    return tl.where(mask, t[0], s[0]), tl.where(mask, t[1], s[1]), tl.where(mask, t[2], s[2])


@triton.jit
def _lanes(FAMILY: tl.constexpr, s):
    """The per-row states: the lanes of the [BM, BR] tile `s` combined along axis 1."""
    if FAMILY == "add":
        out = (tl.sum(s[0], 1), 0, 0)
    elif FAMILY == "mul":
        out = (tl.reduce(s[0], 1, _mul), 0, 0)
    elif FAMILY == "max":
        out = (tl.reduce(s[0], 1, _max), 0, 0)
    elif FAMILY == "min":
        out = (tl.reduce(s[0], 1, _min), 0, 0)
    elif FAMILY == "argmax":
        v, i = tl.reduce((s[0], s[1]), 1, _argmax)
        out = (v, i, 0)
    elif FAMILY == "argmin":
        v, i = tl.reduce((s[0], s[1]), 1, _argmin)
        out = (v, i, 0)
    elif FAMILY == "welford":
        out = tl.reduce((s[0], s[1], s[2]), 1, _welford)
    else:
        m, e = tl.reduce((s[0], s[1]), 1, _logsumexp)
        out = (m, e, 0)
    return out


@triton.jit
def _finalize(KIND: tl.constexpr, s, p0, p1):
    """The reduction's value from a row's state (p0: count, correction or p; p1: 1/p)."""
    a = s[0]
    if KIND == "mean":
        r = div_rn(a, p0)
    elif KIND == "norm2":
        r = sqrt_rn(a)
    elif KIND == "normp":
        r = libdevice.pow(a, p1)
    elif KIND == "any" or KIND == "all":
        r = a != 0
    elif KIND == "var" or KIND == "std":
        r = div_rn(s[1], tl.maximum(s[2] - p0, 0.0))
        if KIND == "std":
            r = sqrt_rn(r)
    elif KIND == "logsumexp":
        r = tl.where((a == float("inf")) | (a == float("-inf")), a, a + libdevice.log(s[1]))
    else:
        r = a
    return r


@triton.jit
def _tile(KIND: tl.constexpr, FAMILY: tl.constexpr, x, xb, xc, s, row_off, r, r_off, mask, p0,
          ACC: tl.constexpr, MERGE: tl.constexpr, MASKED: tl.constexpr, EVICT: tl.constexpr):
    """Fold one [BM, BR] tile (reduced indices `r` at offsets `r_off`) into the lane states `s`.

    MERGE: the tile holds partial states, maybe written by other programs of this launch, so
    they are read from L2 (.cg), past this SM's L1. EVICT: the L2 eviction policy of the input.
    """
    off = row_off[:, None] + r_off[None, :]
    if MERGE:
        t = (tl.load(x + off, mask=mask, cache_modifier=".cg"), _load_or_zero(xb, off, mask),
             _load_or_zero(xc, off, mask))
    else:
        t = _element(KIND, FAMILY, tl.load(x + off, mask=mask, eviction_policy=EVICT),
                     r[None, :], p0, ACC)
    if MASKED:
        t = _masked(s, _combine(FAMILY, s, t), mask)
    else:
        t = _combine(FAMILY, s, t)
    return t


@triton.jit
def _load_or_zero(x, off, mask):
    if x is None:
        v = 0
    else:
        v = tl.load(x + off, mask=mask, cache_modifier=".cg")
    return v


@triton.jit
def _fold(KIND: tl.constexpr, FAMILY: tl.constexpr, x, xb, xc, row_off, row_mask, r_lo, r_hi,
          rsizes, rstrides, RDIM: tl.constexpr, p0, ACC: tl.constexpr, MERGE: tl.constexpr,
          EVICT: tl.constexpr, EVEN_M: tl.constexpr, BM: tl.constexpr, BR: tl.constexpr):
    """The states of BM rows over reduced elements [r_lo, r_hi), walked in [BM, BR] tiles (the
    last one masked) and combined across the lanes. EVEN_M: every row is in range, so whole
    tiles load unpredicated (ptxas then keeps more of them in flight)."""
    full_hi = r_lo + (r_hi - r_lo) // BR * BR
    s = _identity(KIND, FAMILY, (BM, BR), ACC)
    lane = tl.arange(0, BR)
    if EVEN_M:
        full_mask = None
    else:
        full_mask = row_mask[:, None]
    for r0 in range(r_lo, full_hi, BR):
        r = r0 + lane
        s = _tile(KIND, FAMILY, x, xb, xc, s, row_off, r, offsets(r, rsizes, rstrides, RDIM),
                  full_mask, p0, ACC, MERGE, False, EVICT)
    if full_hi < r_hi:
        r = full_hi + lane
        mask = row_mask[:, None] & (r < r_hi)[None, :]
        s = _tile(KIND, FAMILY, x, xb, xc, s, row_off, r, offsets(r, rsizes, rstrides, RDIM),
                  mask, p0, ACC, MERGE, True, EVICT)
    return _lanes(FAMILY, s)


@triton.jit
def _store_result(KIND: tl.constexpr, s, out, out_index, rows, row_mask, p0, p1):
    """Each row's result (out) and, for arg reductions, its index (out_index)."""
    if out is not None:
        tl.store(out + rows, _finalize(KIND, s, p0, p1).to(out.dtype.element_ty), mask=row_mask)
    if out_index is not None:
        tl.store(out_index + rows, s[1], mask=row_mask)


@triton.jit
def _reduce_kernel(
        # pointers: the input, or for STAGE "merge" the partial states (in up to three parts)
        x_ptr, x_b_ptr, x_c_ptr,
        # pointers: the results (values, and the indices of arg reductions)
        out_ptr, out_index_ptr,
        # pointers: the partial states of (row, split), in up to three parts; split counters
        part_ptr, part_b_ptr, part_c_ptr, counts_ptr,
        # sizes: rows, reduced elements per row and per split, then the coalesced kept dims
        # (rows) and reduced dims (size0 of each is never read)
        n_rows, n_reduced, split_len,
        row_size1, row_size2, row_size3, red_size1, red_size2, red_size3,
        # strides, in elements, of the kept dims and of the reduced dims
        row_stride0, row_stride1, row_stride2, row_stride3,
        red_stride0, red_stride1, red_stride2, red_stride3,
        # scalars: p0 the count (mean), the correction (var, std) or p (normp); p1 is 1/p
        p0, p1,
        # meta-parameters
        KIND: tl.constexpr, FAMILY: tl.constexpr, STAGE: tl.constexpr,
        ROW_DIMS: tl.constexpr, RED_DIMS: tl.constexpr, ACC: tl.constexpr,
        INDEX64: tl.constexpr, EVICT: tl.constexpr, EVEN_M: tl.constexpr,
        BM: tl.constexpr, BR: tl.constexpr, BS: tl.constexpr):
    """Reduce rows pid_m*BM.. over reduced elements [pid_s*split_len, +split_len).

    STAGE "full": write the result of each row to out (values) and out_index (indices).
    "partial": write each row's state to part/part_b/part_c[row, pid_s].
    "merge": x holds such partial states (n_reduced per row); write the results as "full".
    "split": "partial", then the last program of this row block to finish (counts[pid_m]
    counts them; that program sets it back to 0 for the next launch) merges its rows' partial
    states in split order, [BM, BS] at a time, and writes the results as "full". Which program
    is last varies from run to run; the order of the merge does not, so neither do the bits.
    FAMILY says how states combine (see _combine).
    """
    pid_s = tl.program_id(1)
    rows = program_range(BM, INDEX64)
    r_lo = pid_s.to(rows.dtype) * split_len
    row_mask = rows < n_rows
    row_off = offsets(rows, (1, row_size1, row_size2, row_size3),
                      (row_stride0, row_stride1, row_stride2, row_stride3), ROW_DIMS)
    s = _fold(KIND, FAMILY, x_ptr, x_b_ptr, x_c_ptr, row_off, row_mask, r_lo,
              tl.minimum(r_lo + split_len, n_reduced), (1, red_size1, red_size2, red_size3),
              (red_stride0, red_stride1, red_stride2, red_stride3), RED_DIMS, p0, ACC,
              STAGE == "merge", EVICT, EVEN_M, BM, BR)
    if STAGE == "partial" or STAGE == "split":
        splits = tl.num_programs(1)
        at = rows * splits + pid_s
        tl.store(part_ptr + at, s[0], mask=row_mask)
        if part_b_ptr is not None:
            tl.store(part_b_ptr + at, s[1], mask=row_mask)
        if part_c_ptr is not None:
            tl.store(part_c_ptr + at, s[2], mask=row_mask)
        if STAGE == "split":
            # Every thread's stores precede the count (CTA barrier); the count releases them to
            # the program that sees it reach `splits` and acquires them (acq_rel, GPU scope).
            tl.debug_barrier()
            done = tl.atomic_add(counts_ptr + tl.program_id(0), 1, sem="acq_rel", scope="gpu")
            if done == splits - 1:
                tl.store(counts_ptr + tl.program_id(0), 0)
                s = _fold(KIND, FAMILY, part_ptr, part_b_ptr, part_c_ptr, rows * splits,
                          row_mask, 0, splits, (1, 1, 1, 1), (1, 0, 0, 0), 1, p0, ACC, True, "",
                          EVEN_M, BM, BS)
                _store_result(KIND, s, out_ptr, out_index_ptr, rows, row_mask, p0, p1)
    else:
        _store_result(KIND, s, out_ptr, out_index_ptr, rows, row_mask, p0, p1)


_FAMILIES = {"prod": "mul", "amax": "max", "any": "max", "norminf": "max", "amin": "min",
             "all": "min", "normninf": "min", "argmax": "argmax", "argmin": "argmin",
             "var": "welford", "std": "welford", "logsumexp": "lse"}
_STATE_SIZES = {"argmax": 2, "argmin": 2, "welford": 3, "lse": 2}
_TL = {"float32": tl.float32, "float64": tl.float64, "int32": tl.int32, "int64": tl.int64}
_INT64 = np.dtype(np.int64)


def _family(kind):
    return _FAMILIES.get(kind, "add")


def _acc_dtype(kind, dtype):
    """The numpy dtype `kind` accumulates `dtype` data in."""
    if kind in ("any", "all"):
        return np.dtype(np.int32)
    if kind == "count_nonzero" or not is_float(dtype):
        return _INT64
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _tile_elements(states):
    """Elements per [BM, BR] tile: fewer when each lane carries a two- or three-part state."""
    return _MAX_TILE // (1 if states == 1 else 2)


class _Plan:
    """Tile shape, warps, split count and merge for a layout (see the module docstring)."""

    def __init__(self, layout, states):
        tile = _tile_elements(states)
        rows, length = layout.rows, layout.length
        red_unit = layout.red_strides[0][-1] == 1 and layout.red_sizes[-1] > 1
        kept_unit = layout.kept_strides[0][-1] == 1 and layout.kept_sizes[-1] > 1
        columns = kept_unit and not red_unit
        if columns:
            self.bm = min(next_pow2(rows), _COLUMN_TILE_WIDTH, tile)
            self.br = min(next_pow2(length), tile // self.bm)
        else:
            self.br = min(next_pow2(length), tile)
            self.bm = min(next_pow2(rows), max(1, tile // self.br))
        self.num_warps = _warps(self.bm * self.br)
        self.grid_m = cdiv(rows, self.bm)
        chunks = max(1, cdiv(length, self.br))
        target = _COLUMN_SPLIT_TARGET if columns else _SPLIT_TARGET
        splits = min(chunks, max(1, target // self.grid_m))
        self.r_split = cdiv(chunks, splits) * self.br
        self.splits = cdiv(max(length, 1), self.r_split)
        self.fused = 1 < self.splits and self.bm * self.splits <= _FUSED_MERGE_TILES * tile
        self.bs = min(next_pow2(self.splits), max(1, tile // self.bm))


def _warps(elements):
    """8 warps for a 4096-element tile (16 elements, four 16-byte float32 vectors, a thread)."""
    return max(1, min(8, elements // 512))


def _launch_dims(layout, merge_splits=None):
    """(row sizes, reduced sizes, row strides, reduced strides) of `layout` as kernel arguments,
    or of an [rows, merge_splits] buffer of partial states."""
    if merge_splits is not None:
        kept, kept_st, red, red_st = [layout.rows], [merge_splits], [merge_splits], [1]
    else:
        kept, kept_st = layout.kept_sizes, layout.kept_strides[0]
        red, red_st = layout.red_sizes, layout.red_strides[0]
    return (dim_sizes(kept, MAX_ROW_DIMS), dim_sizes(red, MAX_ROW_DIMS),
            dim_strides(kept_st, MAX_ROW_DIMS), dim_strides(red_st, MAX_ROW_DIMS))


_NO_STATES = (None, None, None)


def _reduce_launch(launch, dims, stream, x, out, out_index, part, counts, p0, p1):
    """The call of _reduce_kernel. `x` and `part` are (a, b, c) state arrays (b and c None where
    a state has fewer parts; `x` is the input as a one-part state); `dims` is (n_rows,
    n_reduced, split_len) followed by _launch_dims."""
    n_rows, n_reduced, split_len, row_sizes, red_sizes, row_strides, red_strides = dims
    launch(stream,
           # pointers
           *x, out, out_index, *part, counts,
           # sizes
           n_rows, n_reduced, split_len, *row_sizes, *red_sizes,
           # strides
           *row_strides, *red_strides,
           # scalars
           p0, p1)


class _Reduction:
    """The launches of one reduction geometry (see the module docstring): one launch ("full",
    or "split" merging in the same launch), or "partial" then "merge". Built on the first call
    with its geometry and kept; with a `target`, its launches only compile."""

    def __init__(self, kind, x, dims, reorder, n_params, target=None):
        self.device, self.target, self.stage = x.device, target, None
        layout = RowLayout(x.shape, dims, [x.element_strides()], reorder)
        self.copy = not layout.fits()
        if self.copy:
            x = placeholder(x.shape, x.dtype)
            layout = RowLayout(x.shape, dims, [x.element_strides()], reorder)
        if not layout.rows:
            return
        acc = _acc_dtype(kind, x.dtype)
        family = _family(kind)
        states = _STATE_SIZES.get(family, 1)
        plan = _Plan(layout, states)
        rows, length = layout.rows, layout.length
        ity = "i64" if rows * plan.splits >= 2 ** 31 else layout.index_type()
        scalar_type = "fp64" if acc == np.float64 else "fp32"
        evict = "evict_first" if x.size * x.itemsize >= _STREAM_BYTES else ""

        def launch(stage, grid, num_warps, n_dims, blocks, evict_=""):
            meta = dict(KIND=kind, FAMILY=family, STAGE=stage, ROW_DIMS=n_dims[0],
                        RED_DIMS=n_dims[1], ACC=_TL[acc.name], INDEX64=ity == "i64",
                        EVICT=evict_, EVEN_M=rows % blocks[0] == 0, BM=blocks[0], BR=blocks[1],
                        BS=blocks[2])
            return Launch(_reduce_kernel, grid, meta, num_warps, int_type=ity,
                          types={"p0": scalar_type, "p1": scalar_type}, per_call=("p0", "p1"),
                          device=self.device, target=target)

        blocks = (plan.bm, plan.br, plan.bs)
        split_len = length if plan.splits == 1 else plan.r_split
        self.stage = "full" if plan.splits == 1 else "split" if plan.fused else "partial"
        self.dims = (rows, length, split_len) + _launch_dims(layout)
        self.launch = launch(self.stage, (plan.grid_m, plan.splits), plan.num_warps,
                             (len(layout.kept_sizes), len(layout.red_sizes)), blocks, evict)
        self.row_blocks = plan.grid_m if self.stage == "split" else 0
        index_state = family in ("argmax", "argmin")
        self.parts = [((rows, plan.splits), _INT64 if i == 1 and index_state else acc)
                      for i in range(states)]
        self.scratch_bytes = sum(_scratch_bytes(shape, dtype) for shape, dtype in self.parts)
        if self.stage == "partial":
            br = min(next_pow2(plan.splits), _tile_elements(states))
            bm = min(next_pow2(rows), max(1, _tile_elements(states) // br))
            self.merge_dims = (rows, plan.splits, plan.splits) + _launch_dims(layout, plan.splits)
            self.merge = launch("merge", (cdiv(rows, bm),), _warps(bm * br), (1, 1),
                                (bm, br, 1))

    def run(self, stream, x, out, out_index, params):
        """Launch into `out` (values or None) and `out_index` (indices or None)."""
        p0, p1 = (tuple(params) + (None, None))[:2]
        source = (x, None, None)
        if self.stage == "full":
            _reduce_launch(self.launch, self.dims, stream, source, out, out_index, _NO_STATES,
                           None, p0, p1)
        elif self.stage == "split":
            counts = (placeholder((self.row_blocks,), np.int32) if self.target else
                      split_counters(self.device, stream, self.row_blocks))
            _reduce_launch(self.launch, self.dims, stream, source, out, out_index,
                           self._workspace_parts(stream), counts, p0, p1)
        else:
            part = self._fresh_parts(stream)
            _reduce_launch(self.launch, self.dims, stream, source, None, None, part, None, p0,
                           p1)
            _reduce_launch(self.merge, self.merge_dims, stream, part, out, out_index,
                           _NO_STATES, None, p0, p1)

    def _workspace_parts(self, stream):
        """The partial states of a single "split" launch, in the stream's workspace (which
        that launch alone writes and reads), made once per workspace."""
        if self.target:
            return self._fresh_parts(stream)
        return workspace_views(self.device, stream, self.scratch_bytes, self, self._views_of)

    def _views_of(self, workspace):
        """The partial-state arrays laid out one after another in `workspace`."""
        views, offset = [], workspace.offset
        for shape, dtype in self.parts:
            views.append(CUDAArray(workspace.storage, shape,
                                   contiguous_byte_strides(shape, dtype.itemsize), offset, dtype))
            offset += _scratch_bytes(shape, dtype)
        return _padded(views)

    def _fresh_parts(self, stream):
        """Partial states in arrays of their own: a "merge" launch reads what the "partial"
        launch wrote, and another thread's launches on the stream may come between."""
        if self.target:
            return _padded([placeholder(shape, dtype) for shape, dtype in self.parts])
        return _padded([CUDAArray.empty(shape, dtype, self.device, stream)
                        for shape, dtype in self.parts])


def _padded(states):
    return tuple(states) + (None,) * (3 - len(states))


_SCRATCH_ALIGN = 256


def _scratch_bytes(shape, dtype):
    """Bytes of a partial-state buffer in the workspace, rounded up to keep the next aligned."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return cdiv(nbytes, _SCRATCH_ALIGN) * _SCRATCH_ALIGN


_reductions = LaunchCache()


def reduce(kind, x, dims, out_shape, out_dtype=None, params=(), indices=False, reorder=True):
    """Reduce `x` over `dims` with `kind`: (values or None, int64 indices or None), contiguous
    arrays of `out_shape`. `out_dtype` None skips the values (argmax)."""
    device = x.device
    activate(device)
    stream = current_stream_handle(device)
    values = None if out_dtype is None else CUDAArray.empty(out_shape, out_dtype, device, stream)
    index = CUDAArray.empty(out_shape, _INT64, device, stream) if indices else None
    key = (kind, x.shape, x.strides, x.dtype, x.ptr % 16 == 0, dims, reorder, out_dtype,
           indices, len(params), device)
    reduction = _reductions.get_or_build(
        key, lambda: _Reduction(kind, x, dims, reorder, len(params)))
    if reduction.stage is not None:
        reduction.run(stream, _contiguous(x, stream) if reduction.copy else x, values, index,
                      params)
    return values, index


_COUNTS = {}


def split_counters(device, stream, groups):
    """The int32 counters of single-launch split reductions on (device, stream), all zero
    between launches (each launch's last programs set theirs back).

    Allocated zeroed once per stream (grown when a launch needs more row blocks) and kept for
    the process: reductions on one stream run one after another, so they can share it, and
    launches on other streams, which may overlap, use their own."""
    counts = _COUNTS.get((device, stream))
    if counts is None or counts.size < groups:
        counts = CUDAArray.empty((max(groups, _SPLIT_TARGET),), np.int32, device, stream)
        driver.memset_d8(counts.ptr, 0, counts.size * 4, stream)
        _COUNTS[(device, stream)] = counts
    return counts


def _contiguous(x, stream):
    from .copy import strided_copy
    out = CUDAArray.empty(x.shape, x.dtype, x.device, stream)
    strided_copy(out, x, stream)
    return out


def _dims(dims):
    return (dims,) if isinstance(dims, int) else tuple(dims)


def _out_shape(shape, dims, keepdim):
    if keepdim:
        return tuple([1 if i in dims else s for i, s in enumerate(shape)])
    return tuple([s for i, s in enumerate(shape) if i not in dims])


def _values(kind, x, dims, keepdim, out_dtype, params=()):
    dims = _dims(dims)
    return reduce(kind, x, dims, _out_shape(x.shape, dims, keepdim), out_dtype, params)[0]


@register("sum", "cuda")
def sum_(x, dims, keepdim, dtype):
    """Sum over `dims` giving `dtype` (integer sums accumulate in int64)."""
    return _values("sum", x, dims, keepdim, dtype.numpy_dtype)


@register("nansum", "cuda")
def nansum(x, dims, keepdim, dtype):
    return _values("nansum", x, dims, keepdim, dtype.numpy_dtype)


@register("prod", "cuda")
def prod(x, dims, keepdim, dtype):
    return _values("prod", x, dims, keepdim, dtype.numpy_dtype)


@register("mean", "cuda")
def mean(x, dims, keepdim):
    """Mean over `dims`; an empty reduction gives nan (0/0), as PyTorch."""
    dims = _dims(dims)
    count = 1
    for d in dims:
        count *= x.shape[d]
    return _values("mean", x, dims, keepdim, x.dtype, (float(count),))


@register("amax", "cuda")
def amax(x, dims, keepdim):
    return _values("amax", x, dims, keepdim, x.dtype)


@register("amin", "cuda")
def amin(x, dims, keepdim):
    return _values("amin", x, dims, keepdim, x.dtype)


def _arg_select(kind, x, dim, keepdim):
    """Index along `dim` (None: of the flattened array, in logical order), first on ties."""
    if dim is None:
        dims = tuple(range(x.ndim))
        shape = (1,) * x.ndim if keepdim else ()
    else:
        dims = (dim,) if x.ndim else ()
        shape = _out_shape(x.shape, dims, keepdim)
    return reduce(kind, x, dims, shape, indices=True, reorder=False)[1]


@register("argmax", "cuda")
def argmax(x, dim, keepdim):
    return _arg_select("argmax", x, dim, keepdim)


@register("argmin", "cuda")
def argmin(x, dim, keepdim):
    return _arg_select("argmin", x, dim, keepdim)


def _select_dim(kind, x, dim, keepdim):
    dims = (dim,) if x.ndim else ()
    return reduce(kind, x, dims, _out_shape(x.shape, dims, keepdim), x.dtype, indices=True,
                  reorder=False)


@register("max_dim", "cuda")
def max_dim(x, dim, keepdim):
    """(values, indices) of the maximum along `dim`."""
    return _select_dim("argmax", x, dim, keepdim)


@register("min_dim", "cuda")
def min_dim(x, dim, keepdim):
    return _select_dim("argmin", x, dim, keepdim)


@register("var", "cuda")
def var(x, dims, keepdim, correction, take_sqrt):
    """Variance (its square root when `take_sqrt`, rounded once) with `correction` subtracted
    from the count; N - correction <= 0 gives inf or nan."""
    return _values("std" if take_sqrt else "var", x, dims, keepdim, x.dtype, (float(correction),))


@register("logsumexp", "cuda")
def logsumexp(x, dims, keepdim):
    """log(sum(exp(x))), one pass with a running max; all -inf (or empty) gives -inf."""
    return _values("logsumexp", x, dims, keepdim, x.dtype)


_NORMS = {float("inf"): "norminf", float("-inf"): "normninf", 0.0: "norm0", 1.0: "norm1",
          2.0: "norm2"}


@register("norm", "cuda")
def norm(x, dims, keepdim, p):
    """The vector p-norm over `dims` (p may be inf, -inf or 0)."""
    p = float(p)
    kind = _NORMS.get(p, "normp")
    return _values(kind, x, dims, keepdim, x.dtype, (p, 1.0 / p) if kind == "normp" else ())


@register("any", "cuda")
def any_(x, dims, keepdim):
    return _values("any", x, dims, keepdim, np.dtype(np.bool_))


@register("all", "cuda")
def all_(x, dims, keepdim):
    return _values("all", x, dims, keepdim, np.dtype(np.bool_))


@register("count_nonzero", "cuda")
def count_nonzero(x, dims):
    return _values("count_nonzero", x, dims, False, _INT64)
