"""Fused scaled dot-product attention on the GPU, the host side: the ops "flash_attention" and
"flash_attention_backward", which check their operands, plan the launches of attention.py's
kernels (whose docstring tells the algorithm) and run them.

Plans: a plan holds the launches (grid, meta-parameters, attention_tiles.tiles' tiles) and the
sizes and strides they are passed, for operands of one geometry: every operand's shape,
strides, dtype and 16-byte alignment, with the causal, dropout and TF32 choices (_key). _plans
caches them, so a call of a known geometry goes straight to its launches. The forward is one
launch (_forward_plan, _forward_launch). The backward (_BackwardPlan) runs the Delta launch,
then the one-pass or the two-pass form: two-pass under genesis.use_deterministic_algorithms(True)
(torch's rule), and also wherever it is the faster (attention_tiles.two_pass): the one-pass
form's atomic adds of dQ cost more than the two extra products. The score scale and dropout's
draw change from call to call (_PER_CALL, _rng_args); offsets are int32 where every operand's
reach fits, else int64 (_index_type).

Layout: q, k, v are (..., L or S, D) with at most two leading dims (batch, heads), read in
place through their strides (the last stride must be 1; _Geometry), of head dims 16..128
(supports), k and v with the same heads as q or fewer, dividing them (_check). O and dQ are
laid out like q, dK like k, dV like v: dense, D innermost, the other dims in the input's order
(`_dense_like`), as torch lays out SDPA's results. For heads cut from a (B, T, H, D) projection
and transposed to (B, H, T, D), transposing O and the gradients back is then a view, not a copy.
"""

import numpy as np

from ....dispatch import register
from .. import matmul as flags
from ..array_ops import as_strided
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import cdiv, placeholder
from .attention import (ADDITIVE_MASK, BOOL_MASK, NO_MASK, _attn_delta_kernel,
                        _attn_dkdv_kernel, _attn_dq_cast_kernel, _attn_dq_kernel,
                        _attn_fwd_kernel)
from .attention_tiles import HALF, longest_first, tiles, two_pass
from .random import philox_args

MIN_HEAD, MAX_HEAD = 16, 128


def supports(dtype, head_dim):
    """The fused kernels take this dtype and head dim (16..128)."""
    return (np.dtype(dtype) in (np.dtype(np.float32),) + HALF
            and MIN_HEAD <= head_dim <= MAX_HEAD)


class _Geometry:
    """Batch, heads and element strides (batch, head, row) of a (..., rows, D) operand with
    at most two leading dims and a unit last stride (None otherwise)."""

    @staticmethod
    def of(arr):
        strides = arr.element_strides()
        if arr.ndim > 4 or arr.ndim < 2 or (strides[-1] != 1 and arr.shape[-1] > 1):
            return None
        lead = (1,) * (4 - arr.ndim) + tuple(arr.shape[:-2])
        lead_strides = (0,) * (4 - arr.ndim) + tuple(strides[:-2])
        return lead, lead_strides + (strides[-2],)


def _dense_like(arr):
    """Element strides of a new dense array of `arr`'s shape with D innermost and the other
    dims in `arr`'s order (largest stride first, ties in dim order): torch's layout for SDPA's
    outputs and gradients."""
    strides = arr.element_strides()
    order = sorted(range(arr.ndim - 1), key=lambda i: -abs(strides[i]))
    out, step = [1] * arr.ndim, arr.shape[-1]
    for i in reversed(order):
        out[i] = step
        step *= max(arr.shape[i], 1)
    return tuple(out)


def _empty_like(arr, dtype, stream):
    """A new array laid out as `_dense_like(arr)`."""
    return _empty_strided(arr, dtype, _dense_like(arr), stream)


def _empty_strided(arr, dtype, strides, stream):
    """A new array of `arr`'s shape with these element strides (a dense layout of it)."""
    flat = CUDAArray.empty((arr.size,), dtype, arr.device, stream)
    return as_strided(flat, arr.shape, strides, 0)


def _geometry_like(arr):
    """The _Geometry of an array made by _empty_like(arr)."""
    return _Geometry.of(placeholder(arr.shape, arr.dtype, _dense_like(arr)))


def _grid(planes, blocks, heavy_first):
    """The launch grid of `planes` x `blocks` programs in _block_and_plane's order."""
    return (planes, blocks) if heavy_first else (blocks, planes)


