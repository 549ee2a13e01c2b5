"""sort, topk and unique on the GPU: stable, deterministic, NaN sorting as the largest value.

Each element becomes an integer sort key whose signed order is the wanted order: floats by their
bits with the negative half flipped (-0.0 folded onto +0.0, every NaN onto the largest key),
integers and bool by value, all of it complemented for a descending sort. The key travels with the
element's index along the sorted dim and ties break on that index, which is what makes the sort
stable, and stable descending ties come out in torch's order (values falling, indices rising).
For dtypes up to 32 bits key and index are packed into one int64 word (key << 32 | index), so a
comparison is one integer compare and Triton's bitonic `tl.sort` sorts them; 64-bit dtypes carry
(key, index) pairs through a bitonic network of the same shape written here.

Rows are the input seen as kept dims x the sorted dim (kernels/_strided_indexing.py), read where
they lie.
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
from ..launch import Launch, LaunchCache
from ..runtime import driver, sync_debug
from ..runtime.array import CUDAArray, contiguous_byte_strides
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import (MAX_ROW_DIMS, RowLayout, cdiv, dim_sizes, dim_strides,
                                next_pow2, offsets, placeholder, stride_arg)
from .copy import fill
from .scan import scan
from .shape import contiguous_copy

# Tiles: a row of up to 2048 keys is sorted in one program's registers (8 int64 words a thread
# at 8 warps); shorter rows are packed to at least 1024 lanes a program, 256 lanes a warp. A
# merge program places 1024 words (4 warps).
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
def _block_sort_kernel(
        # pointers: the input; scratch words (and, for PAIR, indices) read and written (None
        # where unused); the sorted values and int64 indices (FINAL)
        x_ptr, keys_in_ptr, index_in_ptr, keys_out_ptr, index_out_ptr, values_ptr, indices_ptr,
        # sizes: rows, the row length read, chunks per row, lanes kept per chunk; the coalesced
        # kept dims (size0 is never read)
        n_rows, length, n_chunks, keep, kept_size1, kept_size2, kept_size3,
        # strides, in elements: of the kept dims in x and in the outputs, of the sorted dim in
        # each
        x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3,
        out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3,
        x_col_stride, out_col_stride,
        # 1 ascending, -1 descending
        direction,
        # meta-parameters
        KEPT_DIMS: tl.constexpr, INF: tl.constexpr, BITS: tl.constexpr, PAIR: tl.constexpr,
        FROM_X: tl.constexpr, FINAL: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Sort chunk pid % n_chunks of rows (pid // n_chunks)*BM.. in registers and keep its first
    `keep` lanes: from x (FROM_X; `direction` is a runtime value, so both directions share one
    compiled kernel) or scratch words of rows of `length`; to the outputs (FINAL) or to scratch
    rows of n_chunks * keep words."""
    pid = tl.program_id(0)
    rows = (pid // n_chunks) * BM + tl.arange(0, BM)
    chunk = pid % n_chunks
    lane = tl.arange(0, BL)
    j = chunk * BL + lane
    row_ok = rows < n_rows
    mask = row_ok[:, None] & (j < length)[None, :]
    sizes = (1, kept_size1, kept_size2, kept_size3)
    x_row = offsets(rows.to(tl.int64), sizes,
                    (x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3), KEPT_DIMS)
    s_in = rows.to(tl.int64)[:, None] * length + j[None, :]
    if FROM_X:
        v = tl.load(x_ptr + x_row[:, None] + j[None, :] * x_col_stride, mask=mask)
        key = _sort_key(v, INF, BITS, direction >> 1)
        index = j[None, :] + tl.zeros([BM, BL], tl.int32)
        if PAIR:
            key = tl.where(mask, key, _INT64_MAX)
            index = tl.where(mask, index, _INT32_MAX)
        else:
            word = tl.where(mask, _pack(key, index), _INT64_MAX)
    elif PAIR:
        key = tl.load(keys_in_ptr + s_in, mask=mask, other=_INT64_MAX)
        index = tl.load(index_in_ptr + s_in, mask=mask, other=_INT32_MAX)
    else:
        word = tl.load(keys_in_ptr + s_in, mask=mask, other=_INT64_MAX)
    if PAIR:
        key, index = _pair_sort(key, index)
    else:
        word = tl.sort(word, 1)
        index = _unpack_index(word)
    kept = row_ok[:, None] & (lane < keep)[None, :]
    if FINAL:
        o_row = offsets(rows.to(tl.int64), sizes,
                        (out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3),
                        KEPT_DIMS)
        _write_final(x_ptr, values_ptr, indices_ptr, x_row[:, None], o_row[:, None], x_col_stride,
                     out_col_stride, lane[None, :], index, kept & (lane < length)[None, :])
    else:
        s_out = rows.to(tl.int64)[:, None] * (n_chunks * keep) + (chunk * keep + lane)[None, :]
        if PAIR:
            tl.store(keys_out_ptr + s_out, key, mask=kept)
            tl.store(index_out_ptr + s_out, index, mask=kept)
        else:
            tl.store(keys_out_ptr + s_out, word, mask=kept)


@triton.jit
def _merge_kernel(
        # pointers: the input; scratch words (and, for PAIR, indices) read, and written unless
        # FINAL; the sorted values and int64 indices (FINAL)
        x_ptr, keys_in_ptr, index_in_ptr, keys_out_ptr, index_out_ptr, values_ptr, indices_ptr,
        # sizes: the row length, blocks per row, the run width, binary search steps, the places
        # written (FINAL); the coalesced kept dims (size0 is never read)
        length, n_blocks, width, steps, keep, kept_size1, kept_size2, kept_size3,
        # strides, in elements: of the kept dims in x and in the outputs, of the sorted dim in
        # each
        x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3,
        out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3,
        x_col_stride, out_col_stride,
        # meta-parameters
        KEPT_DIMS: tl.constexpr, PAIR: tl.constexpr, FINAL: tl.constexpr, BLOCK: tl.constexpr):
    """Merge sorted runs of `width` pairwise (scratch rows of `length` words): each element's new
    place is its place in its run plus the number of smaller words in the other run (binary
    search). FINAL: write values and indices of the first `keep` places instead of words."""
    pid = tl.program_id(0)
    row = (pid // n_blocks).to(tl.int64)
    p = (pid % n_blocks) * BLOCK + tl.arange(0, BLOCK)
    mask = p < length
    base = row * length
    w = tl.load(keys_in_ptr + base + p, mask=mask)
    if PAIR:
        ix = tl.load(index_in_ptr + base + p, mask=mask)
    run = p // width
    start = (run // 2) * 2 * width
    in_b = (run % 2) == 1
    other = tl.where(in_b, start, start + width)
    other_len = tl.where(in_b, width,
                         tl.maximum(tl.minimum(start + 2 * width, length) - other, 0))
    lo = tl.zeros([BLOCK], tl.int32)
    hi = other_len
    for _ in range(steps):
        active = (lo < hi) & mask
        mid = (lo + hi) // 2
        probe = tl.load(keys_in_ptr + base + other + mid, mask=active)
        if PAIR:
            probe_index = tl.load(index_in_ptr + base + other + mid, mask=active)
            less = _pair_less(probe, probe_index, w, ix)
        else:
            less = probe < w
        lo = tl.where(active & less, mid + 1, lo)
        hi = tl.where(active & ~less, mid, hi)
    dest = p - tl.where(in_b, width, 0) + lo
    if FINAL:
        if not PAIR:
            ix = _unpack_index(w)
        rows = row + tl.zeros([BLOCK], tl.int64)
        sizes = (1, kept_size1, kept_size2, kept_size3)
        x_strides = (x_row_stride0, x_row_stride1, x_row_stride2, x_row_stride3)
        out_strides = (out_row_stride0, out_row_stride1, out_row_stride2, out_row_stride3)
        x_row = offsets(rows, sizes, x_strides, KEPT_DIMS)
        o_row = offsets(rows, sizes, out_strides, KEPT_DIMS)
        _write_final(x_ptr, values_ptr, indices_ptr, x_row, o_row, x_col_stride, out_col_stride,
                     dest, ix, mask & (dest < keep))
    else:
        tl.store(keys_out_ptr + base + dest, w, mask=mask)
        if PAIR:
            tl.store(index_out_ptr + base + dest, ix, mask=mask)


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


class _SortPlan:
    """The launches of one sort/topk geometry: block sorts and merge passes, reading and writing
    two scratch buffers in turn (words, and indices for PAIR keys), sized by the first and
    longest request. With a `target`, `run` only compiles."""

    def __init__(self, x, out, dim, descending, target=None):
        self.layout = _layout(x, out, dim)
        self.device, self.target = x.device, target
        self.rows, self.length = self.layout.rows, self.layout.length
        self.inf, self.bits = key_kind(x.dtype)
        self.pair = self.bits == 64
        self.direction = -1 if descending else 1
        self.steps, self.scratch, self.turn = [], [None, None], 0
        self.row_dims = self._row_dims()

    def _row_dims(self):
        """The kept sizes and the row and column strides of x and the outputs."""
        layout = self.layout
        col_strides = tuple(stride_arg(layout.red_strides[k][0]) for k in (0, 1))
        return (dim_sizes(layout.kept_sizes, MAX_ROW_DIMS),
                dim_strides(layout.kept_strides[0], MAX_ROW_DIMS),
                dim_strides(layout.kept_strides[1], MAX_ROW_DIMS), col_strides)

    def _scratch(self, length):
        """The slot of the scratch buffer not being read."""
        slot, self.turn = self.turn, self.turn ^ 1
        if self.scratch[slot] is None:
            self.scratch[slot] = self.rows * length
        return slot

    def block(self, src, src_len, keep, final):
        """A block-sort step over rows of `src_len` (from x when src is None); returns the
        scratch (slot, row length) it writes, or None when final."""
        if src_len <= SORT_BLOCK:
            bm, bl, warps = _tile(src_len, self.rows)
            chunks = 1
        else:
            bm, bl, warps = _tile(SORT_BLOCK, 1)
            chunks = cdiv(src_len, SORT_BLOCK)
        dst = None if final else self._scratch(chunks * keep)
        meta = dict(KEPT_DIMS=len(self.layout.kept_sizes), INF=self.inf, BITS=self.bits,
                    PAIR=self.pair, FROM_X=src is None, FINAL=final, BM=bm, BL=bl)
        launch = Launch(_block_sort_kernel, (cdiv(self.rows, bm) * chunks,), meta, warps,
                        int_type="i64", types=_BLOCK_TYPES, device=self.device,
                        target=self.target)
        dims = (self.rows, src_len, chunks, keep) + self.row_dims + (self.direction,)
        self.steps.append((_block_sort_launch, launch, dims, src, dst, final))
        return None if final else (dst, chunks * keep)

    def merges(self, src, length, width, keep):
        """Merge passes over scratch rows of `length` words sorted in runs of `width`; the last
        writes the first `keep` values and indices."""
        blocks = cdiv(length, MERGE_BLOCK)
        while True:
            last = width * 2 >= length
            dst = None if last else self._scratch(length)
            meta = dict(KEPT_DIMS=len(self.layout.kept_sizes), PAIR=self.pair, FINAL=last,
                        BLOCK=MERGE_BLOCK)
            launch = Launch(_merge_kernel, (self.rows * blocks,), meta, 4, int_type="i64",
                            types=_MERGE_TYPES, device=self.device, target=self.target)
            dims = (length, blocks, width, width.bit_length(), keep) + self.row_dims
            self.steps.append((_merge_launch, launch, dims, src, dst, last))
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

    def run(self, stream, x, values, indices):
        """Every step, in order, with fresh scratch (a later step reads what an earlier one
        wrote, and another thread's launches on the stream may come between)."""
        buffers = [None if n is None else self._buffer(n, stream) for n in self.scratch]
        for launcher, launch, dims, src, dst, final in self.steps:
            src = (None, None) if src is None else buffers[src]
            dst = (None, None) if dst is None else buffers[dst]
            outputs = (values, indices) if final else (None, None)
            launcher(launch, dims, stream, x, src, dst, outputs)

    def _buffer(self, n, stream):
        """(words, indices or None) of one scratch buffer of `n` entries."""
        empty = ((lambda shape, dtype: placeholder(shape, dtype)) if self.target else
                 (lambda shape, dtype: CUDAArray.empty(shape, dtype, self.device, stream)))
        return empty((n,), np.int64), empty((n,), np.int32) if self.pair else None


# Row counts, lengths and steps are int32; sizes and strides int64.
_BLOCK_TYPES = {"n_rows": "i32", "length": "i32", "n_chunks": "i32", "keep": "i32",
                "direction": "i32"}
_MERGE_TYPES = {"length": "i32", "n_blocks": "i32", "width": "i32", "steps": "i32",
                "keep": "i32"}


def _block_sort_launch(launch, dims, stream, x, src, dst, outputs):
    """The call of _block_sort_kernel: `src` and `dst` are (words, indices) scratch (None
    where unused), `outputs` (values, indices) or Nones; `dims` as _SortPlan.block makes
    them."""
    (n_rows, length, n_chunks, keep, kept_sizes, x_row_strides, out_row_strides, col_strides,
     direction) = dims
    launch(stream,
           # pointers
           x, *src, *dst, *outputs,
           # sizes
           n_rows, length, n_chunks, keep, *kept_sizes,
           # strides
           *x_row_strides, *out_row_strides, *col_strides,
           # the direction
           direction)


def _merge_launch(launch, dims, stream, x, src, dst, outputs):
    """The call of _merge_kernel (arguments as _block_sort_launch's); `dims` as
    _SortPlan.merges makes them."""
    (length, n_blocks, width, steps, keep, kept_sizes, x_row_strides, out_row_strides,
     col_strides) = dims
    launch(stream,
           # pointers
           x, *src, *dst, *outputs,
           # sizes
           length, n_blocks, width, steps, keep, *kept_sizes,
           # strides
           *x_row_strides, *out_row_strides, *col_strides)


def _layout(x, out, dim):
    return RowLayout(x.shape, (dim,), [x.element_strides(), out.element_strides()], reorder=False)


def _prepare(arr, out, dim):
    """`arr` itself, or a contiguous copy when its kept dims do not coalesce into a row layout."""
    if len(_layout(arr, out, dim).kept_sizes) <= MAX_ROW_DIMS:
        return arr
    return contiguous_copy(arr)


def _sort_plan(x, out, dim, descending, k, topk, target=None):
    plan = _SortPlan(x, out, dim, descending, target)
    if topk:
        plan.topk(k)
    else:
        plan.sort(k)
    return plan


_plans = LaunchCache()


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
    plan = _plans.get_or_build(key, lambda: _sort_plan(x, values, dim, descending, k, topk))
    plan.run(stream, x, values, indices)
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
def _rows_gather_kernel(
        # pointers: the source, the rows taken, the contiguous result
        src_ptr, rows_ptr, out_ptr,
        # sizes of the result
        n_rows, n_cols,
        # strides of the source, in elements
        src_row_stride, src_col_stride,
        # meta-parameters
        BLOCK: tl.constexpr):
    """out[r, j] = src[rows[r] * src_row_stride + j * src_col_stride] for an [n_rows, n_cols]
    contiguous out."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < n_rows * n_cols
    r = e // n_cols
    row = tl.load(rows_ptr + r, mask=mask)
    v = tl.load(src_ptr + row * src_row_stride + (e - r * n_cols) * src_col_stride, mask=mask)
    tl.store(out_ptr + e, v, mask=mask)


@triton.jit
def _differ(a, b, INF: tl.constexpr, BITS: tl.constexpr):
    """a != b as IEEE compares floats (-0 == 0, NaN unequal to everything), by sort keys."""
    out = _sort_key(a, INF, BITS, 0) != _sort_key(b, INF, BITS, 0)
    if INF:
        out = out | is_nan(a, INF, BITS)
    return out


@triton.jit
def _flags_kernel(
        # pointers: the contiguous matrix, the sorted order of its rows, the flags
        mat_ptr, perm_ptr, flags_ptr,
        # sizes of the matrix
        n_rows, n_cols,
        # meta-parameters
        INF: tl.constexpr, BITS: tl.constexpr, BS: tl.constexpr, BC: tl.constexpr):
    """flags[i] = 1 where row perm[i] of the [n_rows, n_cols] matrix differs from row
    perm[i - 1]."""
    i = tl.program_id(0).to(tl.int64) * BS + tl.arange(0, BS)
    mask = i < n_rows
    prev = tl.maximum(i - 1, 0)
    a = tl.load(perm_ptr + i, mask=mask)
    b = tl.load(perm_ptr + prev, mask=mask)
    differ = i == 0
    for c in range(0, n_cols, BC):
        cols = c + tl.arange(0, BC)
        m = mask[:, None] & (cols < n_cols)[None, :]
        va = tl.load(mat_ptr + a[:, None] * n_cols + cols[None, :], mask=m)
        vb = tl.load(mat_ptr + b[:, None] * n_cols + cols[None, :], mask=m)
        differ = differ | (tl.max((_differ(va, vb, INF, BITS) & m).to(tl.int32), 1) > 0)
    tl.store(flags_ptr + i, differ.to(tl.int64), mask=mask)


@triton.jit
def _groups_kernel(
        # pointers: the sorted order, the flags and their cumsum (group ids); each group's first
        # row and start, each row's group
        perm_ptr, flags_ptr, ids_ptr, first_ptr, starts_ptr, inverse_ptr,
        # sizes
        n_rows,
        # meta-parameters
        BLOCK: tl.constexpr):
    """Group g = ids[i] - 1 of sorted position i: its first row and start where the group
    begins, and the inverse index of row perm[i]."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_rows
    row = tl.load(perm_ptr + i, mask=mask)
    g = tl.load(ids_ptr + i, mask=mask) - 1
    head = mask & (tl.load(flags_ptr + i, mask=mask) != 0)
    tl.store(first_ptr + g, row, mask=head)
    tl.store(starts_ptr + g, i, mask=head)
    tl.store(inverse_ptr + row, g, mask=mask)


@triton.jit
def _counts_kernel(
        # pointers: each group's start in the sorted order, the counts
        starts_ptr, counts_ptr,
        # sizes
        n_groups, n_rows,
        # meta-parameters
        BLOCK: tl.constexpr):
    """counts[g] = the rows in group g: the next group's start (n_rows after the last) minus
    its own."""
    g = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = g < n_groups
    nxt = tl.load(starts_ptr + g + 1, mask=mask & (g + 1 < n_groups), other=n_rows)
    tl.store(counts_ptr + g, nxt - tl.load(starts_ptr + g, mask=mask), mask=mask)


def _unique_launch(fn, grid, meta, device, target):
    """A Launch of one of unique's kernels (built per call: unique syncs with the host anyway)."""
    return Launch(fn, grid, meta, 4, int_type="i64", device=device, target=target)


def _rows_gather_launch(stream, src, rows, out, row_stride, col_stride, target=None):
    """The call of _rows_gather_kernel: out[r, j] = src[rows[r] * row_stride + j * col_stride]."""
    n_rows, n_cols = out.shape
    launch = _unique_launch(_rows_gather_kernel, (cdiv(out.size, MERGE_BLOCK),),
                            dict(BLOCK=MERGE_BLOCK), src.device, target)
    launch(stream,
           # pointers
           src, rows, out,
           # sizes
           n_rows, n_cols,
           # strides
           row_stride, col_stride)


def _flags_launch(stream, mat, perm, flags, target=None):
    """The call of _flags_kernel over the rows of the contiguous matrix `mat`."""
    n_rows, n_cols = mat.shape
    inf, bits = key_kind(mat.dtype)
    bc = min(next_pow2(n_cols), 64)
    launch = _unique_launch(_flags_kernel, (cdiv(n_rows, 1024 // bc),),
                            dict(INF=inf, BITS=bits, BS=1024 // bc, BC=bc), mat.device, target)
    launch(stream,
           # pointers
           mat, perm, flags,
           # sizes
           n_rows, n_cols)


def _groups_launch(stream, perm, flags, ids, first, starts, inverse, target=None):
    """The call of _groups_kernel."""
    n_rows = perm.size
    launch = _unique_launch(_groups_kernel, (cdiv(n_rows, MERGE_BLOCK),),
                            dict(BLOCK=MERGE_BLOCK), perm.device, target)
    launch(stream,
           # pointers
           perm, flags, ids, first, starts, inverse,
           # sizes
           n_rows)


def _counts_launch(stream, starts, counts, n_rows, target=None):
    """The call of _counts_kernel."""
    n_groups = starts.size
    launch = _unique_launch(_counts_kernel, (cdiv(n_groups, MERGE_BLOCK),),
                            dict(BLOCK=MERGE_BLOCK), starts.device, target)
    launch(stream,
           # pointers
           starts, counts,
           # sizes
           n_groups, n_rows)


def _gather_rows(src, rows, count, columns, s0, s1, stream):
    """[count, columns] contiguous: src rows `rows` (element strides s0 per row, s1 per column)."""
    out = CUDAArray.empty((count, columns), src.dtype, src.device, stream)
    if out.size:
        _rows_gather_launch(stream, src, rows, out, s0, s1)
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
    sync_debug.warn_or_error_on_sync()
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
    _flags_launch(stream, mat, perm, flags)
    ids = scan("cumsum", flags, 0, False, np.dtype(np.int64))
    count = _read_last(ids, stream)
    first, starts, counts, inverse = empty(count), empty(count), empty(count), empty(rows)
    _groups_launch(stream, perm, flags, ids, first, starts, inverse)
    if count:
        _counts_launch(stream, starts, counts, rows)
    return count, first, inverse, counts


def _move_to_front(arr, dim):
    order = [dim] + [d for d in range(arr.ndim) if d != dim]
    return CUDAArray(arr.storage, tuple(arr.shape[d] for d in order),
                     tuple(arr.strides[d] for d in order), arr.offset, arr.dtype)


def _move_from_front(arr, dim):
    order = list(range(1, dim + 1)) + [0] + list(range(dim + 1, arr.ndim))
    return CUDAArray(arr.storage, tuple(arr.shape[d] for d in order),
                     tuple(arr.strides[d] for d in order), arr.offset, arr.dtype)
