"""Deterministic accumulating writes: out[key_b + r] op= values[b, r] for every b (duplicates
combined), with op "add" or "multiply" (index_put accumulate, scatter add/multiply, index_add,
embedding backward), and "last": assignments whose duplicate targets take the value that comes
last in index order, as a sequential assignment (and the CPU kernels) leave them.

No float atomics: the keys (element offsets into `out`) are sorted stably, so each target's
contributions sit together in their original order; the program at the head of each run of
equal keys combines them chunk by chunk (a fixed-shape tree within a chunk, chunks in order)
and writes the target once. Same inputs, same bits, every run. Half types accumulate in
float32, float64 in float64, integers and bools in int64 (bools written back as != 0), and the
target's old value joins at the end, rounded once, as the CPU kernels do.

The sort is this backend's stable "sort" kernel (kernels/sort.py) on the keys, int32 when every
offset into the target fits (one packed word per element there), else int64.

Tiles: a program owns one sorted position and BR (up to 1024) of the elements each key reaches;
a chunk is BS x BR values with BS*BR up to 4096 and BS up to 128, so that heads of short runs
(scatter into single elements) do not each read thousands of keys. The grid is one axis of
positions x element blocks (no 65535 limit on the second).
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import kernel
from ..runtime.array import CUDAArray
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, numel, strides_over, value_entry
from ._recipe import (MAX_DIMS, Recipe, RecipeCache, Slot, cdiv, coalesce, const, next_pow2,
                       offsets, placeholder, pointer_of, size_entries, stride_entries)
from .reduce import _mul

_TILE = 4096
_MAX_BR = 1024
_MAX_BS = 128
NUM_WARPS = 4


@triton.jit
def _combine(a, b, OP: tl.constexpr):
    if OP == "add":
        r = a + b
    else:
        r = a * b
    return r


@triton.jit
def _chunk(acc, val, value, perm, p, m, r_mask, vr, bsizes, vb_strides, OP: tl.constexpr,
           ACC: tl.constexpr, BDIM: tl.constexpr):
    """`acc` combined with the values of the chunk positions `p` where `m` holds."""
    identity: tl.constexpr = 0 if OP == "add" else 1
    tile_mask = m[:, None] & r_mask[None, :]
    if val is None:
        v = tl.where(tile_mask, value.to(ACC), identity)
    else:
        b = tl.load(perm + p, mask=m, other=0)
        vb = offsets(b, bsizes, vb_strides, BDIM)
        v = tl.load(val + vb[:, None] + vr[None, :], mask=tile_mask, other=0)
        v = tl.where(tile_mask, v.to(ACC), identity)
    if OP == "add":
        acc += tl.sum(v, 0)
    else:
        acc *= tl.reduce(v, 0, _mul)
    return acc


@triton.jit
def _segment_kernel(keys, perm, out, val, value, B, R, NR,
                    bsize1, bsize2, bsize3, bsize4, bsize5,
                    vb_s0, vb_s1, vb_s2, vb_s3, vb_s4, vb_s5,
                    rsize1, rsize2, rsize3, rsize4, rsize5,
                    vr_s0, vr_s1, vr_s2, vr_s3, vr_s4, vr_s5,
                    or_s0, or_s1, or_s2, or_s3, or_s4, or_s5,
                    OP: tl.constexpr, ACC: tl.constexpr, BDIM: tl.constexpr, RDIM: tl.constexpr,
                    TO_BOOL: tl.constexpr, BS: tl.constexpr, BR: tl.constexpr):
    """Program s*NR + c: if sorted position s starts a run of equal keys, combine the run's
    values for the rest elements c*BR.. and write them into out at that key (OP "last": write
    the run's last value, the one a sequential assignment leaves)."""
    pid = tl.program_id(0).to(tl.int64)
    s = pid // NR
    k0 = tl.load(keys + s)
    head = s == 0
    if s > 0:
        head = tl.load(keys + s - 1) != k0
    if head:
        identity: tl.constexpr = 0 if OP == "add" else 1
        r = (pid % NR) * BR + tl.arange(0, BR)
        r_mask = r < R
        rsizes = (1, rsize1, rsize2, rsize3, rsize4, rsize5)
        vr = offsets(r, rsizes, (vr_s0, vr_s1, vr_s2, vr_s3, vr_s4, vr_s5), RDIM)
        orow = offsets(r, rsizes, (or_s0, or_s1, or_s2, or_s3, or_s4, or_s5), RDIM)
        bsizes = (1, bsize1, bsize2, bsize3, bsize4, bsize5)
        acc = tl.full((BR,), identity, ACC)
        start = s
        last = s
        more = head
        while more:
            p = start + tl.arange(0, BS)
            m = (p < B) & (tl.load(keys + p, mask=p < B, other=-1) == k0)
            if OP == "last":
                last = tl.maximum(last, tl.max(tl.where(m, p, -1), 0))
            else:
                acc = _chunk(acc, val, value, perm, p, m, r_mask, vr, bsizes,
                             (vb_s0, vb_s1, vb_s2, vb_s3, vb_s4, vb_s5), OP, ACC, BDIM)
            more = tl.sum(m.to(tl.int32), 0) == BS
            start += BS
        if OP == "last":
            vb = offsets(tl.load(perm + last), bsizes, (vb_s0, vb_s1, vb_s2, vb_s3, vb_s4, vb_s5),
                         BDIM)
            res = tl.load(val + vb + vr, mask=r_mask)
        else:
            res = _combine(tl.load(out + k0 + orow, mask=r_mask).to(ACC), acc, OP)
        if TO_BOOL:
            res = res != 0
        tl.store(out + k0 + orow, res.to(out.dtype.element_ty), mask=r_mask)


_TL_ACC = {"float64": tl.float64, "float32": tl.float32, "float16": tl.float32,
           "bfloat16": tl.float32}


def _acc(dtype):
    return _TL_ACC.get(dtype.name, tl.int64)


def key_dtype(out):
    """int32 keys (sorted as packed single words) when every offset into `out` fits, else int64."""
    extent = sum((n - 1) * st for n, st in zip(out.shape, out.element_strides()))
    return np.dtype(np.int32) if extent < 2 ** 31 else INT64


def sort_keys(keys):
    """(keys sorted, int64 permutation), stable, for a contiguous 1-D key array."""
    return kernel("sort", "cuda")(keys, 0, False, True)


def _layout(batch, rest, out_strides, val):
    """(values, merged batch sizes, the values' strides over them, merged rest sizes, the
    values' and out's strides over those); the values are copied contiguous when either side
    does not merge into MAX_DIMS dims."""
    nb = len(batch)
    for attempt in range(2):
        full = strides_over(val, batch + rest) if val is not None else (0,) * (nb + len(rest))
        bsizes, (vb,) = coalesce(batch, full[:nb])
        rsizes, (vr, orow) = coalesce(rest, full[nb:], out_strides)
        if len(bsizes) <= MAX_DIMS and len(rsizes) <= MAX_DIMS:
            return val, bsizes, vb, rsizes, vr, orow
        if val is not None and not attempt:
            operand = Operand(val, batch + rest)
            operand.make_contiguous()
            val = operand.arr
    raise NotImplementedError(f"genesis: accumulating index writes on cuda over more than "
                              f"{MAX_DIMS} dims that do not merge (shape {list(batch + rest)})")


class _Plan:
    """The segment launch for `out` (rest dims `rest` at `out_strides`) and the values."""

    def __init__(self, out, batch, rest, out_strides, val, value, op):
        self.batch, self.rest, self.out, self.value, self.op = tuple(batch), tuple(rest), out, \
            value, op
        self.key_type = pointer_of(key_dtype(out))
        self.val, self.bsizes, self.vb, self.rsizes, self.vr, self.orow = _layout(
            self.batch, self.rest, tuple(out_strides), val)

    def _value_type(self):
        return None if self.val is not None else value_entry(self.value, self.out.dtype)[0]

    def key(self):
        return (tuple(self.bsizes), self.vb, tuple(self.rsizes), self.vr, self.orow,
                numel(self.batch), self.key_type, self.out.dtype, None if self.val is None else self.val.dtype,
                self._value_type(), self.op, self.out.device)

    def recipe(self, target=None):
        br = min(next_pow2(numel(self.rest)), _MAX_BR)
        nr = cdiv(numel(self.rest), br)
        vty = self._value_type()
        ity = "i64"
        entries = [("keys", Slot("keys"), self.key_type), ("perm", Slot("perm"), "*i64"),
                   ("out", Slot("out"), pointer_of(self.out.dtype)),
                   ("val", None, "constexpr") if vty else
                   ("val", Slot("val"), pointer_of(self.val.dtype)),
                   ("value", Slot("value"), vty) if vty else ("value", None, "constexpr"),
                   ("B", numel(self.batch), ity), ("R", numel(self.rest), ity),
                   ("NR", nr, "constexpr" if nr == 1 else ity)]
        entries += size_entries("b", self.bsizes, MAX_DIMS, ity)
        entries += stride_entries("vb_", self.vb, MAX_DIMS, ity)
        entries += size_entries("r", self.rsizes, MAX_DIMS, ity)
        entries += stride_entries("vr_", self.vr, MAX_DIMS, ity)
        entries += stride_entries("or_", self.orow, MAX_DIMS, ity)
        entries += const(OP=self.op, ACC=_acc(self.out.dtype), BDIM=len(self.bsizes),
                         RDIM=len(self.rsizes), TO_BOOL=self.out.dtype.kind == "b",
                         BS=max(1, min(_TILE // br, _MAX_BS)), BR=br)
        recipe = Recipe(self.out.device, target)
        grid = (numel(self.batch) * nr,)
        recipe.add(_segment_kernel, grid, entries, NUM_WARPS)
        return recipe


_recipes = RecipeCache()


def accumulate_into(out, keys, rest, out_strides, values, op):
    """out[keys[b] + r] = out[...] op values[b, r], duplicates combined in a fixed order (op
    "last": out[keys[b] + r] = values[b, r], the last duplicate winning).

    `keys` (of key_dtype(out), any shape: the batch) are element offsets into `out`; `rest`
    the shape of the trailing dims each key reaches, at `out_strides`; `values` a CUDAArray
    broadcastable to batch + rest, or a scalar."""
    batch = keys.shape
    if not numel(batch) or not numel(rest):
        return
    val = values if isinstance(values, CUDAArray) else None
    plan = _Plan(out, batch, rest, out_strides, val, values, op)
    flat = CUDAArray(keys.storage, (keys.size,), (keys.itemsize,), keys.offset, keys.dtype)
    sorted_keys, perm = sort_keys(flat)
    recipe = _recipes.get_or_build(plan.key(), plan.recipe)
    args = {"keys": sorted_keys, "perm": perm, "out": out, "val": plan.val}
    if val is None:
        args["value"] = value_entry(values, out.dtype)[1]
    recipe.run(current_stream_handle(out.device), args)


def compile_all(target):
    """The segment kernel for embedding-like rows and scalar scatters, add and multiply, every
    accumulator type, int32 and int64 keys, compiled for `target` (CI, no GPU needed)."""
    import ml_dtypes
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.int8,
                  np.bool_):
        out = placeholder((50257, 768), dtype)
        rows = placeholder((4096, 768), dtype)
        _Plan(out, (4096,), (768,), (1,), rows, None, "add").recipe(target)
        flat = placeholder((1000,), dtype)
        for op in ("add", "multiply"):
            _Plan(flat, (300,), (), (), placeholder((300,), dtype), None, op).recipe(target)
        _Plan(out, (4096,), (768,), (1,), None, 1, "add").recipe(target)
        _Plan(out, (4096,), (768,), (1,), rows, None, "last").recipe(target)
    huge = placeholder((1 << 31,), np.float32)
    _Plan(huge, (300,), (), (), placeholder((300,), np.float32), None, "add").recipe(target)
