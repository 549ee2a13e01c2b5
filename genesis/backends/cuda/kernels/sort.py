"""sort, topk and unique on the GPU: stable, deterministic, NaN sorting as the largest value.

Each element becomes an integer sort key whose signed order is the wanted order: floats by their
bits with the negative half flipped (-0.0 folded onto +0.0, every NaN onto the largest key),
integers and bool by value, all of it complemented for a descending sort. The key travels with the
element's index along the sorted dim and ties break on that index, which is what makes the sort
stable, and stable descending ties come out in torch's order (values falling, indices rising).
For dtypes up to 32 bits key and index are packed into one int64 word (key << 32 | index), so a
comparison is one integer compare and Triton's bitonic `tl.sort` sorts them; 64-bit dtypes carry
(key, index) pairs through a bitonic network of the same shape written here.

Rows are the input seen as kept dims x the sorted dim (kernels/_strided.py), read where they lie.
A row of up to SORT_BLOCK elements is sorted in registers by one program (short rows packed
several to a program) and written out directly: values are read back from the input at the
sorted indices, so they come out bit for bit. Longer rows are sorted in SORT_BLOCK chunks into a
scratch buffer of words, then merged pairwise, run widths doubling, each element finding its
place by a binary search of the other run (keys are distinct, so the merge is exact and
deterministic); the last pass writes values and indices.

topk sorts by the same keys (largest: descending): rows that fit a block are sorted in registers
and the first k written; for longer rows with k <= SORT_BLOCK / 2 each chunk keeps its k smallest
keys and the candidates are reduced chunk by chunk until one block holds them (no full sort); a
larger k sorts the whole row and writes the first k.

unique sorts the flattened input (or the slices along `dim`, lexicographically through one
stable sort per column, last column first), marks where a value differs from its predecessor,
numbers the groups with a cumsum and scatters values, inverse indices and counts in one kernel.
"""

import numpy as np
import triton
import triton.language as tl
from triton.language.standard import _indicator, _log2, xor_sum

from ....dispatch import register
from ..runtime import driver
from ..runtime.array import CUDAArray, contiguous_byte_strides
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._recipe import (MAX_ROW_DIMS, Recipe, RecipeCache, RowLayout, cdiv, const, next_pow2,
                       offsets, placeholder, pointer, size_entries, stride_entries)
from .copy import fill
from .reduce import scan
from .shape import contiguous_copy

SORT_BLOCK = 2048
MERGE_BLOCK = 1024
_MIN_TILE = 1024
_INT64_MAX = tl.constexpr(2 ** 63 - 1)
_INT32_MAX = tl.constexpr(2 ** 31 - 1)


@triton.jit
def _float_bits(x, BITS: tl.constexpr):
    """The bits of float x as a signed integer (16-bit ones sign-extended to int32)."""
    if BITS == 16:
        b = x.to(tl.int16, bitcast=True).to(tl.int32)
    elif BITS == 32:
        b = x.to(tl.int32, bitcast=True)
    else:
        b = x.to(tl.int64, bitcast=True)
    return b


@triton.jit
def is_nan(x, INF: tl.constexpr, BITS: tl.constexpr):
    """NaN told by its bits (bfloat16 included): magnitude bits above those of +inf (INF)."""
    low: tl.constexpr = (1 << (BITS - 1)) - 1
    return (_float_bits(x, BITS) & low) > INF


@triton.jit
def _sort_key(x, INF: tl.constexpr, BITS: tl.constexpr, FLIP):
    """An integer (int32, or int64 for 64-bit dtypes) whose signed order is x's sort order;
    FLIP -1 complements it (descending), 0 keeps it. INF: the bits of +inf for a float dtype,
    else 0."""
    if INF:
        b = _float_bits(x, BITS)
        low: tl.constexpr = (1 << (BITS - 1)) - 1
        b = tl.where(b == -low - 1, 0, b)
        key = tl.where(b < 0, b ^ low, b)
        key = tl.where(is_nan(x, INF, BITS), low, key)
    elif BITS == 64:
        key = x.to(tl.int64)
    else:
        key = x.to(tl.int32)
    return key ^ FLIP


@triton.jit
def _pack(key, index):
    return (key.to(tl.int64) << 32) | index.to(tl.int64)


@triton.jit
def _unpack_index(word):
    return (word & 0xFFFFFFFF).to(tl.int32)


