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
from ..runtime import driver
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, fit, numel, read_int64, value_entry
from ._strided import (MAX_DIMS, Recipe, RecipeCache, Slot, cdiv, const, index_type, next_pow2,
                       offsets, placeholder, pointer_of, program_range, size_entries,
                       stride_entries)
from .index_accumulate import accumulate_into, key_dtype

MAX_INDICES = 4
BLOCK = 1024
MIN_ROW = 16
NUM_WARPS = 4


@triton.jit
def _indexed(i, e, sizes, strides, scale, mask, NDIM: tl.constexpr):
    """idx[...] * scale for the iteration elements `e` (0 where masked)."""
    return tl.load(i + offsets(e, sizes, strides, NDIM), mask=mask, other=0).to(tl.int64) * scale


@triton.jit
def _address(e, mask, sizes, a_strides, i0, i1, i2, i3, j0, j1, j2, j3,
             scale0, scale1, scale2, scale3, NDIM: tl.constexpr, NI: tl.constexpr):
    """Addresses in arr of the linear positions `e` over the first NDIM dims."""
    off = offsets(e, sizes, a_strides, NDIM).to(tl.int64)
    off += _indexed(i0, e, sizes, j0, scale0, mask, NDIM)
    if NI > 1:
        off += _indexed(i1, e, sizes, j1, scale1, mask, NDIM)
    if NI > 2:
        off += _indexed(i2, e, sizes, j2, scale2, mask, NDIM)
    if NI > 3:
        off += _indexed(i3, e, sizes, j3, scale3, mask, NDIM)
    return off