def _index_type(*arrays):
    """int32 when every offset into every array (None: no array) fits, else int64."""
    reach = max(sum((n - 1) * abs(s) for n, s in zip(a.shape, a.element_strides())) + a.size
                for a in arrays if a is not None)
    return "i32" if reach < 2 ** 31 else "i64"


def _mask_kind(mask):
    """The kernels' MASK for an attn_mask array (or None)."""
    if mask is None:
        return NO_MASK
    return BOOL_MASK if mask.dtype == np.bool_ else ADDITIVE_MASK


def _mask_strides(mask):
    """Element strides of the attn_mask's (batch, head, query, key) dims, zeros for none; a
    key stride of 1 is compiled in (contiguous loads)."""
    if mask is None:
        return (0, 0, 0, 0)
    strides = (0,) * (4 - mask.ndim) + tuple(mask.element_strides())
    return strides[:3] + (Const(1) if strides[3] == 1 else strides[3],)


_PER_CALL = ("scale", "dropout_p", "dropout_scale", "seed", "offset", "rng_state_ptr",
             "seed_in_memory")
_RNG_TYPES = {"seed": "i64", "offset": "i64"}


def _attention_launch(kernel, grid, meta, warps, stages, ity, device, target):
    """A Launch of one of the attention kernels (the score scale and dropout's draw change
    from call to call)."""
    return Launch(kernel, grid, meta, warps, stages, int_type=ity, types=_RNG_TYPES,
                  per_call=_PER_CALL, device=device, target=target)


def _rng_args(dropout, device):
    """(dropout_p, dropout_scale, seed, offset, rng_state_ptr, seed_in_memory) of the kernels
    for `dropout`: None, or (p, the generator's seed, or in a CUDA graph its device state,
    offset)."""
    if dropout is None:
        return 0.0, 1.0, 0, 0, None, 0
    p, seed, offset = dropout
    return (p, 1.0 / (1.0 - p), *philox_args(seed, offset, device))


