"""Rotary position embeddings of queries and keys in one launch, on the GPU.

("rotary": queries (B, H, T, D) and keys (B, KVH, T, D), any strides with a unit last one,
cos and sin (B, T, D).) Each channel pair (i, i + D/2) of a head is rotated:
    out[i]       = x[i] * cos[i]       - x[i + D/2] * sin[i]
    out[i + D/2] = x[i + D/2] * cos[i + D/2] + x[i] * sin[i + D/2]
which is x * cos + rotate_half(x) * sin, as Llama computes it in five ops per tensor. With
`inverse` the angles are negated (sin's sign flipped): the backward of the rotation. One program
rotates every query and key head of one token, loading its cos and sin once; half types compute
in float32 and round once.

("rotary_cache_write", for a decode step: the same rotation of the queries, while the rotated
keys and the values go straight into a static cache at a slot read from device memory.)

The results are new arrays of the inputs' shapes laid out (B, T, heads, D) in memory: the
layout of a (B, T, H * D) projection, so attention's output, laid out like the queries, goes
back to (B, T, H * D) as a view.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..array_ops import as_strided
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import wait_for_prior_grid
from ._strided_indexing import next_pow2

# A program holds next_pow2(heads) x next_pow2(D/2) elements of each half of a token's queries
# (32 x 32 for Llama-3-shaped heads: 8 float32 registers a thread at 4 warps), and as many of
# its keys; heads beyond 64 a program would spill, and no model has them.
NUM_WARPS = 4
MAX_HEADS = 64


@triton.jit
def _rotate(x_ptr, out_ptr, b, t, heads, x_batch_stride, x_head_stride, x_row_stride,
            out_batch_stride, out_head_stride, out_row_stride, c1, c2, s1, s2,
            HALF: tl.constexpr, BH: tl.constexpr, BHALF: tl.constexpr):
    """The rotated heads of token t of batch row b of one operand."""
    h = tl.arange(0, BH)
    j = tl.arange(0, BHALF)
    ok = (h < heads)[:, None] & (j < HALF)[None, :]
    src = x_ptr + b * x_batch_stride + t * x_row_stride + h[:, None] * x_head_stride + j[None, :]
    x1 = tl.load(src, mask=ok, other=0.0).to(tl.float32)
    x2 = tl.load(src + HALF, mask=ok, other=0.0).to(tl.float32)
    y1 = x1 * c1[None, :] - x2 * s1[None, :]
    y2 = x2 * c2[None, :] + x1 * s2[None, :]
    dst = (out_ptr + b * out_batch_stride + t * out_row_stride + h[:, None] * out_head_stride
           + j[None, :])
    ty = out_ptr.dtype.element_ty
    tl.store(dst, y1.to(ty), mask=ok)
    tl.store(dst + HALF, y2.to(ty), mask=ok)


@triton.jit
def _angles(cos_ptr, sin_ptr, b, t, cos_batch_stride, cos_row_stride, sin_batch_stride,
            sin_row_stride, HALF: tl.constexpr, BHALF: tl.constexpr, INVERSE: tl.constexpr):
    """(c1, c2, s1, s2): token t's cos and sin over each half of the head, in float32 (negated
    angles when INVERSE)."""
    j = tl.arange(0, BHALF)
    ok = j < HALF
    cp = cos_ptr + b * cos_batch_stride + t * cos_row_stride + j
    sp = sin_ptr + b * sin_batch_stride + t * sin_row_stride + j
    c1 = tl.load(cp, mask=ok, other=0.0).to(tl.float32)
    c2 = tl.load(cp + HALF, mask=ok, other=0.0).to(tl.float32)
    s1 = tl.load(sp, mask=ok, other=0.0).to(tl.float32)
    s2 = tl.load(sp + HALF, mask=ok, other=0.0).to(tl.float32)
    if INVERSE:
        s1, s2 = -s2, -s1
    return c1, c2, s1, s2


@triton.jit
def _rotary_kernel(
        # pointers: queries, keys, cos, sin, the rotated queries and keys
        q_ptr, k_ptr, cos_ptr, sin_ptr, q_out_ptr, k_out_ptr,
        # sizes: tokens, query heads, key heads
        tokens, heads, kv_heads,
        # strides, in elements: (batch, head, token) of q, k and the outputs, (batch, token) of
        # cos and sin
        q_batch_stride, q_head_stride, q_row_stride, k_batch_stride, k_head_stride,
        k_row_stride, qo_batch_stride, qo_head_stride, qo_row_stride, ko_batch_stride,
        ko_head_stride, ko_row_stride, cos_batch_stride, cos_row_stride, sin_batch_stride,
        sin_row_stride,
        # meta-parameters
        HALF: tl.constexpr, BHALF: tl.constexpr, BQ: tl.constexpr, BK: tl.constexpr,
        INVERSE: tl.constexpr):
    """Token pid0 % tokens of batch row pid0 // tokens: every query and key head."""
    pid = tl.program_id(0)
    b = pid // tokens
    t = pid % tokens
    c1, c2, s1, s2 = _angles(cos_ptr, sin_ptr, b, t, cos_batch_stride, cos_row_stride,
                             sin_batch_stride, sin_row_stride, HALF, BHALF, INVERSE)
    _rotate(q_ptr, q_out_ptr, b, t, heads, q_batch_stride, q_head_stride, q_row_stride,
            qo_batch_stride, qo_head_stride, qo_row_stride, c1, c2, s1, s2, HALF, BQ, BHALF)
    _rotate(k_ptr, k_out_ptr, b, t, kv_heads, k_batch_stride, k_head_stride, k_row_stride,
            ko_batch_stride, ko_head_stride, ko_row_stride, c1, c2, s1, s2, HALF, BK, BHALF)