@triton.jit
def _pair_less(ka, ia, kb, ib):
    return (ka < kb) | ((ka == kb) & (ia < ib))


@triton.jit
def _pair_compare_swap(k, i, flip, d: tl.constexpr):
    """One bitonic compare-and-swap of (key, index) pairs along the d-th innermost hypercube dim
    (partners found by an xor reduction over that dim, as Triton's own sort does)."""
    n_dims: tl.constexpr = _log2(k.numel)
    pk = k ^ xor_sum(k, n_dims - 1 - d, True)
    pi = i ^ xor_sum(i, n_dims - 1 - d, True)
    right = _indicator(n_dims, d)
    swap = _pair_less(pk, pi, k, i) != (flip ^ right)
    return tl.where(swap, pk, k), tl.where(swap, pi, i)


@triton.jit
def _pair_merge(k, i, stage: tl.constexpr, order: tl.constexpr):
    if order == 2:
        flip = _indicator(_log2(k.numel), stage)
    else:
        flip = order
    for t in tl.static_range(stage):
        k, i = _pair_compare_swap(k, i, flip, stage - 1 - t)
    return k, i


@triton.jit
def _pair_sort(k, i):
    """(key, index) pairs of a [BM, BL] tile sorted ascending along the last dim."""
    log_n: tl.constexpr = _log2(k.shape[1])
    n_dims: tl.constexpr = _log2(k.numel)
    cube: tl.constexpr = [2] * n_dims if n_dims else [1]
    hk = tl.reshape(k, cube)
    hi = tl.reshape(i, cube)
    for s in tl.static_range(1, log_n + 1):
        hk, hi = _pair_merge(hk, hi, s, 2 if s < log_n else 0)
    return tl.reshape(hk, k.shape), tl.reshape(hi, i.shape)


@triton.jit
def _write_final(x, vout, jout, x_row, o_row, x_l, o_l, pos, index, mask):
    """Values (read back from x at `index`) and int64 indices at output positions `pos`."""
    v = tl.load(x + x_row + index * x_l, mask=mask)
    tl.store(vout + o_row + pos * o_l, v, mask=mask)
    tl.store(jout + o_row + pos * o_l, index.to(tl.int64), mask=mask)


