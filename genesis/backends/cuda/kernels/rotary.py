"""Rotary position embeddings of queries and keys in one launch, on the GPU.

("rotary": queries (B, H, T, D) and keys (B, KVH, T, D), any strides with a unit last one,
cos and sin (B, T, D).) Each channel pair (i, i + D/2) of a head is rotated:
    out[i]       = x[i] * cos[i]       - x[i + D/2] * sin[i]
    out[i + D/2] = x[i + D/2] * cos[i + D/2] + x[i] * sin[i + D/2]
which is x * cos + rotate_half(x) * sin, as Llama computes it in five ops per tensor. With
`inverse` the angles are negated (sin's sign flipped): the backward of the rotation. One program
rotates every query and key head of one token, loading its cos and sin once; half types compute
in float32 and round once.

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
    _rotate(q_ptr, q_out_ptr, b, t, heads, q_batch_stride, q_head_stride, q_row_stride,
            qo_batch_stride, qo_head_stride, qo_row_stride, c1, c2, s1, s2, HALF, BQ, BHALF)
    _rotate(k_ptr, k_out_ptr, b, t, kv_heads, k_batch_stride, k_head_stride, k_row_stride,
            ko_batch_stride, ko_head_stride, ko_row_stride, c1, c2, s1, s2, HALF, BK, BHALF)


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


def _rotary_launch(launch, stream, q, k, cos, sin, q_out, k_out):
    """The call of _rotary_kernel."""
    qs, ks, qos, kos = (a.element_strides()[:3] for a in (q, k, q_out, k_out))
    cs, ss = cos.element_strides()[:2], sin.element_strides()[:2]
    launch(stream,
           # pointers
           q, k, cos, sin, q_out, k_out,
           # sizes
           q.shape[2], q.shape[1], k.shape[1],
           # strides
           *qs, *ks, *qos, *kos, *cs, *ss)


_plans = LaunchCache()


@register("rotary", "cuda")
def rotary(q, k, cos, sin, inverse):
    """(rotated q, rotated k), new arrays laid out (B, T, heads, D); see the module
    docstring."""
    if not supports(q, k, cos, sin) or not q.dtype == k.dtype:
        raise RuntimeError(f"rotary: unsupported operands {q.shape}, {k.shape}, cos "
                           f"{cos.shape}, sin {sin.shape}")
    device = q.device
    activate(device)
    stream = current_stream_handle(device)
    q_out, k_out = _token_major(q, stream), _token_major(k, stream)
    if q.size and k.size:
        key = (q.shape, q.strides, k.shape, k.strides, cos.strides, sin.strides, q.dtype,
               cos.dtype, sin.dtype, bool(inverse),
               tuple(a.ptr % 16 == 0 for a in (q, k, cos, sin)), device)
        launch = _plans.get_or_build(key, lambda: _plan(q, k, bool(inverse)))
        _rotary_launch(launch, stream, q, k, cos, sin, q_out, k_out)
    return q_out, k_out
