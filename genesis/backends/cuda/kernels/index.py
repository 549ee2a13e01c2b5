"""Indexing kernels on the GPU: the contracts of backends/cpu/index.py (sort/topk/unique aside).

One address kernel serves index (advanced getitem), gather, scatter and index_put: every element
of an iteration shape gets the address `sum(coord * arr_stride) + sum_j(idx_j[...] * scale_j)`
in the indexed array, the index arrays read where they lie (up to MAX_DIMS dims after merging;
index arrays and values that do not merge that far are copied contiguous first, the only copies
made here). The kernel then loads from that address ("load": index, gather), stores a scalar to
it ("store": index_put and scatter of a scalar) or writes the address itself ("offsets": the
keys of the writes below, and the fold of more than four index arrays into one).

Writes of values (index_put with or without accumulate, scatter with or without reduce) go
through index_accumulate.py: keys sorted, duplicates combined (or the last one kept) in index
order, deterministic, no float atomics. Index bounds are checked on the device by
`check_index`, which syncs once to read a flag (see there). `nonzero` and `repeat_interleave`
live in index_compact.py.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Const, Launch, LaunchCache
from ..runtime import driver
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.graphs import active_capture
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, fit, numel, read_int64, value_entry
from ._strided_indexing import (MAX_DIMS, cdiv, dim_sizes, dim_strides, index_type, next_pow2,
                                offsets, program_range)
from .index_accumulate import accumulate_into, key_dtype

# Index arrays one launch reads (more are folded into one array of offsets first).
MAX_INDICES = 4
# 1024 elements (or rows x last-dim lanes) a program over 4 warps: 8 a thread, enough loads in
# flight to hide a gather's latency. Rows of at least MIN_ROW elements along the last dim get
# their addresses computed once per row (shorter ones would waste most of a tile's lanes).
BLOCK = 1024
MIN_ROW = 16
NUM_WARPS = 4


@triton.jit
def _indexed(index_ptr, e, sizes, strides, scale, mask, NDIM: tl.constexpr):
    """index[...] * scale for the iteration elements `e` (0 where masked)."""
    return tl.load(index_ptr + offsets(e, sizes, strides, NDIM), mask=mask,
                   other=0).to(tl.int64) * scale


@triton.jit
def _address(e, mask, sizes, arr_strides, index0_ptr, index1_ptr, index2_ptr, index3_ptr,
             index0_strides, index1_strides, index2_strides, index3_strides,
             scale0, scale1, scale2, scale3, NDIM: tl.constexpr, N_INDICES: tl.constexpr):
    """Addresses in arr of the linear positions `e` over the first NDIM dims."""
    off = offsets(e, sizes, arr_strides, NDIM).to(tl.int64)
    off += _indexed(index0_ptr, e, sizes, index0_strides, scale0, mask, NDIM)
    if N_INDICES > 1:
        off += _indexed(index1_ptr, e, sizes, index1_strides, scale1, mask, NDIM)
    if N_INDICES > 2:
        off += _indexed(index2_ptr, e, sizes, index2_strides, scale2, mask, NDIM)
    if N_INDICES > 3:
        off += _indexed(index3_ptr, e, sizes, index3_strides, scale3, mask, NDIM)
    return off


@triton.jit
def _address_kernel(
        # pointers: the indexed array, the contiguous result, up to MAX_INDICES index arrays
        arr_ptr, out_ptr, index0_ptr, index1_ptr, index2_ptr, index3_ptr,
        # the scalar a "store" writes
        value,
        # sizes: elements, and for ROWS the rows and their length (the last dim); then the
        # coalesced iteration dims (size0 is never read)
        n_elements, n_rows, row_len, size1, size2, size3, size4, size5,
        # strides, in elements, over the iteration dims: of arr's own coordinates and of each
        # index array; arr's stride along the last dim (ROWS)
        arr_stride0, arr_stride1, arr_stride2, arr_stride3, arr_stride4, arr_stride5,
        index0_stride0, index0_stride1, index0_stride2, index0_stride3, index0_stride4,
        index0_stride5,
        index1_stride0, index1_stride1, index1_stride2, index1_stride3, index1_stride4,
        index1_stride5,
        index2_stride0, index2_stride1, index2_stride2, index2_stride3, index2_stride4,
        index2_stride5,
        index3_stride0, index3_stride1, index3_stride2, index3_stride3, index3_stride4,
        index3_stride5,
        arr_row_stride,
        # the stride in arr of the dim each index array indexes
        scale0, scale1, scale2, scale3,
        # meta-parameters
        MODE: tl.constexpr, NDIM: tl.constexpr, N_INDICES: tl.constexpr,
        TO_BOOL: tl.constexpr, INDEX64: tl.constexpr, ROWS: tl.constexpr,
        VEC: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Load from (MODE "load", into `out`, contiguous over the iteration shape), store the
    scalar `value` to ("store") or write into `out` ("offsets") the address in `arr` of
    elements of the iteration shape. Elements pid*BM*BL.. one by one, or (ROWS: no index
    varies along the last dim, of length row_len and stride arr_row_stride) a tile of BM rows
    x BL of the last dim, addresses computed once per row."""
    sizes = (1, size1, size2, size3, size4, size5)
    arr_strides = (arr_stride0, arr_stride1, arr_stride2, arr_stride3, arr_stride4, arr_stride5)
    index0_strides = (index0_stride0, index0_stride1, index0_stride2, index0_stride3,
                      index0_stride4, index0_stride5)
    index1_strides = (index1_stride0, index1_stride1, index1_stride2, index1_stride3,
                      index1_stride4, index1_stride5)
    index2_strides = (index2_stride0, index2_stride1, index2_stride2, index2_stride3,
                      index2_stride4, index2_stride5)
    index3_strides = (index3_stride0, index3_stride1, index3_stride2, index3_stride3,
                      index3_stride4, index3_stride5)
    if ROWS:
        pid = tl.program_id(0)
        if INDEX64:
            pid = pid.to(tl.int64)
        blocks = tl.cdiv(row_len, BL)
        rows = (pid // blocks) * BM + tl.arange(0, BM)
        cols = (pid % blocks) * BL + tl.arange(0, BL)
        row_mask = rows < n_rows
        base = _address(rows, row_mask, sizes, arr_strides, index0_ptr, index1_ptr, index2_ptr,
                        index3_ptr, index0_strides, index1_strides, index2_strides,
                        index3_strides, scale0, scale1, scale2, scale3, NDIM - 1, N_INDICES)
        if VEC > 1:
            base = tl.multiple_of(base, VEC)
        off = base[:, None] + cols[None, :] * arr_row_stride
        lin = rows[:, None] * row_len + cols[None, :]
        mask = row_mask[:, None] & (cols < row_len)[None, :]
    else:
        lin = program_range(BM * BL, INDEX64)
        mask = lin < n_elements
        off = _address(lin, mask, sizes, arr_strides, index0_ptr, index1_ptr, index2_ptr,
                       index3_ptr, index0_strides, index1_strides, index2_strides,
                       index3_strides, scale0, scale1, scale2, scale3, NDIM, N_INDICES)
    if MODE == "load":
        tl.store(out_ptr + lin, tl.load(arr_ptr + off, mask=mask), mask=mask)
    elif MODE == "offsets":
        tl.store(out_ptr + lin, off, mask=mask)
    else:
        v = tl.zeros(off.shape, value.dtype) + value
        if TO_BOOL:
            v = v != 0
        tl.store(arr_ptr + off, v.to(arr_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _check_kernel(
        # pointers: the index array, its int64 copy, the out-of-range flag
        index_ptr, out_ptr, flag_ptr,
        # sizes: elements, the size of the indexed dim, the coalesced index dims
        n_elements, size, size1, size2, size3, size4, size5,
        # strides of the index array, in elements
        index_stride0, index_stride1, index_stride2, index_stride3, index_stride4, index_stride5,
        # meta-parameters
        NEG: tl.constexpr, NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """out = index as int64 (negatives wrapped when NEG); flag = max(n - position) over the
    out-of-range elements (0 when none), so the first bad position is n - flag."""
    e = program_range(BLOCK, INDEX64)
    mask = e < n_elements
    sizes = (1, size1, size2, size3, size4, size5)
    strides = (index_stride0, index_stride1, index_stride2, index_stride3, index_stride4,
               index_stride5)
    v = tl.load(index_ptr + offsets(e, sizes, strides, NDIM), mask=mask, other=0).to(tl.int64)
    if NEG:
        bad = (v < -size) | (v >= size)
        v = tl.where((v < 0) & ~bad, v + size, v)
    else:
        bad = (v < 0) | (v >= size)
    tl.store(out_ptr + e, v, mask=mask)
    first = tl.max(tl.where(bad & mask, n_elements - e.to(tl.int64), 0), 0)
    if first > 0:
        tl.atomic_max(flag_ptr, first)


# Pointers and the stored scalar change from call to call of one geometry: never assumed
# 16-byte aligned (the address kernel gets VEC where rows are known to be).
_PER_CALL = ("arr_ptr", "out_ptr", "index0_ptr", "index1_ptr", "index2_ptr", "index3_ptr",
             "value")


def _address_launch(launch, dims, stream, arr, out, indices, value):
    """The call of _address_kernel; `indices` are up to MAX_INDICES index arrays, `dims` as
    _Address.plan makes them."""
    sizes, arr_strides, index_strides, arr_row_stride, scales = dims
    i0, i1, i2, i3 = indices
    s0, s1, s2, s3 = index_strides
    launch(stream,
           # pointers
           arr, out, i0, i1, i2, i3,
           # the stored scalar
           value,
           # sizes
           *sizes,
           # strides
           *arr_strides, *s0, *s1, *s2, *s3, arr_row_stride,
           # index scales
           *scales)


class _Address:
    """One launch of the address kernel over an iteration `shape`: `arr` with fixed coordinate
    strides `a_strides` over it, up to MAX_INDICES (Operand, scale) index terms, and for "store"
    a scalar `value`."""

    def __init__(self, mode, shape, arr, a_strides, terms, value=None):
        self.mode, self.shape, self.arr, self.value = mode, tuple(shape), arr, value
        operands = {f"j{j}": op for j, (op, _) in enumerate(terms)}
        self.sizes, self.strides = fit(self.shape, {"a": tuple(a_strides)}, operands)
        self.indices = [(op.arr, scale) for op, scale in terms]

    def _device(self, out):
        return (self.arr if self.arr is not None else out).device

    def key(self, out):
        arrays = [self.arr, out] + [i for i, _ in self.indices]
        return (self.mode, tuple(self.sizes), tuple(sorted(self.strides.items())),
                tuple(s for _, s in self.indices),
                tuple(None if a is None else a.dtype for a in arrays), self._value_type(),
                self.arr is not None and self.arr.ptr % 16 == 0, self._device(out))

    def _value_type(self):
        if self.mode != "store":
            return None
        return value_entry(self.value, self.arr.dtype)[0]

    def plan(self, out, target=None):
        """(launch, the sizes and strides _address_launch passes) of this geometry."""
        st = self.strides
        ity = index_type(self.sizes, *st.values())
        n = numel(self.sizes)
        index_strides = tuple(dim_strides(st[f"j{j}"], MAX_DIMS) if j < len(self.indices)
                              else (Const(0),) * MAX_DIMS for j in range(MAX_INDICES))
        scales = tuple(self.indices[j][1] if j < len(self.indices) else Const(0)
                       for j in range(MAX_INDICES))
        tile = self._tile()
        if tile is None:
            rows, length, bm, bl, vec = Const(1), Const(1), 1, BLOCK, 1
            arr_row_stride = Const(0)
            grid = cdiv(n, BLOCK)
        else:
            rows, length, bm, bl, vec = tile
            a_last = st["a"][-1]
            arr_row_stride = Const(a_last) if a_last in (0, 1) else a_last
            grid = cdiv(rows, bm) * cdiv(length, bl)
        to_bool = self.mode == "store" and self.arr.dtype.kind == "b"
        meta = dict(MODE=self.mode, NDIM=len(self.sizes), N_INDICES=len(self.indices),
                    TO_BOOL=to_bool, INDEX64=ity == "i64", ROWS=tile is not None, VEC=vec,
                    BM=bm, BL=bl)
        types = {f"scale{j}": "i64" for j in range(MAX_INDICES)}
        if self._value_type():
            types["value"] = self._value_type()
        launch = Launch(_address_kernel, (grid,), meta, NUM_WARPS, int_type=ity, types=types,
                        per_call=_PER_CALL, device=self._device(out), target=target)
        sizes = (n, rows, length) + dim_sizes(self.sizes, MAX_DIMS)
        return launch, (sizes, dim_strides(st["a"], MAX_DIMS), index_strides, arr_row_stride,
                        scales)

    def _tile(self):
        """(rows, row length, BM, BL, VEC) of a rows-by-last-dim tile, or None: worth it when no
        index varies along the last dim and that dim is long. VEC: the addresses of a row start
        at multiples of 16 bytes (the array aligned, every other stride and scale a multiple),
        so Triton may use 16-byte accesses."""
        st, length = self.strides, self.sizes[-1]
        if length < MIN_ROW or any(st[f"j{j}"][-1] for j in range(len(self.indices))):
            return None
        rows = numel(self.sizes[:-1])
        bl = min(next_pow2(length), BLOCK)
        bm = min(next_pow2(rows), BLOCK // bl)
        vec = 1
        if self.arr is not None:
            vec = 16 // self.arr.itemsize
            multiples = list(st["a"][:-1]) + [s for _, s in self.indices] + [length]
            if st["a"][-1] != 1 or self.arr.ptr % 16 or any(m % vec for m in multiples):
                vec = 1
        return rows, length, bm, bl, vec

    def run(self, out=None, target=None):
        """Launch (nothing for an empty shape); `out` is the contiguous result of load/offsets.
        With a `target`, compile only."""
        if not numel(self.shape):
            return
        if target is None:
            stream = current_stream_handle(self._device(out))
            launch, dims = _plans.get_or_build(self.key(out), lambda: self.plan(out))
        else:
            stream, (launch, dims) = 0, self.plan(out, target)
        value = value_entry(self.value, self.arr.dtype)[1] if self._value_type() else None
        indices = [idx for idx, _ in self.indices] + [None] * (MAX_INDICES - len(self.indices))
        _address_launch(launch, dims, stream, self.arr, out, indices, value)


_plans = LaunchCache()


def _start(arr):
    activate(arr.device)
    return current_stream_handle(arr.device)


def _index_terms(arr, indices, rest):
    """The batch shape and the (Operand, scale) terms of the index arrays over `arr`'s leading
    dims (iteration shape batch + rest), folded to at most MAX_INDICES terms."""
    batch = tuple(np.broadcast_shapes(*(i.shape for i in indices)))
    scales = arr.element_strides()[:len(indices)]
    terms = [(Operand(i, batch, len(rest)), s) for i, s in zip(indices, scales)]
    while len(terms) > MAX_INDICES:
        folded = _offsets(batch, (0,) * len(batch), terms[:MAX_INDICES], arr.device)
        terms = [(Operand(folded, batch, len(rest)), 1)] + terms[MAX_INDICES:]
    return batch, terms


def _offsets(shape, a_strides, terms, device, dtype=INT64):
    """The element offsets the terms address over `shape` (a contiguous array of `dtype`); the
    terms reach only `shape`, whatever they reach elsewhere."""
    out = CUDAArray.empty(shape, dtype, device)
    terms = [(Operand(op.arr, op.region), scale) for op, scale in terms]
    _Address("offsets", shape, None, a_strides, terms).run(out)
    return out


@register("check_index", "cuda")
def check_index(index, size, allow_negative):
    """(index as a fresh contiguous int64 array with negatives wrapped, first out-of-range value
    or None). Checked on the device; the host waits once, for an 8-byte flag (and reads the bad
    value only when there is one): the price of raising IndexError as the CPU path does. In a
    CUDA graph being captured the host cannot wait: the flag goes unread there, as PyTorch's
    device-side check never reaches the host either."""
    stream = _start(index)
    out = CUDAArray.empty(index.shape, INT64, index.device, stream)
    n = out.size
    if not n:
        return out, None
    flag = CUDAArray.empty((1,), INT64, index.device, stream)
    driver.memset_d8(flag.ptr, 0, 8, stream)
    operand = Operand(index, index.shape)
    sizes, strides = fit(index.shape, {}, {"i": operand})
    index, st = operand.arr, strides["i"]
    launch, dims = _checks.get_or_build(
        (tuple(sizes), tuple(st), index.dtype, bool(allow_negative), index.device),
        lambda: _check_plan(index, sizes, st, allow_negative))
    _check_launch(launch, dims, stream, index, out, flag, size)
    if active_capture(stream) is not None:
        return out, None
    first = read_int64(flag, 0)
    if not first:
        return out, None
    return out, read_int64(out, n - first)


_checks = LaunchCache()


def _check_launch(launch, dims, stream, index, out, flag, size):
    """The call of _check_kernel; `dims` as _check_plan makes them."""
    n, sizes, strides = dims
    launch(stream,
           # pointers
           index, out, flag,
           # sizes
           n, size, *sizes,
           # strides
           *strides)


def _check_plan(index, sizes, strides, allow_negative, target=None):
    """(launch, the sizes and strides _check_launch passes) of one index geometry."""
    n = numel(sizes)
    ity = index_type(sizes, strides)
    meta = dict(NEG=bool(allow_negative), NDIM=len(sizes), INDEX64=ity == "i64", BLOCK=BLOCK)
    launch = Launch(_check_kernel, (cdiv(n, BLOCK),), meta, NUM_WARPS, int_type=ity,
                    types={"n_elements": "i64", "size": "i64"},
                    per_call=("index_ptr", "out_ptr", "flag_ptr", "size"), device=index.device,
                    target=target)
    return launch, (n, dim_sizes(sizes, MAX_DIMS), dim_strides(strides, MAX_DIMS))


@register("index", "cuda")
def index(arr, indices):
    """arr[i0, i1, ...] over the leading dims: shape batch + arr.shape[len(indices):]."""
    stream = _start(arr)
    rest = arr.shape[len(indices):]
    batch, terms = _index_terms(arr, indices, rest)
    shape = batch + rest
    out = CUDAArray.empty(shape, arr.dtype, arr.device, stream)
    a_strides = (0,) * len(batch) + arr.element_strides()[len(indices):]
    _Address("load", shape, arr, a_strides, terms).run(out)
    return out


@register("index_put", "cuda")
def index_put(out, indices, values, accumulate):
    """out[i0, i1, ...] = values (or += values, duplicates combined in a fixed order), in place.

    Assigning a scalar is one store launch; assigning values goes through the sorted keys of
    index_accumulate so that duplicate indices keep the last of their values, as on the CPU."""
    _start(out)
    rest = out.shape[len(indices):]
    batch, terms = _index_terms(out, indices, rest)
    shape = batch + rest
    if not accumulate and not isinstance(values, CUDAArray):
        a_strides = (0,) * len(batch) + out.element_strides()[len(indices):]
        _Address("store", shape, out, a_strides, terms, values).run()
        return
    keys = _offsets(batch, (0,) * len(batch), terms, out.device, key_dtype(out))
    accumulate_into(out, keys, rest, out.element_strides()[len(indices):], values,
                    "add" if accumulate else "last")


def _along(arr, index, dim):
    """(coordinate strides of `arr` over index's shape with `dim` zeroed, the index term)."""
    a = list(arr.element_strides())
    scale, a[dim] = a[dim], 0
    return tuple(a), [(Operand(index, index.shape), scale)]


@register("gather", "cuda")
def gather(arr, dim, index):
    stream = _start(arr)
    out = CUDAArray.empty(index.shape, arr.dtype, arr.device, stream)
    a_strides, terms = _along(arr, index, dim)
    _Address("load", index.shape, arr, a_strides, terms).run(out)
    return out


@register("scatter", "cuda")
def scatter(out, dim, index, src, reduce):
    """Write `src` into `out` along `dim` at `index`, in place; reduce None, "add", "multiply"
    (combined in a fixed order: the same bits every run; without reduce, duplicate targets
    keep the last of their values, as on the CPU)."""
    _start(out)
    a_strides, terms = _along(out, index, dim)
    if reduce is None and not isinstance(src, CUDAArray):
        _Address("store", index.shape, out, a_strides, terms, src).run()
        return
    keys = _offsets(index.shape, a_strides, terms, out.device, key_dtype(out))
    accumulate_into(out, keys, (), (), src, reduce or "last")