@triton.jit
def _rotary_cache_kernel(
        # pointers: queries, keys, values, cos, sin, the rotated queries, the key and value
        # caches (B, KVH, S, D), the cache slot of the first token (one int64)
        q_ptr, k_ptr, v_ptr, cos_ptr, sin_ptr, q_out_ptr, kc_ptr, vc_ptr, position_ptr,
        # sizes: tokens, query heads, key heads
        tokens, heads, kv_heads,
        # strides, in elements: (batch, head, token) of q, k, v, the rotated queries and the
        # caches, (batch, token) of cos and sin
        q_batch_stride, q_head_stride, q_row_stride, k_batch_stride, k_head_stride,
        k_row_stride, v_batch_stride, v_head_stride, v_row_stride, qo_batch_stride,
        qo_head_stride, qo_row_stride, kc_batch_stride, kc_head_stride, kc_row_stride,
        vc_batch_stride, vc_head_stride, vc_row_stride, cos_batch_stride, cos_row_stride,
        sin_batch_stride, sin_row_stride,
        # meta-parameters
        HALF: tl.constexpr, BHALF: tl.constexpr, BQ: tl.constexpr, BK: tl.constexpr,
        PDL: tl.constexpr):
    """Token pid0 % tokens of batch row pid0 // tokens: its rotated queries, and its rotated
    keys and its values written into the caches at slot position + token."""
    wait_for_prior_grid(PDL)
    pid = tl.program_id(0)
    b = pid // tokens
    t = pid % tokens
    slot = tl.load(position_ptr)
    c1, c2, s1, s2 = _angles(cos_ptr, sin_ptr, b, t, cos_batch_stride, cos_row_stride,
                             sin_batch_stride, sin_row_stride, HALF, BHALF, False)
    _rotate(q_ptr, q_out_ptr, b, t, heads, q_batch_stride, q_head_stride, q_row_stride,
            qo_batch_stride, qo_head_stride, qo_row_stride, c1, c2, s1, s2, HALF, BQ, BHALF)
    _rotate(k_ptr, kc_ptr + slot * kc_row_stride, b, t, kv_heads, k_batch_stride,
            k_head_stride, k_row_stride, kc_batch_stride, kc_head_stride, kc_row_stride, c1, c2,
            s1, s2, HALF, BK, BHALF)
    h = tl.arange(0, BK)
    d = tl.arange(0, 2 * BHALF)
    ok = (h < kv_heads)[:, None] & (d < 2 * HALF)[None, :]
    rows = tl.load(v_ptr + b * v_batch_stride + t * v_row_stride + h[:, None] * v_head_stride
                   + d[None, :], mask=ok)
    tl.store(vc_ptr + b * vc_batch_stride + (slot + t) * vc_row_stride
             + h[:, None] * vc_head_stride + d[None, :], rows, mask=ok)


def supports(q, k, cos, sin):
    """The kernel takes these arrays: (B, H, T, D) and (B, KVH, T, D) of one float dtype with
    an even D and unit last strides, (B, T, D) cos and sin, at most MAX_HEADS heads."""
    return (q.ndim == k.ndim == 4 and cos.ndim == sin.ndim == 3 and q.shape[-1] % 2 == 0
            and q.shape[0] == k.shape[0] and q.shape[2:] == k.shape[2:]
            and cos.shape == sin.shape == (q.shape[0], q.shape[2], q.shape[3])
            and max(q.shape[1], k.shape[1]) <= MAX_HEADS
            and all(a.element_strides()[-1] == 1 or a.shape[-1] == 1
                    for a in (q, k, cos, sin)))


def _token_major(arr, stream):
    """A new array of `arr`'s (B, heads, T, D) shape laid out (B, T, heads, D)."""
    b, h, t, d = arr.shape
    flat = CUDAArray.empty((arr.size,), arr.dtype, arr.device, stream)
    return as_strided(flat, arr.shape, (t * h * d, d, h * d, 1), 0)


def _plan(q, k, inverse, target=None):
    half = q.shape[-1] // 2
    meta = dict(HALF=half, BHALF=next_pow2(half), BQ=next_pow2(q.shape[1]),
                BK=next_pow2(k.shape[1]), INVERSE=inverse)
    return Launch(_rotary_kernel, (q.shape[0] * q.shape[2],), meta, NUM_WARPS,
                  int_type="i64" if max(q.size, k.size) >= 2 ** 31 else "i32",
                  device=q.device, target=target)


