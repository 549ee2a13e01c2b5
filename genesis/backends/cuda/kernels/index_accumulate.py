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
from ..launch import Const, Launch, LaunchCache, pointer_of
from ..runtime.array import CUDAArray
from ..runtime.stream import current_stream_handle
from ._index_layout import INT64, Operand, numel, strides_over, value_entry
from ._strided_indexing import (MAX_DIMS, cdiv, coalesce, dim_sizes, dim_strides, next_pow2,
                                offsets)
from .reduce import _mul

# Tiles (see the module docstring): a chunk of BS keys x BR rest elements holds up to 4096
# values; BR up to 1024, BS up to 128.
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
def _chunk(acc, values_ptr, value, perm_ptr, p, m, rest_mask, values_rest, key_sizes,
           values_key_strides, OP: tl.constexpr, ACC: tl.constexpr, KEY_DIMS: tl.constexpr):
    """`acc` combined with the values of the chunk positions `p` where `m` holds."""
    identity: tl.constexpr = 0 if OP == "add" else 1
    tile_mask = m[:, None] & rest_mask[None, :]
    if values_ptr is None:
        v = tl.where(tile_mask, value.to(ACC), identity)
    else:
        b = tl.load(perm_ptr + p, mask=m, other=0)
        values_key = offsets(b, key_sizes, values_key_strides, KEY_DIMS)
        v = tl.load(values_ptr + values_key[:, None] + values_rest[None, :], mask=tile_mask,
                    other=0)
        v = tl.where(tile_mask, v.to(ACC), identity)
    if OP == "add":
        acc += tl.sum(v, 0)
    else:
        acc *= tl.reduce(v, 0, _mul)
    return acc


