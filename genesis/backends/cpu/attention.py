"""Attention kernels on the CPU: the contract of the CUDA backend's fused attention, in numpy.

"flash_attention" returns the output and the row logsumexp of the scaled scores, and
"flash_attention_backward" the three input gradients from them, as the GPU's FlashAttention
kernels do (kernels/attention.py); for half types the forward can also keep its output in
float32, from which the backward takes rowsum(dO * O) as attention computed in float32 does.
Half types compute in float32 and round once; the logsumexp is float32 (float64 for float64
inputs, so gradient checks stay exact). Dropout drops the probabilities the CUDA kernels drop,
by the same Philox draw (philox.py). The CPU takes the composed ops in
scaled_dot_product_attention (nothing to gain from fusing here: numpy materializes the scores
either way); these kernels define the contract, test it, and run the fused autograd Function
on the CPU in tests.
"""

import numpy as np

from ...dispatch import register
from .philox import attention_dropout_keep


def _compute(*arrays):
    """The arrays in the compute dtype: float64 stays, everything else goes to float32."""
    ct = np.float64 if arrays[0].dtype == np.float64 else np.float32
    return [a.astype(ct, copy=False) for a in arrays]


def _groups(q, k):
    """How many query heads share each key/value head (grouped-query attention)."""
    return q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1


def _repeated(x, groups):
    """Key or value heads repeated for the query heads that share them."""
    return x if groups == 1 else np.repeat(x, groups, axis=-3)


def _summed(x, groups):
    """The gradient of _repeated: each run of `groups` heads summed."""
    if groups == 1:
        return x
    return x.reshape(*x.shape[:-3], x.shape[-3] // groups, groups, *x.shape[-2:]).sum(-3)


def _scores(q, k, attn_mask, is_causal, scale):
    """Q K^T * scale under the mask (bool: -inf where False; else added) with keys past the
    diagonal at -inf when causal (top-left aligned)."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if attn_mask is not None and attn_mask.dtype == np.bool_:
        s = np.where(attn_mask, s, -np.inf)
    elif attn_mask is not None:
        s = s + attn_mask.astype(s.dtype)
    if is_causal:
        s = np.where(np.tri(s.shape[-2], s.shape[-1], dtype=bool), s, -np.inf)
    return s


def _kept(dropout, shape):
    """dropout's factor of each probability (None without dropout): 1 / (1 - p) where the
    flags the GPU kernels draw keep it (backends/cpu/philox.py), else 0."""
    if dropout is None:
        return None
    return attention_dropout_mask(shape, *dropout, None) * (1.0 / (1.0 - dropout[0]))


def _dropped(x, kept):
    """`x` times dropout's factors (`x` itself without dropout), in x's dtype."""
    return x if kept is None else x * kept.astype(x.dtype)


@register("attention_dropout_mask", "cpu")
def attention_dropout_mask(shape, dropout_p, seed, offset, device_index):
    """The (..., L, S) bool flags fused attention's dropout keeps for the draw (p, seed,
    offset), as the CUDA kernels draw them."""
    *lead, rows, keys = shape
    planes = int(np.prod(lead, dtype=np.int64))
    return attention_dropout_keep(seed, offset, planes, rows, keys, dropout_p).reshape(shape)


@register("flash_attention", "cpu")
def flash_attention(query, key, value, attn_mask, dropout, is_causal, scale, keep_float):
    """(softmax(Q K^T * scale + mask, causal) V, row logsumexp of the scaled scores, the output
    in float32 for half types when `keep_float` (for the backward's rowsum(dO * O)), else
    None). A row no key may reach gets zeros and a logsumexp of +inf. `dropout`: None or
    (p, seed, offset), the probabilities the CUDA kernels drop dropped. Key and value may
    have fewer heads than the query (grouped-query attention)."""
    q, k, v = _compute(query, key, value)
    k, v = _repeated(k, _groups(q, k)), _repeated(v, _groups(q, k))
    with np.errstate(all="ignore"):
        s = _scores(q, k, attn_mask, is_causal, scale)
        m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
        lse = m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True))
        lse = np.where(m == -np.inf, np.inf, lse)
        out = np.matmul(_dropped(np.exp(s - lse), _kept(dropout, s.shape)), v)
    keep_float = keep_float and out.dtype != query.dtype
    return out.astype(query.dtype), lse[..., 0], out if keep_float else None


@register("flash_attention_backward", "cpu")
def flash_attention_backward(grad, query, key, value, out, attn_mask, dropout, lse, is_causal,
                             scale, deterministic):
    """(dQ, dK, dV) from the output gradient and flash_attention's logsumexp and output (the
    float32 one where it kept it); deterministic either way."""
    g, q, k, v, o = _compute(grad, query, key, value, out)
    groups = _groups(q, k)
    k, v = _repeated(k, groups), _repeated(v, groups)
    with np.errstate(all="ignore"):
        p = np.exp(_scores(q, k, attn_mask, is_causal, scale) - lse[..., None])
        kept = _kept(dropout, p.shape)
        dv = np.matmul(np.swapaxes(_dropped(p, kept), -1, -2), g)
        dp = _dropped(np.matmul(g, np.swapaxes(v, -1, -2)), kept)
        ds = p * (dp - np.sum(g * o, axis=-1, keepdims=True))
        dq = np.matmul(ds, k) * scale
        dk = np.matmul(np.swapaxes(ds, -1, -2), q) * scale
    dk, dv = _summed(dk, groups), _summed(dv, groups)
    return dq.astype(query.dtype), dk.astype(key.dtype), dv.astype(value.dtype)


@register("kv_cache_write", "cpu")
def kv_cache_write(key_cache, value_cache, key, value, position):
    """key_cache[:, :, p:p+T] = key and value_cache[:, :, p:p+T] = value in place, p the int64
    in `position` (the CUDA kernel's contract: a static cache written at a device position)."""
    start = int(position.reshape(-1)[0])
    end = start + key.shape[2]
    key_cache[:, :, start:end] = key
    value_cache[:, :, start:end] = value
