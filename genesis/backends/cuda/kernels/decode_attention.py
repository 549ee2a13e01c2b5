"""Attention of one query row per head against a key/value cache (decoding), on the GPU.

("decode_attention": query (B, H, 1, D), cached keys and values (B, KVH, S, D) with H a multiple
of KVH, an optional bool key mask (B, S) and an optional valid length.) One program serves
every query head of one key/value head (grouped-query attention reads each cached key once for
its whole group): the group's queries are the rows of a (BG, D) tile, padded to the 16 rows a
tensor-core product needs, and the keys stream through BN at a time with an online softmax in
base 2, as in kernels/attention.py.

When batch x KVH programs would leave most of the GPU idle (batch 1: 8 programs for a
Llama-3-shaped model), the keys are split along their length (flash-decoding): each split
writes its normalized partial output and its log-sum-exp in float32 and bumps its plane's
counter (reduce.py's per-stream split counters); the split that brings the count to the number
of splits weighs them all and rounds once to the output dtype, in the same launch, and sets the
counter back to 0. The grid depends only on the shapes, so
a CUDA graph can replay it: the number of valid keys is read from device memory (`length`, one
int64) and splits past it write an empty partial.

"kv_cache_write" writes a step's keys and values (B, KVH, T, D) into the cache at the slot read
from device memory, so a decode step's cache writes, too, need no host-side position.

Numerics: Q K^T of half inputs is exact products summed in float32; the float32 probabilities
enter P V as high and low half-precision parts (two tensor-core products, `_dot_p`); float32
inputs take IEEE float32 products. A query row whose keys are all masked gives zeros, as
F.scaled_dot_product_attention's composite path does.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn, wait_for_prior_grid
from ._strided_indexing import cdiv, next_pow2
from .reduce import split_counters

MIN_HEAD, MAX_HEAD = 16, 128
_HALF = (np.dtype(np.float16), np.dtype("bfloat16"))

# Tiles: BN = 64 keys a block, a (64, D <= 128) half tile of 16 KB, three stages in flight (48 KB
# of shared memory) so that the next blocks' loads overlap this block's products; the query
# group padded to at least 16 rows (the smallest tensor-core product). TARGET_PROGRAMS: two
# programs for each of an H100's or H200's 132 SMs; splits stop at MAX_SPLITS so the combining
# program's (splits, D) float32 tile stays at most 64 registers a thread. The cache write copies
# one (token, head) row of at most 128 elements a program: one warp, four elements a thread.
BLOCK_N = 64
MIN_GROUP_ROWS = 16
TARGET_PROGRAMS = 264
MAX_SPLITS = 64
NUM_WARPS = 4
NUM_STAGES = 3
WRITE_WARPS = 1


@triton.jit
def _dot_p(p, v, acc, PRECISION: tl.constexpr, SPLIT_DOT: tl.constexpr):
    """acc + p @ v for float32 probabilities `p`; SPLIT_DOT (half types): `p` as high + low
    half-precision parts, two tensor-core products, so P keeps about 16 (bf16) to 22 (fp16)
    bits. Decoding is bound by reading the cache, so the second product costs nothing."""
    if SPLIT_DOT:
        hi = p.to(v.dtype)
        acc = tl.dot(hi, v, acc)
        acc = tl.dot((p - hi.to(tl.float32)).to(v.dtype), v, acc)
    else:
        acc = tl.dot(p, v, acc, input_precision=PRECISION)
    return acc


@triton.jit
def _decode_split_kernel(
        # pointers: the query (B, H, 1, D); the cached keys and values (B, KVH, S, D); the key
        # mask (B, S) as bytes, or None; the number of valid keys (one int64), or None; the
        # output (B, H, 1, D) contiguous; with SPLITS > 1 the partial outputs (B*H, SPLITS, D)
        # and log2-sum-exps (B*H, SPLITS) in float32 and the planes' split counters (int32)
        q_ptr, k_ptr, v_ptr, mask_ptr, length_ptr, out_ptr, part_out_ptr, part_lse_ptr,
        counts_ptr,
        # sizes: key/value heads, cached keys, keys per split
        kv_heads, n_keys, split_len,
        # strides, in elements
        q_batch_stride, q_head_stride, k_batch_stride, k_head_stride, k_row_stride,
        v_batch_stride, v_head_stride, v_row_stride, mask_batch_stride, mask_key_stride,
        # the softmax scale times log2(e)
        qk_scale,
        # meta-parameters
        GROUP: tl.constexpr, BG: tl.constexpr, HEAD: tl.constexpr, BD: tl.constexpr,
        BN: tl.constexpr, SPLITS: tl.constexpr, BS: tl.constexpr, PRECISION: tl.constexpr,
        SPLIT_DOT: tl.constexpr, PDL: tl.constexpr):
    """Keys pid0*split_len.. of key/value head pid1 % kv_heads of batch row pid1 // kv_heads,
    for its GROUP query heads; the plane's last split to finish combines them all."""
    wait_for_prior_grid(PDL)
    split = tl.program_id(0)
    plane = tl.program_id(1)
    b = plane // kv_heads
    kv_head = plane % kv_heads
    g = tl.arange(0, BG)
    d = tl.arange(0, BD)
    heads = kv_head * GROUP + g
    row_ok = g < GROUP
    d_ok = d < HEAD
    q = tl.load(q_ptr + b * q_batch_stride + heads[:, None] * q_head_stride + d[None, :],
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    start = split * split_len
    end = tl.minimum(start + split_len, n_keys)
    if length_ptr is not None:
        end = tl.minimum(end, tl.load(length_ptr).to(tl.int32))
    kp = k_ptr + b * k_batch_stride + kv_head * k_head_stride
    vp = v_ptr + b * v_batch_stride + kv_head * v_head_stride
    m_i = tl.full([BG], -1.0e38, tl.float32)
    l_i = tl.zeros([BG], tl.float32)
    acc = tl.zeros([BG, BD], tl.float32)
    for n0 in range(start, end, BN):
        n = n0 + tl.arange(0, BN)
        in_range = n < end
        ok = in_range
        if mask_ptr is not None:
            ok = ok & (tl.load(mask_ptr + b * mask_batch_stride + n * mask_key_stride,
                               mask=in_range, other=0) != 0)
        tile = in_range[:, None] & d_ok[None, :]
        k = tl.load(kp + n[:, None] * k_row_stride + d[None, :], mask=tile, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(vp + n[:, None] * v_row_stride + d[None, :], mask=tile, other=0.0)
        acc = _dot_p(p, v, acc * alpha[:, None], PRECISION, SPLIT_DOT)
        m_i = m_new
    seen = l_i > 0
    o = acc * tl.where(seen, div_rn(1.0, tl.where(seen, l_i, 1.0)), 0.0)[:, None]
    rows = b * (kv_heads * GROUP) + heads
    if SPLITS == 1:
        tl.store(out_ptr + rows[:, None] * HEAD + d[None, :], o.to(out_ptr.dtype.element_ty),
                 mask=row_ok[:, None] & d_ok[None, :])
    else:
        lse = tl.where(seen, m_i + tl.log2(tl.where(seen, l_i, 1.0)), float("-inf"))
        slot = rows * SPLITS + split
        tl.store(part_lse_ptr + slot, lse, mask=row_ok)
        tl.store(part_out_ptr + slot[:, None] * HEAD + d[None, :], o,
                 mask=row_ok[:, None] & d_ok[None, :])
        # Every thread's stores precede the count (CTA barrier); the count releases them to the
        # program that sees it reach SPLITS and acquires them (acq_rel, GPU scope).
        tl.debug_barrier()
        done = tl.atomic_add(counts_ptr + plane, 1, sem="acq_rel", scope="gpu")
        if done == SPLITS - 1:
            tl.store(counts_ptr + plane, 0)
            first = b * (kv_heads * GROUP) + kv_head * GROUP
            for g_row in range(GROUP):
                _combine_row(part_out_ptr, part_lse_ptr, out_ptr, first + g_row, SPLITS,
                             BS, HEAD, BD)


@triton.jit
def _combine_row(part_out_ptr, part_lse_ptr, out_ptr, row, SPLITS: tl.constexpr,
                 BS: tl.constexpr, HEAD: tl.constexpr, BD: tl.constexpr):
    """Output row `row`: its splits' partial outputs weighed by their share of the softmax's
    sum, read past L1 (other programs wrote them)."""
    s = tl.arange(0, BS)
    d = tl.arange(0, BD)
    lse = tl.load(part_lse_ptr + row * SPLITS + s, mask=s < SPLITS, other=float("-inf"),
                  cache_modifier=".cg")
    top = tl.max(lse, 0)
    top = tl.where(top == float("-inf"), 0.0, top)
    w = tl.exp2(lse - top)
    part = tl.load(part_out_ptr + (row * SPLITS + s[:, None]) * HEAD + d[None, :],
                   mask=(s < SPLITS)[:, None] & (d < HEAD)[None, :], other=0.0,
                   cache_modifier=".cg")
    total = tl.sum(w, 0)
    o = tl.sum(part * w[:, None], 0) * tl.where(total > 0, div_rn(1.0, tl.maximum(total, 1e-30)),
                                                0.0)
    tl.store(out_ptr + row * HEAD + d, o.to(out_ptr.dtype.element_ty), mask=d < HEAD)


@triton.jit
def _kv_cache_write_kernel(
        # pointers: the key and value caches (B, KVH, S, D); this step's keys and values
        # (B, KVH, T, D); the slot of its first token (one int64)
        key_cache_ptr, value_cache_ptr, key_ptr, value_ptr, position_ptr,
        # sizes: key/value heads, tokens of this step
        kv_heads, tokens,
        # strides, in elements: batch, head and row of each operand
        kc_batch_stride, kc_head_stride, kc_row_stride,
        vc_batch_stride, vc_head_stride, vc_row_stride,
        k_batch_stride, k_head_stride, k_row_stride,
        v_batch_stride, v_head_stride, v_row_stride,
        # meta-parameters
        HEAD: tl.constexpr, BD: tl.constexpr):
    """Token pid0 % tokens of head (pid0 // tokens) % kv_heads of batch row
    pid0 // (tokens * kv_heads): its key and value rows into slot position + token."""
    pid = tl.program_id(0)
    t = pid % tokens
    plane = pid // tokens
    b = plane // kv_heads
    h = plane % kv_heads
    slot = tl.load(position_ptr) + t
    d = tl.arange(0, BD)
    ok = d < HEAD
    key = tl.load(key_ptr + b * k_batch_stride + h * k_head_stride + t * k_row_stride + d,
                  mask=ok)
    value = tl.load(value_ptr + b * v_batch_stride + h * v_head_stride + t * v_row_stride + d,
                    mask=ok)
    tl.store(key_cache_ptr + b * kc_batch_stride + h * kc_head_stride + slot * kc_row_stride
             + d, key, mask=ok)
    tl.store(value_cache_ptr + b * vc_batch_stride + h * vc_head_stride + slot * vc_row_stride
             + d, value, mask=ok)


def supports(dtype, head_dim):
    """The kernels take this dtype (float32, float16, bfloat16) and head dim (16..128)."""
    return (np.dtype(dtype) in (np.dtype(np.float32),) + _HALF
            and MIN_HEAD <= head_dim <= MAX_HEAD)


def split_plan(batch, kv_heads, n_keys):
    """(splits, keys per split): enough programs to fill the GPU, whole BLOCK_N blocks each."""
    blocks = cdiv(max(n_keys, 1), BLOCK_N)
    wanted = max(1, min(MAX_SPLITS, cdiv(TARGET_PROGRAMS, batch * kv_heads), blocks))
    split_len = cdiv(blocks, wanted) * BLOCK_N
    return cdiv(max(n_keys, 1), split_len), split_len


class _Plan:
    """The launch of one geometry: how many splits, and the split kernel."""

    def __init__(self, q, k, v, mask, length, target=None):
        batch, heads, _, head = q.shape
        kv_heads, n_keys = k.shape[1], k.shape[2]
        self.group = heads // kv_heads
        self.splits, self.split_len = split_plan(batch, kv_heads, n_keys)
        half = q.dtype in _HALF
        bd = next_pow2(head)
        meta = dict(GROUP=self.group, BG=max(MIN_GROUP_ROWS, next_pow2(self.group)), HEAD=head,
                    BD=bd, BN=BLOCK_N, SPLITS=self.splits, BS=next_pow2(self.splits),
                    PRECISION="tf32" if half else "ieee", SPLIT_DOT=half)
        ity = "i64" if max(_reach(a) for a in (q, k, v)) >= 2 ** 31 else "i32"
        self.split = Launch(_decode_split_kernel, (self.splits, batch * kv_heads), meta,
                            NUM_WARPS, NUM_STAGES, int_type=ity,
                            per_call=("mask_ptr", "length_ptr"),
                            device=q.device, target=target, pdl=batch == 1)
        self.planes = batch * kv_heads


def _reach(arr):
    return sum((n - 1) * abs(s) for n, s in zip(arr.shape, arr.element_strides())) + 1


def _decode_launch(plan, stream, q, k, v, mask, length, out, part_out, part_lse, counts,
                   scale):
    """The call of the split kernel; `plan` as _Plan makes it."""
    qs, ks, vs = q.element_strides(), k.element_strides(), v.element_strides()
    ms = mask.element_strides() if mask is not None else (0, 0)
    plan.split(stream,
               # pointers
               q, k, v, mask, length, out, part_out, part_lse, counts,
               # sizes
               k.shape[1], k.shape[2], plan.split_len,
               # strides
               qs[0], qs[1], ks[0], ks[1], ks[2], vs[0], vs[1], vs[2], ms[0], ms[1],
               # scale
               scale * 1.4426950408889634)


_plans = LaunchCache()


def _as_bytes(mask):
    """A bool mask seen as uint8 (Triton reads bytes; bool pointers are not byte loads)."""
    return CUDAArray(mask.storage, mask.shape, mask.strides, mask.offset, np.uint8)


def _check(q, k, v, mask, length):
    ok = (q.ndim == k.ndim == v.ndim == 4 and q.shape[2] == 1 and q.dtype == k.dtype == v.dtype
          and supports(q.dtype, q.shape[-1]) and k.shape == v.shape
          and k.shape[-1] == q.shape[-1] and k.shape[0] == q.shape[0]
          and q.shape[1] % k.shape[1] == 0
          and all(a.element_strides()[-1] == 1 for a in (q, k, v))
          and (mask is None or mask.shape == (q.shape[0], k.shape[2]))
          and (length is None or (length.size == 1 and length.dtype == np.int64)))
    if not ok:
        raise RuntimeError(f"decode_attention: unsupported operands: query {q.shape}, keys "
                           f"{k.shape}, values {v.shape} of {q.dtype}, mask "
                           f"{None if mask is None else mask.shape}, length "
                           f"{None if length is None else (length.shape, length.dtype)}")


@register("decode_attention", "cuda")
def decode_attention(query, key, value, mask, length, scale):
    """softmax(q K^T * scale, masked) V of a (B, H, 1, D) query against (B, KVH, S, D) keys and
    values (query head h reads key/value head h // (H / KVH)); `mask` (B, S) bool or None;
    `length` an int64 device array of one element (keys at or past it are skipped) or None.
    The result is a new contiguous (B, H, 1, D) array."""
    _check(query, key, value, mask, length)
    device = query.device
    activate(device)
    stream = current_stream_handle(device)
    out = CUDAArray.empty(query.shape, query.dtype, device, stream)
    if not out.size:
        return out
    mask = _as_bytes(mask) if mask is not None else None
    key_ = (query.shape, query.strides, key.shape, key.strides, value.strides, query.dtype,
            None if mask is None else mask.strides, length is None,
            tuple(a.ptr % 16 == 0 for a in (query, key, value)), device)
    plan = _plans.get_or_build(key_, lambda: _Plan(query, key, value, mask, length))
    part_out = part_lse = counts = None
    if plan.splits > 1:
        rows = query.shape[0] * query.shape[1]
        part_out = CUDAArray.empty((rows, plan.splits, query.shape[-1]), np.float32, device,
                                   stream)
        part_lse = CUDAArray.empty((rows, plan.splits), np.float32, device, stream)
        counts = split_counters(device, stream, plan.planes)
    _decode_launch(plan, stream, query, key, value, mask, length, out, part_out, part_lse,
                   counts, float(scale))
    return out


def _write_launch(launch, stream, key_cache, value_cache, key, value, position):
    """The call of _kv_cache_write_kernel."""
    strides = [a.element_strides()[:3] for a in (key_cache, value_cache, key, value)]
    launch(stream,
           # pointers
           key_cache, value_cache, key, value, position,
           # sizes
           key.shape[1], key.shape[2],
           # strides
           *strides[0], *strides[1], *strides[2], *strides[3])


def _write_plan(key_cache, key, target=None):
    batch, kv_heads, tokens, head = key.shape
    ity = "i64" if _reach(key_cache) >= 2 ** 31 else "i32"
    return Launch(_kv_cache_write_kernel, (batch * kv_heads * tokens,),
                  dict(HEAD=head, BD=next_pow2(head)), WRITE_WARPS, int_type=ity,
                  per_call=("position_ptr",), device=key.device, target=target)


@register("kv_cache_write", "cuda")
def kv_cache_write(key_cache, value_cache, key, value, position):
    """key_cache[:, :, p:p+T] = key and value_cache[:, :, p:p+T] = value in place, for (B, KVH,
    T, D) keys and values and p the int64 at `position` (on the device; the caller keeps
    p + T within the cache)."""
    if not (key_cache.ndim == 4 and key.shape == value.shape and key_cache.shape == value_cache.shape
            and key.shape[:2] == key_cache.shape[:2] and key.shape[3] == key_cache.shape[3]
            and key.dtype == key_cache.dtype == value.dtype == value_cache.dtype
            and all(a.element_strides()[-1] == 1 for a in (key_cache, value_cache, key, value))
            and position.size == 1 and position.dtype == np.int64):
        raise RuntimeError(f"kv_cache_write: unsupported operands: caches {key_cache.shape}, "
                           f"{value_cache.shape} of {key_cache.dtype}, keys/values {key.shape}, "
                           f"{value.shape} of {key.dtype}, position of {position.dtype}")
    device = key.device
    activate(device)
    stream = current_stream_handle(device)
    if key.size:
        key_ = ("write", key.shape, key.strides, value.strides, key_cache.shape,
                key_cache.strides, value_cache.strides, key.dtype,
                tuple(a.ptr % 16 == 0 for a in (key_cache, value_cache, key, value)), device)
        launch = _plans.get_or_build(key_, lambda: _write_plan(key_cache, key))
        _write_launch(launch, stream, key_cache, value_cache, key, value, position)