def _forward_plan(q, k, v, mask, dropout, causal, tf32, keep_float, device=0, target=None):
    """(the forward launch for operands laid out like these, the sizes and strides
    _forward_launch passes)."""
    (lead, q_strides), (kv_lead, k_strides), (_, v_strides) = (_Geometry.of(a) for a in (q, k, v))
    bd, (bm, bn, warps, stages), _, _, precision = tiles(q.dtype, q.shape[-1], tf32)
    heavy_first = longest_first(q.dtype, dropout)
    meta = dict(CAUSAL=causal, MASK=_mask_kind(mask), DROPOUT=dropout is not None,
                HEAD=q.shape[-1], BD=bd, PRECISION=precision, BM=bm, BN=bn,
                GROUP=lead[1] // kv_lead[1], LONGEST_FIRST=heavy_first)
    grid = _grid(lead[0] * lead[1], cdiv(q.shape[-2], bm), heavy_first)
    launch = _attention_launch(_attn_fwd_kernel, grid, meta, warps, stages,
                               _index_type(q, k, v, mask), device, target)
    sizes = (lead[1], q.shape[-2], k.shape[-2])
    return launch, (sizes, q_strides, k_strides, v_strides, _geometry_like(q)[1],
                    _mask_strides(mask))


def _forward_launch(launch, dims, stream, q, k, v, mask, out, lse, out_f, scale, dropout):
    """The call of _attn_fwd_kernel; `dims` as _forward_plan makes them."""
    sizes, q_strides, k_strides, v_strides, o_strides, m_strides = dims
    launch(stream,
           # pointers
           q, k, v, mask, out, lse, out_f,
           # the score scale, dropout
           scale, *_rng_args(dropout, launch.device),
           # sizes
           *sizes,
           # strides
           *q_strides, *k_strides, *v_strides, *o_strides, *m_strides)


class _BackwardPlan:
    """The backward's launches for operands laid out like these. Both forms first run the
    Delta kernel (into a float32 buffer of the query rows, fresh per run: the later launches
    read it). Two-pass (deterministic; which form runs, attention_tiles.two_pass): then the
    dK/dV kernel and the dQ kernel. One-pass: the Delta kernel also zeroes a float32 dQ
    accumulator, the dK/dV kernel adds dS K to it atomically, and a last kernel scales it into
    dQ."""

    def __init__(self, g, q, k, v, out, mask, dropout, causal, tf32, deterministic, device=0,
                 target=None):
        geos = [_Geometry.of(a) for a in (q, k, v, g)]
        lead, kv_lead = geos[0][0], geos[1][0]
        bd, _, two_pass_tile, one_pass_tile, precision = tiles(q.dtype, q.shape[-1], tf32)
        deterministic = two_pass(q.dtype, q.shape[-1], deterministic)
        block, step, warps, stages = two_pass_tile if deterministic else one_pass_tile
        ity = _index_type(q, k, v, g, mask)
        planes, length, head = lead[0] * lead[1], q.shape[-2], q.shape[-1]
        self.device, self.target, self.deterministic = device, target, deterministic
        self.delta_shape = q.shape[:-1]
        rows = dict(HEAD=head, BD=bd, BM=block)
        self.delta = _attention_launch(_attn_delta_kernel, (cdiv(length, block), planes), rows,
                                       warps, 1, ity, device, target)
        heavy_first = longest_first(q.dtype, dropout)
        meta = dict(CAUSAL=causal, MASK=_mask_kind(mask), DROPOUT=dropout is not None,
                    HEAD=head, BD=bd, PRECISION=precision, GROUP=lead[1] // kv_lead[1],
                    LONGEST_FIRST=heavy_first)
        self.dkdv = _attention_launch(_attn_dkdv_kernel,
                                      _grid(kv_lead[0] * kv_lead[1], cdiv(k.shape[-2], block),
                                            heavy_first),
                                      dict(meta, BM=step, BN=block), warps, stages, ity, device,
                                      target)
        if deterministic:
            self.dq = _attention_launch(_attn_dq_kernel,
                                        _grid(planes, cdiv(length, block), heavy_first),
                                        dict(meta, BM=block, BN=step), warps, stages, ity,
                                        device, target)
        else:
            self.dq = _attention_launch(_attn_dq_cast_kernel, (cdiv(length, block), planes),
                                        rows, warps, 1, ity, device, target)
        self.sizes = (lead[1], length, k.shape[-2])
        self.strides = tuple(geo[1] for geo in geos) + (_Geometry.of(out)[1],) + tuple(
            _geometry_like(a)[1] for a in (q, k, v))
        self.mask_strides = _mask_strides(mask)

    def _scratch(self, shape, stream):
        """A new float32 array (a placeholder when only compiling)."""
        if self.target:
            return placeholder(shape, np.float32)
        return CUDAArray.empty(shape, np.float32, self.device, stream)

    def run(self, stream, g, q, k, v, out, mask, dropout, lse, scale, dq, dk, dv):
        q_st, k_st, v_st, g_st, o_st, dq_st, dk_st, dv_st = self.strides
        m_st, rng = self.mask_strides, _rng_args(dropout, self.device)
        n_heads, q_len, k_len = self.sizes
        delta = self._scratch(self.delta_shape, stream)
        dq_acc = None if self.deterministic else self._scratch(q.shape, stream)
        self.delta(stream,
                   # pointers
                   g, out, delta, dq_acc,
                   # sizes
                   n_heads, q_len,
                   # strides
                   *g_st, *o_st)
        self.dkdv(stream,
                  # pointers
                  q, k, v, mask, g, lse, delta, dk, dv, dq_acc,
                  # the score scale, dropout
                  scale, *rng,
                  # sizes
                  *self.sizes,
                  # strides
                  *q_st, *k_st, *v_st, *g_st, *dk_st, *dv_st, *m_st)
        if self.deterministic:
            self.dq(stream,
                    # pointers
                    q, k, v, mask, g, lse, delta, dq,
                    # the score scale, dropout
                    scale, *rng,
                    # sizes
                    *self.sizes,
                    # strides
                    *q_st, *k_st, *v_st, *g_st, *dq_st, *m_st)
        else:
            self.dq(stream,
                    # pointers
                    dq_acc, dq,
                    # the score scale
                    scale,
                    # sizes
                    n_heads, q_len,
                    # strides
                    *dq_st)


_plans = LaunchCache()


def _key(*arrays):
    return tuple([None if a is None else (a.shape, a.strides, a.dtype, a.ptr % 16 == 0)
                  for a in arrays])


def _check(q, k, v, mask):
    """Operands the kernels take (k and v may have fewer heads, dividing q's; the mask, when
    given, of shape (..., L, S) with q's leading dims, broadcast dims at stride 0)."""
    mask_shape = q.shape[:-1] + k.shape[-2:-1]
    if mask is not None and (mask.shape != mask_shape or mask.ndim > 4 or not (
            mask.dtype == np.bool_ or mask.dtype == q.dtype)):
        raise RuntimeError(f"flash_attention: an attn_mask of {mask.shape} and {mask.dtype} "
                           f"for queries {q.shape} and keys {k.shape} of {q.dtype}: expected "
                           f"bool or {q.dtype} of {mask_shape}")
    lead_ok = q.shape[:-2] == k.shape[:-2]
    if not lead_ok and q.ndim >= 3 and k.ndim == q.ndim and k.shape[-3]:
        lead_ok = (q.shape[:-3] == k.shape[:-3] and q.shape[-3] % k.shape[-3] == 0)
    if not (q.dtype == k.dtype == v.dtype and supports(q.dtype, q.shape[-1])
            and k.shape[-1] == v.shape[-1] == q.shape[-1]
            and lead_ok and k.shape[:-2] == v.shape[:-2] and k.shape[-2] == v.shape[-2]
            and all(_Geometry.of(a) is not None for a in (q, k, v))):
        raise RuntimeError(f"flash_attention: unsupported operands {q.shape}, {k.shape}, "
                           f"{v.shape} of {q.dtype}, {k.dtype}, {v.dtype}")


@register("flash_attention", "cuda")
def flash_attention(query, key, value, attn_mask, dropout, is_causal, scale, keep_float):
    """(softmax(Q K^T * scale + mask, causal) V laid out like the query, row logsumexp of the
    scaled scores as float32, the output in float32 for half types when `keep_float` (what the
    backward's Delta = rowsum(dO * O) needs to match attention computed in float32), else
    None). Key and value may have fewer heads than the query (grouped-query attention).
    `attn_mask` (or None): bool (True: may attend) or additive of the query's dtype, of shape
    (..., L, S), broadcast dims at stride 0. `dropout` (or None): (p, seed, offset), the
    generator's draw of dropout_counters(...) counters (the seed is a device array in a CUDA
    graph); the backward takes the same to drop the same probabilities."""
    device = query.device
    activate(device)
    stream = current_stream_handle(device)
    keep_float = keep_float and query.dtype in HALF
    tf32 = flags.allow_tf32
    key_ = ("fwd", _key(query, key, value, attn_mask), dropout is None, is_causal, tf32,
            keep_float, device)
    plan = _plans.get(key_)
    if plan is None:  # operands of a new geometry (the key holds all _check reads)
        _check(query, key, value, attn_mask)
        if query.size:
            plan = _plans.get_or_build(key_, lambda: _forward_plan(
                query, key, value, attn_mask, dropout, is_causal, tf32, keep_float, device)
                + (_dense_like(query),))
    strides = _dense_like(query) if plan is None else plan[2]
    out = _empty_strided(query, query.dtype, strides, stream)
    lse = CUDAArray.empty(query.shape[:-1], np.float32, device, stream)
    out_f = _empty_strided(query, np.float32, strides, stream) if keep_float else None
    if plan is not None:
        _forward_launch(plan[0], plan[1], stream, query, key, value, attn_mask, out, lse, out_f,
                        float(scale), dropout)
    return out, lse, out_f


@register("flash_attention_backward", "cuda")
def flash_attention_backward(grad, query, key, value, out, attn_mask, dropout, lse, is_causal,
                             scale, deterministic):
    """(dQ, dK, dV), each laid out like its input, of flash_attention from the output gradient
    and its saved lse and out (the float32 one where it kept it). `deterministic`: every
    element summed in a fixed order (the two-pass backward); else the faster form for these
    operands (attention_tiles.two_pass), which for float32 at head dims up to 64 is the one-pass
    backward, whose dQ sums with float atomics (its last bits vary from run to run). Key and
    value may have fewer heads than the query (grouped-query attention); `attn_mask` and
    `dropout` as the forward's."""
    _check(query, key, value, attn_mask)
    device = query.device
    activate(device)
    stream = current_stream_handle(device)
    grads = tuple(_empty_like(a, a.dtype, stream) for a in (query, key, value))
    if all(a.size for a in grads):
        tf32 = flags.allow_tf32
        key_ = ("bwd", _key(grad, query, key, value, out, attn_mask), is_causal, tf32,
                deterministic, device, dropout is None)
        plan = _plans.get_or_build(key_, lambda: _BackwardPlan(
            grad, query, key, value, out, attn_mask, dropout, is_causal, tf32, deterministic,
            device))
        plan.run(stream, grad, query, key, value, out, attn_mask, dropout, lse, float(scale),
                 *grads)
    return grads
