"""The attention masks of a causal language model over a key/value cache.

Query t of this step sits at cache position `start + t` and may see keys at positions up to its
own, except the padding that `attention_mask` (1 for tokens, 0 for left padding) marks. Where
nothing is padded, the mask is left out: a prompt from an empty cache is plainly causal (the
fused attention kernel's case) and a single decoded token sees every cached key. A decode step
of a cache that counts its positions on the device (StaticCache.start_decoding) takes the
cache's device mask and valid length instead: nothing about it is computed on the host.
"""

import math

from .. import dtypes
from ..type_info import finfo
from ..nn import functional as F
from ..nn.functional.attention import cached_attention
from ..ops.elementwise import where
from ..ops.ranges import arange


def causal_mask(attention_mask, start, tokens, device, window=None):
    """(attn_mask, is_causal, valid length) for the attention of a step: a bool (batch, 1,
    tokens, start + tokens) mask, or None with is_causal for unpadded steps; the valid length
    is None (every key given is valid). With a sliding `window`, a query sees only the keys
    less than `window` positions before it."""
    end = start + tokens
    windowed = window is not None and end > window
    if attention_mask is None and not windowed and (start == 0 or tokens == 1):
        return None, start == 0 and tokens > 1, None
    keys = arange(end, device=device).unsqueeze(0)
    queries = arange(start, end, device=device).unsqueeze(1)
    visible = keys <= queries
    if windowed:
        visible = visible & (keys > queries - window)
    visible = visible.unsqueeze(0).unsqueeze(0)
    if attention_mask is None:
        return visible, False, None
    return visible & attention_mask[:, :end].bool().unsqueeze(1).unsqueeze(1), False, None


def position_ids(attention_mask):
    """Positions counted over the real tokens only (left padding gets position 1, unused)."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.masked_fill(attention_mask == 0, 1)


def step_inputs(input_ids, attention_mask, position_ids, cache, windows=(None,)):
    """(position ids, {window: (attn_mask, is_causal, valid length)}) of a forward step over
    `input_ids` that follows the `cache`'s positions, with a mask for each sliding window in
    `windows` (None: no window). Positions count up from the cache's length by default; a
    decoding cache's steps give their position ids."""
    B, T = input_ids.shape
    if cache is not None and cache.decoding:
        if position_ids is None:
            raise ValueError("a decode step over a device-counted cache needs its position_ids")
        return position_ids, {w: _decode_mask(cache, w) for w in windows}
    start = cache.length if cache is not None else 0
    if position_ids is None:
        position_ids = arange(start, start + T, device=input_ids.device).expand(B, T)
    return position_ids, {w: causal_mask(attention_mask, start, T, input_ids.device, w)
                          for w in windows}


def _decode_mask(cache, window):
    mask, length = cache.decode_mask(window)
    return mask, False, length


def attend(query, key, value, mask, scale=None, softcap=None):
    """Attention of a step's (batch, heads, tokens, head_dim) queries over the keys and values
    its cache gave (fewer key/value heads than query heads: grouped-query attention), under
    the step's (attn_mask, is_causal, valid length); scores capped at +-`softcap` where it is
    given (capped_attention)."""
    if softcap is not None:
        return capped_attention(query, key, value, mask, scale, softcap)
    attn_mask, is_causal, length = mask
    if is_causal:
        return F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scale,
                                              enable_gqa=True)
    return cached_attention(query, key, value, attn_mask, length, scale)


def capped_attention(query, key, value, mask, scale, softcap):
    """attend with the scores capped by softcap * tanh(scores / softcap) (Gemma 2's
    attn_logit_softcapping), composed of matmuls, which the fused kernels are not. As
    transformers computes it: the scores in the queries' dtype, hidden keys at the dtype's
    least value (so a row with every key hidden, a padding query's, gets finite uniform
    weights rather than NaN), the softmax in float32 rounded back. Each key/value head's
    group of query heads runs as one matrix, so the cache is not repeated per head."""
    attn_mask, is_causal, length = mask
    batch, heads, tokens, head_dim = query.shape
    kv_heads, keys = key.shape[1], key.shape[2]
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    grouped = query.reshape(batch, kv_heads, heads // kv_heads * tokens, head_dim)
    scores = (grouped @ key.transpose(-1, -2)) * scale
    scores = ((scores / softcap).tanh() * softcap).view(batch, heads, tokens, keys)
    visible = _visible(attn_mask, is_causal, length, tokens, keys, query.device)
    if visible is not None:
        scores = where(visible, scores, finfo(scores.dtype).min)
    probs = F.softmax(scores, dim=-1, dtype=dtypes.float32).to(query.dtype)
    out = probs.view(batch, kv_heads, heads // kv_heads * tokens, keys) @ value
    return out.view(batch, heads, tokens, head_dim)


def _visible(attn_mask, is_causal, length, tokens, keys, device):
    """Which keys each query sees, as a bool tensor broadcasting to the scores, or None for
    all: the step's mask, else the causal one, else the keys below the valid length."""
    if attn_mask is not None:
        return attn_mask
    if is_causal:
        return arange(keys, device=device) <= arange(tokens, device=device).unsqueeze(1)
    if length is not None:
        return arange(keys, device=device) < length
    return None