@triton.jit
def _address_kernel(arr, out, value, i0, i1, i2, i3, n, M, L,
                    size1, size2, size3, size4, size5,
                    a_s0, a_s1, a_s2, a_s3, a_s4, a_s5,
                    j0_s0, j0_s1, j0_s2, j0_s3, j0_s4, j0_s5,
                    j1_s0, j1_s1, j1_s2, j1_s3, j1_s4, j1_s5,
                    j2_s0, j2_s1, j2_s2, j2_s3, j2_s4, j2_s5,
                    j3_s0, j3_s1, j3_s2, j3_s3, j3_s4, j3_s5,
                    scale0, scale1, scale2, scale3, a_last,
                    MODE: tl.constexpr, NDIM: tl.constexpr, NI: tl.constexpr,
                    TO_BOOL: tl.constexpr, INDEX64: tl.constexpr, ROWS: tl.constexpr,
                    VEC: tl.constexpr, BM: tl.constexpr, BL: tl.constexpr):
    """Load from (MODE "load", into `out`, contiguous over the iteration shape), store the
    scalar `value` to ("store") or write into `out` ("offsets") the address in `arr` of
    elements of the iteration shape. Elements pid*BM*BL.. one by one, or (ROWS: no index
    varies along the last dim, of length L and stride a_last) a tile of BM rows x BL of the
    last dim, addresses computed once per row (rows of M)."""
    sizes = (1, size1, size2, size3, size4, size5)
    a_st = (a_s0, a_s1, a_s2, a_s3, a_s4, a_s5)
    j0 = (j0_s0, j0_s1, j0_s2, j0_s3, j0_s4, j0_s5)
    j1 = (j1_s0, j1_s1, j1_s2, j1_s3, j1_s4, j1_s5)
    j2 = (j2_s0, j2_s1, j2_s2, j2_s3, j2_s4, j2_s5)
    j3 = (j3_s0, j3_s1, j3_s2, j3_s3, j3_s4, j3_s5)
    if ROWS:
        pid = tl.program_id(0)
        if INDEX64:
            pid = pid.to(tl.int64)
        blocks = tl.cdiv(L, BL)
        rows = (pid // blocks) * BM + tl.arange(0, BM)
        cols = (pid % blocks) * BL + tl.arange(0, BL)
        row_mask = rows < M
        base = _address(rows, row_mask, sizes, a_st, i0, i1, i2, i3, j0, j1, j2, j3,
                        scale0, scale1, scale2, scale3, NDIM - 1, NI)
        if VEC > 1:
            base = tl.multiple_of(base, VEC)
        off = base[:, None] + cols[None, :] * a_last
        lin = rows[:, None] * L + cols[None, :]
        mask = row_mask[:, None] & (cols < L)[None, :]
    else:
        lin = program_range(BM * BL, INDEX64)
        mask = lin < n
        off = _address(lin, mask, sizes, a_st, i0, i1, i2, i3, j0, j1, j2, j3,
                       scale0, scale1, scale2, scale3, NDIM, NI)
    if MODE == "load":
        tl.store(out + lin, tl.load(arr + off, mask=mask), mask=mask)
    elif MODE == "offsets":
        tl.store(out + lin, off, mask=mask)
    else:
        v = tl.zeros(off.shape, value.dtype) + value
        if TO_BOOL:
            v = v != 0
        tl.store(arr + off, v.to(arr.dtype.element_ty), mask=mask)


@triton.jit
def _check_kernel(idx, out, flag, n, size, size1, size2, size3, size4, size5,
                  i_s0, i_s1, i_s2, i_s3, i_s4, i_s5, NEG: tl.constexpr, NDIM: tl.constexpr,
                  INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """out = idx as int64 (negatives wrapped when NEG); flag = max(n - position) over the
    out-of-range elements (0 when none), so the first bad position is n - flag."""
    e = program_range(BLOCK, INDEX64)
    mask = e < n
    sizes = (1, size1, size2, size3, size4, size5)
    v = tl.load(idx + offsets(e, sizes, (i_s0, i_s1, i_s2, i_s3, i_s4, i_s5), NDIM), mask=mask,
                other=0).to(tl.int64)
    if NEG:
        bad = (v < -size) | (v >= size)
        v = tl.where((v < 0) & ~bad, v + size, v)
    else:
        bad = (v < 0) | (v >= size)
    tl.store(out + e, v, mask=mask)
    first = tl.max(tl.where(bad & mask, n - e.to(tl.int64), 0), 0)
    if first > 0:
        tl.atomic_max(flag, first)


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

    def recipe(self, out, target=None):
        st = self.strides
        ity = index_type(self.sizes, *st.values())
        n = numel(self.sizes)
        entries = [_ptr("arr", self.arr), _ptr("out", out)]
        vty = self._value_type()
        entries.append(("value", Slot("value") if vty else None, vty or "constexpr"))
        for j in range(MAX_INDICES):
            idx, scale = self.indices[j] if j < len(self.indices) else (None, 0)
            entries.append(_ptr(f"i{j}", idx))
            entries += stride_entries(f"j{j}_", st.get(f"j{j}", ()), MAX_DIMS, ity)
            entries.append((f"scale{j}", scale, "i64" if idx is not None else "constexpr"))
        entries.append(("n", n, ity))
        entries += size_entries("", self.sizes, MAX_DIMS, ity)
        entries += stride_entries("a_", st["a"], MAX_DIMS, ity)
        tile = self._tile()
        if tile is None:
            entries += const(ROWS=False, VEC=1, BM=1, BL=BLOCK, M=1, L=1, a_last=0)
            grid = cdiv(n, BLOCK)
        else:
            rows, length, bm, bl, vec = tile
            a_last = st["a"][-1]
            entries += [("M", rows, ity), ("L", length, ity),
                        ("a_last", a_last, "constexpr" if a_last in (0, 1) else ity)]
            entries += const(ROWS=True, VEC=vec, BM=bm, BL=bl)
            grid = cdiv(rows, bm) * cdiv(length, bl)
        to_bool = self.mode == "store" and self.arr.dtype.kind == "b"
        entries += const(MODE=self.mode, NDIM=len(self.sizes), NI=len(self.indices),
                         TO_BOOL=to_bool, INDEX64=ity == "i64")
        recipe = Recipe(self._device(out), target)
        recipe.add(_address_kernel, (grid,), entries, NUM_WARPS)
        return recipe

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

    def run(self, out=None):
        """Launch (nothing for an empty shape); `out` is the contiguous result of load/offsets."""
        if not numel(self.shape):
            return
        stream = current_stream_handle(self._device(out))
        recipe = _recipes.get_or_build(self.key(out), lambda: self.recipe(out))
        values = {"arr": self.arr, "out": out}
        if self._value_type():
            values["value"] = value_entry(self.value, self.arr.dtype)[1]
        values.update((f"i{j}", idx) for j, (idx, _) in enumerate(self.indices))
        recipe.run(stream, values)


_recipes = RecipeCache()


def _ptr(name, arr):
    if arr is None:
        return (name, None, "constexpr")
    return (name, Slot(name), pointer_of(arr.dtype))


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
    value only when there is one): the price of raising IndexError as the CPU path does."""
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
    recipe = _check_recipes.get_or_build(
        (tuple(sizes), tuple(st), index.dtype, bool(allow_negative), index.device),
        lambda: _check_recipe(index, sizes, st, allow_negative))
    recipe.run(stream, {"idx": index, "out": out, "flag": flag, "size": size})
    first = read_int64(flag, 0)
    if not first:
        return out, None
    return out, read_int64(out, n - first)


_check_recipes = RecipeCache()


def _check_recipe(index, sizes, strides, allow_negative, target=None):
    n = numel(sizes)
    ity = index_type(sizes, strides)
    entries = [("idx", Slot("idx"), pointer_of(index.dtype)), ("out", Slot("out"), "*i64"),
               ("flag", Slot("flag"), "*i64"), ("n", n, "i64"), ("size", Slot("size"), "i64")]
    entries += size_entries("", sizes, MAX_DIMS, ity)
    entries += stride_entries("i_", strides, MAX_DIMS, ity)
    entries += const(NEG=bool(allow_negative), NDIM=len(sizes), INDEX64=ity == "i64",
                     BLOCK=BLOCK)
    recipe = Recipe(index.device, target)
    recipe.add(_check_kernel, (cdiv(n, BLOCK),), entries, NUM_WARPS)
    return recipe


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


def compile_all(target):
    """The address kernel in each mode (rows and element by element, 1-4 index arrays, 1-D to
    4-D, scalar stores into every kind of array) and the bounds check, compiled for `target`
    (CI, no GPU needed)."""
    import ml_dtypes
    f32 = np.float32
    idx = placeholder((4096,), INT64)
    term = [(Operand(idx, (4096,), 1), 768)]
    for dtype in (f32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.bool_):
        arr = placeholder((50257, 768), dtype)
        out = placeholder((4096, 768), dtype)
        _Address("load", (4096, 768), arr, (0, 1), term).recipe(out, target)
        _Address("store", (4096,), arr, (0,), [(Operand(idx, (4096,)), 1)], 1).recipe(None,
                                                                                   target)
        _Address("store", (4096, 768), arr, (0, 1), term, 1).recipe(None, target)
    arr = placeholder((7, 9, 11, 13), f32, (1, 7, 63, 693))
    index2 = placeholder((5, 6), INT64)
    for ni in range(1, MAX_INDICES + 1):
        terms = [(Operand(index2, (5, 6), 2), 3)] * ni
        _Address("load", (5, 6, 11, 13), arr, (0, 0, 63, 693), terms).recipe(
            placeholder((5, 6, 11, 13), f32), target)
        keys = placeholder((5, 6), INT64 if ni > 1 else np.int32)
        _Address("offsets", (5, 6), None, (0, 0), [(Operand(index2, (5, 6)), 3)] * ni).recipe(
            keys, target)
    gather_index = placeholder((64, 100), INT64)
    _Address("load", (64, 100), placeholder((64, 300), f32), (300, 0),
             [(Operand(gather_index, (64, 100)), 1)]).recipe(placeholder((64, 100), f32), target)
    for dtype in (np.int64, np.int32):
        _check_recipe(placeholder((3, 5, 7), dtype, (1, 3, 15)), (3, 5, 7), (1, 3, 15), True,
                      target)
        _check_recipe(placeholder((100,), dtype), (100,), (1,), False, target)