@triton.jit
def _block_sort_kernel(x, kin, iin, kout, iout, vout, jout, M, L, NC, KEEP,
                       ksize1, ksize2, ksize3, x_s0, x_s1, x_s2, x_s3, o_s0, o_s1, o_s2, o_s3,
                       x_l, o_l, DIRECTION, KDIM: tl.constexpr, INF: tl.constexpr,
                       BITS: tl.constexpr, PAIR: tl.constexpr, FROM_X: tl.constexpr,
                       FINAL: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Sort chunk pid % NC of rows (pid // NC)*BM.. in registers and keep its first KEEP lanes:
    from x (FROM_X; DIRECTION 1 ascending, -1 descending: a runtime value, so both directions
    share one compiled kernel) or scratch words of rows of length L; to the outputs (FINAL) or
    to scratch rows of NC * KEEP words."""
    pid = tl.program_id(0)
    rows = (pid // NC) * BM + tl.arange(0, BM)
    chunk = pid % NC
    lane = tl.arange(0, BL)
    j = chunk * BL + lane
    row_ok = rows < M
    mask = row_ok[:, None] & (j < L)[None, :]
    sizes = (1, ksize1, ksize2, ksize3)
    x_row = offsets(rows.to(tl.int64), sizes, (x_s0, x_s1, x_s2, x_s3), KDIM)
    s_in = rows.to(tl.int64)[:, None] * L + j[None, :]
    if FROM_X:
        v = tl.load(x + x_row[:, None] + j[None, :] * x_l, mask=mask)
        key = _sort_key(v, INF, BITS, DIRECTION >> 1)
        index = j[None, :] + tl.zeros([BM, BL], tl.int32)
        if PAIR:
            key = tl.where(mask, key, _INT64_MAX)
            index = tl.where(mask, index, _INT32_MAX)
        else:
            word = tl.where(mask, _pack(key, index), _INT64_MAX)
    elif PAIR:
        key = tl.load(kin + s_in, mask=mask, other=_INT64_MAX)
        index = tl.load(iin + s_in, mask=mask, other=_INT32_MAX)
    else:
        word = tl.load(kin + s_in, mask=mask, other=_INT64_MAX)
    if PAIR:
        key, index = _pair_sort(key, index)
    else:
        word = tl.sort(word, 1)
        index = _unpack_index(word)
    keep = row_ok[:, None] & (lane < KEEP)[None, :]
    if FINAL:
        o_row = offsets(rows.to(tl.int64), sizes, (o_s0, o_s1, o_s2, o_s3), KDIM)
        _write_final(x, vout, jout, x_row[:, None], o_row[:, None], x_l, o_l, lane[None, :],
                     index, keep & (lane < L)[None, :])
    else:
        s_out = rows.to(tl.int64)[:, None] * (NC * KEEP) + (chunk * KEEP + lane)[None, :]
        if PAIR:
            tl.store(kout + s_out, key, mask=keep)
            tl.store(iout + s_out, index, mask=keep)
        else:
            tl.store(kout + s_out, word, mask=keep)


@triton.jit
def _merge_kernel(x, kin, iin, kout, iout, vout, jout, L, NB, W, STEPS, KOUT,
                  ksize1, ksize2, ksize3, x_s0, x_s1, x_s2, x_s3, o_s0, o_s1, o_s2, o_s3,
                  x_l, o_l, KDIM: tl.constexpr, PAIR: tl.constexpr, FINAL: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Merge sorted runs of width W pairwise (scratch rows of L words): each element's new place
    is its place in its run plus the number of smaller words in the other run (binary search).
    FINAL: write values and indices of the first KOUT places instead of words."""
    pid = tl.program_id(0)
    row = (pid // NB).to(tl.int64)
    p = (pid % NB) * BLOCK + tl.arange(0, BLOCK)
    mask = p < L
    base = row * L
    w = tl.load(kin + base + p, mask=mask)
    if PAIR:
        ix = tl.load(iin + base + p, mask=mask)
    run = p // W
    start = (run // 2) * 2 * W
    in_b = (run % 2) == 1
    other = tl.where(in_b, start, start + W)
    other_len = tl.where(in_b, W, tl.maximum(tl.minimum(start + 2 * W, L) - other, 0))
    lo = tl.zeros([BLOCK], tl.int32)
    hi = other_len
    for _ in range(STEPS):
        active = (lo < hi) & mask
        mid = (lo + hi) // 2
        probe = tl.load(kin + base + other + mid, mask=active)
        if PAIR:
            less = _pair_less(probe, tl.load(iin + base + other + mid, mask=active), w, ix)
        else:
            less = probe < w
        lo = tl.where(active & less, mid + 1, lo)
        hi = tl.where(active & ~less, mid, hi)
    dest = p - tl.where(in_b, W, 0) + lo
    if FINAL:
        if not PAIR:
            ix = _unpack_index(w)
        rows = row + tl.zeros([BLOCK], tl.int64)
        sizes = (1, ksize1, ksize2, ksize3)
        x_row = offsets(rows, sizes, (x_s0, x_s1, x_s2, x_s3), KDIM)
        o_row = offsets(rows, sizes, (o_s0, o_s1, o_s2, o_s3), KDIM)
        _write_final(x, vout, jout, x_row, o_row, x_l, o_l, dest, ix, mask & (dest < KOUT))
    else:
        tl.store(kout + base + dest, w, mask=mask)
        if PAIR:
            tl.store(iout + base + dest, ix, mask=mask)


_INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000,
             "float64": 0x7FF0000000000000}


def key_kind(dtype):
    """(INF, BITS) of the sort key of `dtype` (see _sort_key)."""
    return _INF_BITS.get(dtype.name, 0), dtype.itemsize * 8


def _tile(length, rows):
    """(BM, BL, num_warps) of a block sort of `rows` rows of `length` lanes."""
    bl = next_pow2(length)
    bm = min(next_pow2(rows), max(1, _MIN_TILE // bl))
    return bm, bl, max(1, min(8, bm * bl // 256))


class _Sorter:
    """Builds the launches of one sort/topk geometry into a Recipe."""

    def __init__(self, x, out, dim, descending, recipe):
        self.layout = _layout(x, out, dim)
        self.recipe = recipe
        self.x, self.out = x, out
        self.buffers, self.turn = [None, None], 0
        self.rows, self.length = self.layout.rows, self.layout.length
        self.inf, self.bits = key_kind(x.dtype)
        self.pair = self.bits == 64
        self.descending = descending

    def _row_entries(self):
        layout = self.layout
        ity = "i64"
        entries = size_entries("k", layout.kept_sizes, MAX_ROW_DIMS, ity)
        for prefix, k in (("x_", 0), ("o_", 1)):
            entries += stride_entries(prefix, layout.kept_strides[k], MAX_ROW_DIMS, ity)
            red = layout.red_strides[k][0]
            entries.append((prefix + "l", red, "constexpr" if red in (0, 1) else ity))
        return entries + const(KDIM=len(layout.kept_sizes))

    def _buffers(self, src, dst, final):
        """Pointer entries: x, scratch in (src) and out (dst) as (keys role, index role)."""
        x = self.x
        words = placeholder((1,), np.int64)
        index = placeholder((1,), np.int32) if self.pair else None
        entries = [pointer("x", "x", x)]
        for names, roles in ((("kin", "iin"), src), (("kout", "iout"), dst)):
            roles = roles or (None, None)
            entries.append(pointer(names[0], roles[0], words if roles[0] else None))
            entries.append(pointer(names[1], roles[1], index if roles[1] else None))
        entries.append(pointer("vout", "values", self.out if final else None))
        entries.append(pointer("jout", "indices", placeholder((1,), np.int64) if final else None))
        return entries

    def _scratch(self, length):
        """(words role, index role) of the scratch buffer not being read (two, in turn, sized by
        the first and longest request)."""
        slot, self.turn = self.turn, self.turn ^ 1
        if self.buffers[slot] is None:
            size = (self.rows * length,)
            words = self.recipe.scratch_array(size, np.int64)[0]
            index = self.recipe.scratch_array(size, np.int32)[0] if self.pair else None
            self.buffers[slot] = (words, index)
        return self.buffers[slot]

    def block(self, src, src_len, keep, final):
        """A block-sort launch over rows of `src_len` (from x when src is None); returns the
        scratch (roles, row length) it writes, or None when final."""
        if src_len <= SORT_BLOCK:
            bm, bl, warps = _tile(src_len, self.rows)
            chunks = 1
        else:
            bm, bl, warps = _tile(SORT_BLOCK, 1)
            chunks = cdiv(src_len, SORT_BLOCK)
        dst = None if final else self._scratch(chunks * keep)
        entries = self._buffers(src, dst, final)
        entries += [("M", self.rows, "i32"), ("L", src_len, "i32"), ("NC", chunks, "i32"),
                    ("KEEP", keep, "i32")]
        entries += self._row_entries()
        entries.append(("DIRECTION", -1 if self.descending else 1, "i32"))
        entries += const(INF=self.inf, BITS=self.bits,
                         PAIR=self.pair, FROM_X=src is None, FINAL=final, BM=bm, BL=bl)
        self.recipe.add(_block_sort_kernel, (cdiv(self.rows, bm) * chunks,), entries, warps)
        return None if final else (dst, chunks * keep)

    def merges(self, src, length, width, keep):
        """Merge passes over scratch rows of `length` words sorted in runs of `width`; the last
        writes the first `keep` values and indices."""
        blocks = cdiv(length, MERGE_BLOCK)
        while True:
            last = width * 2 >= length
            dst = None if last else self._scratch(length)
            entries = self._buffers(src, dst, last)
            entries += [("L", length, "i32"), ("NB", blocks, "i32"), ("W", width, "i32"),
                        ("STEPS", width.bit_length(), "i32"), ("KOUT", keep, "i32")]
            entries += self._row_entries()
            entries += const(PAIR=self.pair, FINAL=last, BLOCK=MERGE_BLOCK)
            self.recipe.add(_merge_kernel, (self.rows * blocks,), entries, 4)
            if last:
                return
            src, width = dst, width * 2

    def sort(self, keep):
        """Every row sorted, the first `keep` of each written."""
        if self.length <= SORT_BLOCK:
            self.block(None, self.length, keep, True)
            return
        scratch, length = self.block(None, self.length, SORT_BLOCK, False)
        self.merges(scratch, length, SORT_BLOCK, keep)

    def topk(self, k):
        """The first k of every row: candidates reduced chunk by chunk when k is small."""
        if self.length <= SORT_BLOCK or 2 * k > SORT_BLOCK:
            self.sort(k)
            return
        src, length = None, self.length
        while length > SORT_BLOCK:
            src, length = self.block(src, length, k, False)
        self.block(src, length, k, True)


def _layout(x, out, dim):
    return RowLayout(x.shape, (dim,), [x.element_strides(), out.element_strides()], reorder=False)


def _prepare(arr, out, dim):
    """`arr` itself, or a contiguous copy when its kept dims do not coalesce into a row layout."""
    if len(_layout(arr, out, dim).kept_sizes) <= MAX_ROW_DIMS:
        return arr
    return contiguous_copy(arr)


def _recipe(x, out, dim, descending, k, topk, target=None):
    recipe = Recipe(x.device, target)
    sorter = _Sorter(x, out, dim, descending, recipe)
    if topk:
        sorter.topk(k)
    else:
        sorter.sort(k)
    return recipe


_recipes = RecipeCache()


def sort_rows(arr, dim, descending, k, topk):
    """(values, int64 indices) of the first k of every row sorted along `dim`."""
    activate(arr.device)
    stream = current_stream_handle(arr.device)
    shape = arr.shape[:dim] + (k,) + arr.shape[dim + 1:]
    values = CUDAArray.empty(shape, arr.dtype, arr.device, stream)
    indices = CUDAArray.empty(shape, np.int64, arr.device, stream)
    if values.size == 0:
        return values, indices
    x = _prepare(arr, values, dim)
    key = (x.shape, x.strides, x.dtype, x.ptr % 16 == 0, dim, descending, k, topk, x.device)
    recipe = _recipes.get_or_build(key, lambda: _recipe(x, values, dim, descending, k, topk))
    recipe.run(stream, {"x": x, "values": values, "indices": indices})
    return values, indices


@register("sort", "cuda")
def sort(arr, dim, descending, stable):
    """(values, int64 indices) sorted along `dim`; always stable (deterministic), NaN largest."""
    return sort_rows(arr, dim, descending, arr.shape[dim], False)


@register("topk", "cuda")
def topk(arr, dim, k, largest, sorted_):
    """(values, indices) of the k largest (or smallest) along `dim`, in sorted order."""
    return sort_rows(arr, dim, largest, k, True)


@triton.jit
def _rows_gather_kernel(src, rows, out, R, C, s0, s1, BLOCK: tl.constexpr):
    """out[r, j] = src[rows[r] * s0 + j * s1] for an [R, C] contiguous out."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < R * C
    r = e // C
    row = tl.load(rows + r, mask=mask)
    tl.store(out + e, tl.load(src + row * s0 + (e - r * C) * s1, mask=mask), mask=mask)


@triton.jit
def _differ(a, b, INF: tl.constexpr, BITS: tl.constexpr):
    """a != b as IEEE compares floats (-0 == 0, NaN unequal to everything), by sort keys."""
    out = _sort_key(a, INF, BITS, 0) != _sort_key(b, INF, BITS, 0)
    if INF:
        out = out | is_nan(a, INF, BITS)
    return out


@triton.jit
def _flags_kernel(mat, perm, flags, S, C, INF: tl.constexpr, BITS: tl.constexpr,
                  BS: tl.constexpr, BC: tl.constexpr):
    """flags[i] = 1 where row perm[i] of the [S, C] matrix differs from row perm[i - 1]."""
    i = tl.program_id(0).to(tl.int64) * BS + tl.arange(0, BS)
    mask = i < S
    prev = tl.maximum(i - 1, 0)
    a = tl.load(perm + i, mask=mask)
    b = tl.load(perm + prev, mask=mask)
    differ = i == 0
    for c in range(0, C, BC):
        cols = c + tl.arange(0, BC)
        m = mask[:, None] & (cols < C)[None, :]
        va = tl.load(mat + a[:, None] * C + cols[None, :], mask=m)
        vb = tl.load(mat + b[:, None] * C + cols[None, :], mask=m)
        differ = differ | (tl.max((_differ(va, vb, INF, BITS) & m).to(tl.int32), 1) > 0)
    tl.store(flags + i, differ.to(tl.int64), mask=mask)


@triton.jit
def _groups_kernel(perm, flags, ids, first, starts, inverse, S, BLOCK: tl.constexpr):
    """Group g = ids[i] - 1 of sorted position i: its first row and start where the group
    begins, and the inverse index of row perm[i]."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < S
    row = tl.load(perm + i, mask=mask)
    g = tl.load(ids + i, mask=mask) - 1
    head = mask & (tl.load(flags + i, mask=mask) != 0)
    tl.store(first + g, row, mask=head)
    tl.store(starts + g, i, mask=head)
    tl.store(inverse + row, g, mask=mask)


@triton.jit
def _counts_kernel(starts, counts, U, S, BLOCK: tl.constexpr):
    g = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = g < U
    nxt = tl.load(starts + g + 1, mask=mask & (g + 1 < U), other=S)
    tl.store(counts + g, nxt - tl.load(starts + g, mask=mask), mask=mask)


def _launch(fn, grid, stream, device, entries, target=None):
    """One launch of `fn` from (name, value, type) entries (CUDAArrays as pointers); with a
    `target`, only compiled."""
    recipe = Recipe(device, target)
    roles = {}
    resolved = []
    for name, value, ty in entries:
        if isinstance(value, CUDAArray):
            roles[name] = value
            resolved.append(pointer(name, name, value))
        else:
            resolved.append((name, value, ty))
    recipe.add(fn, grid, resolved, 4)
    if target is None:
        recipe.run(stream, roles)


def _gather_rows(src, rows, count, columns, s0, s1, stream):
    """[count, columns] contiguous: src rows `rows` (element strides s0 per row, s1 per column)."""
    out = CUDAArray.empty((count, columns), src.dtype, src.device, stream)
    if out.size:
        _launch(_rows_gather_kernel, (cdiv(out.size, MERGE_BLOCK),), stream, src.device,
                [("src", src, None), ("rows", rows, None), ("out", out, None),
                 ("R", count, "i64"), ("C", columns, "i64"), ("s0", s0, "i64"), ("s1", s1, "i64"),
                 ("BLOCK", MERGE_BLOCK, "constexpr")])
    return out


def _lexicographic_order(mat, stream):
    """The stable order of the rows of the contiguous [S, C] matrix: one stable sort per column,
    last column first, each reordering the permutation found so far."""
    rows, columns = mat.shape
    perm = None
    for c in range(columns - 1, -1, -1):
        column = CUDAArray(mat.storage, (rows,), (mat.strides[0],), mat.offset + c * mat.itemsize,
                           mat.dtype)
        if perm is not None:
            column = _flat(_gather_rows(column, perm, rows, 1, columns, 0, stream))
        _, order = sort_rows(column, 0, False, rows, False)
        perm = order if perm is None else _flat(_gather_rows(perm, order, rows, 1, 1, 0, stream))
    return perm


def _flat(arr):
    return CUDAArray(arr.storage, (arr.size,), (arr.itemsize,), arr.offset, arr.dtype)


def _read_last(arr, stream):
    """The last element of the int64 device array `arr`, on the host (waits for the stream)."""
    host = np.zeros(1, np.int64)
    driver.memcpy_dtoh(host.ctypes.data, arr.ptr + (arr.size - 1) * 8, 8, stream)
    driver.stream_synchronize(stream)
    return int(host[0])


@register("unique", "cuda")
def unique(arr, return_inverse, return_counts, dim):
    """Sorted distinct values (of slices along `dim`), with inverse indices and counts if asked;
    NaNs are distinct from each other, as in torch."""
    activate(arr.device)
    stream = current_stream_handle(arr.device)
    lead = 0 if dim is None else dim
    moved = arr if dim is None else _move_to_front(arr, dim)
    rows = arr.size if dim is None else arr.shape[dim]
    columns = 1 if dim is None else (moved.size // rows if rows else 0)
    mat = contiguous_copy(moved) if not moved.is_contiguous() else moved
    mat = CUDAArray(mat.storage, (rows, columns), (columns * mat.itemsize, mat.itemsize),
                    mat.offset, mat.dtype)
    count, first, inverse, counts = _groups(mat, stream)
    values = _gather_rows(mat, first, count, columns, columns, 1, stream)
    shape = (count,) if dim is None else (count,) + moved.shape[1:]
    values = CUDAArray(values.storage, shape, contiguous_byte_strides(shape, values.itemsize), 0,
                       values.dtype)
    if dim is not None:
        values = contiguous_copy(_move_from_front(values, lead))
    inverse_shape = arr.shape if dim is None else (rows,)
    inverse = CUDAArray(inverse.storage, inverse_shape, contiguous_byte_strides(inverse_shape, 8),
                        0, inverse.dtype)
    return (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts
                                                                   else ())


def _groups(mat, stream):
    """(number of distinct rows U, first row of each group [U], inverse [S], counts [U])."""
    rows, columns = mat.shape
    device = mat.device
    empty = lambda n: CUDAArray.empty((n,), np.int64, device, stream)  # noqa: E731
    if rows == 0 or columns == 0:
        count = min(rows, 1) if columns == 0 else 0
        first, counts = empty(count), empty(count)
        inverse = empty(rows)
        for a, value in ((first, 0), (counts, rows), (inverse, 0)):
            fill(a, value, stream)
        return count, first, inverse, counts
    perm = _lexicographic_order(mat, stream)
    flags = empty(rows)
    inf, bits = key_kind(mat.dtype)
    bc = min(next_pow2(columns), 64)
    _launch(_flags_kernel, (cdiv(rows, 1024 // bc),), stream, device,
            [("mat", mat, None), ("perm", perm, None), ("flags", flags, None),
             ("S", rows, "i64"), ("C", columns, "i64")] + const(INF=inf, BITS=bits,
                                                                BS=1024 // bc, BC=bc))
    ids = scan("cumsum", flags, 0, False, np.dtype(np.int64))
    count = _read_last(ids, stream)
    first, starts, counts, inverse = empty(count), empty(count), empty(count), empty(rows)
    _launch(_groups_kernel, (cdiv(rows, MERGE_BLOCK),), stream, device,
            [("perm", perm, None), ("flags", flags, None), ("ids", ids, None),
             ("first", first, None), ("starts", starts, None), ("inverse", inverse, None),
             ("S", rows, "i64"), ("BLOCK", MERGE_BLOCK, "constexpr")])
    if count:
        _launch(_counts_kernel, (cdiv(count, MERGE_BLOCK),), stream, device,
                [("starts", starts, None), ("counts", counts, None), ("U", count, "i64"),
                 ("S", rows, "i64"), ("BLOCK", MERGE_BLOCK, "constexpr")])
    return count, first, inverse, counts


def _move_to_front(arr, dim):
    order = [dim] + [d for d in range(arr.ndim) if d != dim]
    return CUDAArray(arr.storage, tuple(arr.shape[d] for d in order),
                     tuple(arr.strides[d] for d in order), arr.offset, arr.dtype)


def _move_from_front(arr, dim):
    order = list(range(1, dim + 1)) + [0] + list(range(dim + 1, arr.ndim))
    return CUDAArray(arr.storage, tuple(arr.shape[d] for d in order),
                     tuple(arr.strides[d] for d in order), arr.offset, arr.dtype)


def compile_all(target):
    """Block sorts (one block, chunked, topk candidates) and merges for packed and pair keys."""
    import ml_dtypes
    cases = [((4096, 100), 1, False), ((8, 5000), 1, False), ((5000, 3), 0, True)]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.int64, np.float64, np.int32,
                  np.bool_):
        for shape, dim, descending in cases[:{np.float32: 3, np.int64: 2}.get(dtype, 1)]:
            x = placeholder(shape, dtype)
            _recipe(x, x, dim, descending, shape[dim], False, target)
    x = placeholder((4, 100003), np.float32)
    _recipe(x, placeholder((4, 10), np.float32), 1, True, 10, True, target)
    index = placeholder((1024,), np.int64)
    for dtype in (np.float32, ml_dtypes.bfloat16, np.int64, np.bool_):
        mat = placeholder((1024, 8), dtype)
        _launch(_flags_kernel, (1,), 0, 0, [("mat", mat, None), ("perm", index, None),
                                            ("flags", index, None), ("S", 1024, "i64"),
                                            ("C", 8, "i64")]
                + const(INF=key_kind(mat.dtype)[0], BITS=mat.dtype.itemsize * 8, BS=128, BC=8),
                target)
        _launch(_rows_gather_kernel, (1,), 0, 0, [("src", mat, None), ("rows", index, None),
                                                  ("out", mat, None), ("R", 1024, "i64"),
                                                  ("C", 8, "i64"), ("s0", 8, "i64"),
                                                  ("s1", 1, "i64"),
                                                  ("BLOCK", MERGE_BLOCK, "constexpr")], target)
    _launch(_groups_kernel, (1,), 0, 0, [(name, index, None) for name in
                                         ("perm", "flags", "ids", "first", "starts", "inverse")]
            + [("S", 1024, "i64"), ("BLOCK", MERGE_BLOCK, "constexpr")], target)
    _launch(_counts_kernel, (1,), 0, 0, [("starts", index, None), ("counts", index, None),
                                         ("U", 1024, "i64"), ("S", 1024, "i64"),
                                         ("BLOCK", MERGE_BLOCK, "constexpr")], target)