def _cache_plan(q, k, target=None):
    half = q.shape[-1] // 2
    meta = dict(HALF=half, BHALF=next_pow2(half), BQ=next_pow2(q.shape[1]),
                BK=next_pow2(k.shape[1]))
    return Launch(_rotary_cache_kernel, (q.shape[0] * q.shape[2],), meta, NUM_WARPS,
                  int_type="i64" if max(q.size, k.size) >= 2 ** 31 else "i32",
                  device=q.device, target=target, pdl=q.shape[0] * q.shape[2] == 1)


def _cache_launch(launch, stream, q, k, v, cos, sin, q_out, key_cache, value_cache, position):
    """The call of _rotary_cache_kernel."""
    strides = [a.element_strides()[:3] for a in (q, k, v, q_out, key_cache, value_cache)]
    launch(stream,
           # pointers
           q, k, v, cos, sin, q_out, key_cache, value_cache, position,
           # sizes
           q.shape[2], q.shape[1], k.shape[1],
           # strides
           *(s for three in strides for s in three), *cos.element_strides()[:2],
           *sin.element_strides()[:2])


def _rotary_dims(q, k, cos, sin, q_out, k_out):
    """The sizes and strides _rotary_launch passes for arrays laid out as these."""
    qs, ks, qos, kos = (a.element_strides()[:3] for a in (q, k, q_out, k_out))
    cs, ss = cos.element_strides()[:2], sin.element_strides()[:2]
    return (q.shape[2], q.shape[1], k.shape[1]), qs + ks + qos + kos + cs + ss


def _rotary_launch(launch, dims, stream, q, k, cos, sin, q_out, k_out):
    """The call of _rotary_kernel; `dims` as _rotary_dims gives them."""
    sizes, strides = dims
    launch(stream,
           # pointers
           q, k, cos, sin, q_out, k_out,
           # sizes
           *sizes,
           # strides
           *strides)


_plans = LaunchCache()


@register("rotary", "cuda")
def rotary(q, k, cos, sin, inverse):
    """(rotated q, rotated k), new arrays laid out (B, T, heads, D); see the module
    docstring."""
    device = q.device
    key = (q.shape, q.strides, k.shape, k.strides, cos.shape, cos.strides, sin.shape,
           sin.strides, q.dtype, k.dtype, cos.dtype, sin.dtype, bool(inverse),
           (q.ptr % 16 == 0, k.ptr % 16 == 0, cos.ptr % 16 == 0, sin.ptr % 16 == 0), device)
    plan = _plans.get(key)  # a new geometry is checked (the key holds all the check reads)
    if plan is None and not (supports(q, k, cos, sin) and q.dtype == k.dtype):
        raise RuntimeError(f"rotary: unsupported operands {q.shape}, {k.shape}, cos "
                           f"{cos.shape}, sin {sin.shape}")
    activate(device)
    stream = current_stream_handle(device)
    q_out, k_out = _token_major(q, stream), _token_major(k, stream)
    if plan is None and q.size and k.size:  # operands of a new geometry
        plan = _plans.get_or_build(key, lambda: (
            _plan(q, k, bool(inverse)), _rotary_dims(q, k, cos, sin, q_out, k_out)))
    if plan is not None:
        _rotary_launch(plan[0], plan[1], stream, q, k, cos, sin, q_out, k_out)
    return q_out, k_out


@register("rotary_cache_write", "cuda")
def rotary_cache_write(q, k, v, cos, sin, key_cache, value_cache, position):
    """The rotated queries (a new array laid out (B, T, heads, D)); the rotated keys and the
    values of this step go into the (B, KVH, S, D) caches at the slot read from `position`
    (one int64 on the device): a decode step's rotary and cache write in one launch."""
    if not (supports(q, k, cos, sin) and q.dtype == k.dtype == v.dtype == key_cache.dtype
            == value_cache.dtype and v.shape == k.shape
            and key_cache.shape[:2] == value_cache.shape[:2] == k.shape[:2]
            and key_cache.shape[3] == value_cache.shape[3] == k.shape[3]
            and v.element_strides()[-1] == 1):
        raise RuntimeError(f"rotary_cache_write: unsupported operands {q.shape}, {k.shape}, "
                           f"{v.shape}, caches {key_cache.shape}, {value_cache.shape}")
    device = q.device
    activate(device)
    stream = current_stream_handle(device)
    q_out = _token_major(q, stream)
    if q.size and k.size:
        arrays = (q, k, v, cos, sin, key_cache, value_cache)
        key = (tuple((a.shape, a.strides, a.dtype, a.ptr % 16 == 0) for a in arrays), device)
        launch = _plans.get_or_build(("cache",) + key, lambda: _cache_plan(q, k))
        _cache_launch(launch, stream, q, k, v, cos, sin, q_out, key_cache, value_cache,
                      position)
    return q_out