@triton.jit
def _segment_kernel(
        # pointers: the sorted keys (element offsets into out), the sorting permutation, the
        # target, the values (None when a scalar `value` is written)
        keys_ptr, perm_ptr, out_ptr, values_ptr,
        # the scalar written or combined (or None)
        value,
        # sizes: keys, rest elements each key reaches, rest blocks per key; the coalesced key
        # dims and rest dims (size0 of each is never read)
        n_keys, n_rest, rest_blocks,
        key_size1, key_size2, key_size3, key_size4, key_size5,
        rest_size1, rest_size2, rest_size3, rest_size4, rest_size5,
        # strides, in elements: of the values over the key dims and the rest dims, of out over
        # the rest dims
        values_key_stride0, values_key_stride1, values_key_stride2, values_key_stride3,
        values_key_stride4, values_key_stride5,
        values_rest_stride0, values_rest_stride1, values_rest_stride2, values_rest_stride3,
        values_rest_stride4, values_rest_stride5,
        out_rest_stride0, out_rest_stride1, out_rest_stride2, out_rest_stride3,
        out_rest_stride4, out_rest_stride5,
        # meta-parameters
        OP: tl.constexpr, ACC: tl.constexpr, KEY_DIMS: tl.constexpr, REST_DIMS: tl.constexpr,
        TO_BOOL: tl.constexpr, BS: tl.constexpr, BR: tl.constexpr):
    """Program s*rest_blocks + c: if sorted position s starts a run of equal keys, combine the
    run's values for the rest elements c*BR.. and write them into out at that key (OP "last":
    write the run's last value, the one a sequential assignment leaves)."""
    pid = tl.program_id(0).to(tl.int64)
    s = pid // rest_blocks
    k0 = tl.load(keys_ptr + s)
    head = s == 0
    if s > 0:
        head = tl.load(keys_ptr + s - 1) != k0
    if head:
        identity: tl.constexpr = 0 if OP == "add" else 1
        r = (pid % rest_blocks) * BR + tl.arange(0, BR)
        rest_mask = r < n_rest
        rest_sizes = (1, rest_size1, rest_size2, rest_size3, rest_size4, rest_size5)
        values_rest = offsets(r, rest_sizes, (values_rest_stride0, values_rest_stride1,
                                              values_rest_stride2, values_rest_stride3,
                                              values_rest_stride4, values_rest_stride5),
                              REST_DIMS)
        out_rest = offsets(r, rest_sizes, (out_rest_stride0, out_rest_stride1, out_rest_stride2,
                                           out_rest_stride3, out_rest_stride4, out_rest_stride5),
                           REST_DIMS)
        key_sizes = (1, key_size1, key_size2, key_size3, key_size4, key_size5)
        values_key_strides = (values_key_stride0, values_key_stride1, values_key_stride2,
                              values_key_stride3, values_key_stride4, values_key_stride5)
        acc = tl.full((BR,), identity, ACC)
        start = s
        last = s
        more = head
        while more:
            p = start + tl.arange(0, BS)
            m = (p < n_keys) & (tl.load(keys_ptr + p, mask=p < n_keys, other=-1) == k0)
            if OP == "last":
                last = tl.maximum(last, tl.max(tl.where(m, p, -1), 0))
            else:
                acc = _chunk(acc, values_ptr, value, perm_ptr, p, m, rest_mask, values_rest,
                             key_sizes, values_key_strides, OP, ACC, KEY_DIMS)
            more = tl.sum(m.to(tl.int32), 0) == BS
            start += BS
        if OP == "last":
            values_key = offsets(tl.load(perm_ptr + last), key_sizes, values_key_strides,
                                 KEY_DIMS)
            res = tl.load(values_ptr + values_key + values_rest, mask=rest_mask)
        else:
            res = _combine(tl.load(out_ptr + k0 + out_rest, mask=rest_mask).to(ACC), acc, OP)
        if TO_BOOL:
            res = res != 0
        tl.store(out_ptr + k0 + out_rest, res.to(out_ptr.dtype.element_ty), mask=rest_mask)


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
                numel(self.batch), self.key_type, self.out.dtype,
                None if self.val is None else self.val.dtype, self._value_type(), self.op,
                self.out.device)

    def plan(self, target=None):
        """(launch, the sizes and strides _segment_launch passes)."""
        br = min(next_pow2(numel(self.rest)), _MAX_BR)
        rest_blocks = cdiv(numel(self.rest), br)
        vty = self._value_type()
        meta = dict(OP=self.op, ACC=_acc(self.out.dtype), KEY_DIMS=len(self.bsizes),
                    REST_DIMS=len(self.rsizes), TO_BOOL=self.out.dtype.kind == "b",
                    BS=max(1, min(_TILE // br, _MAX_BS)), BR=br)
        launch = Launch(_segment_kernel, (numel(self.batch) * rest_blocks,), meta, NUM_WARPS,
                        int_type="i64", types={"value": vty} if vty else None,
                        per_call=_PER_CALL, device=self.out.device, target=target)
        sizes = (numel(self.batch), numel(self.rest), Const(1) if rest_blocks == 1 else
                 rest_blocks) + dim_sizes(self.bsizes, MAX_DIMS) + dim_sizes(self.rsizes,
                                                                             MAX_DIMS)
        strides = (dim_strides(self.vb, MAX_DIMS) + dim_strides(self.vr, MAX_DIMS) +
                   dim_strides(self.orow, MAX_DIMS))
        return launch, (sizes, strides)


# Pointers and the scalar change from call to call of one geometry: never assumed aligned.
_PER_CALL = ("keys_ptr", "perm_ptr", "out_ptr", "values_ptr", "value")


def _segment_launch(launch, dims, stream, keys, perm, out, values, value):
    """The call of _segment_kernel; `dims` as _Plan.plan makes them."""
    sizes, strides = dims
    launch(stream,
           # pointers
           keys, perm, out, values,
           # the scalar
           value,
           # sizes
           *sizes,
           # strides
           *strides)


_plans = LaunchCache()


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
    launch, dims = _plans.get_or_build(plan.key(), plan.plan)
    value = value_entry(values, out.dtype)[1] if val is None else None
    _segment_launch(launch, dims, current_stream_handle(out.device), sorted_keys, perm, out,
                    plan.val, value)
