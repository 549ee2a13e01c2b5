"""The attention masks of a causal language model over a key/value cache.

Query t of this step sits at cache position `start + t` and may see keys at positions up to its
own, except the padding that `attention_mask` (1 for tokens, 0 for left padding) marks. Where
nothing is padded, the mask is left out: a prompt from an empty cache is plainly causal (the
fused attention kernel's case) and a single decoded token sees every cached key. A decode step
of a cache that counts its positions on the device (StaticCache.start_decoding) takes the
cache's device mask and valid length instead: nothing about it is computed on the host.
"""

from ..nn import functional as F
from ..nn.functional.attention import cached_attention
from ..ops.creation import arange


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


def attend(query, key, value, mask, scale=None):
    """Attention of a step's (batch, heads, tokens, head_dim) queries over the keys and values
    its cache gave (fewer key/value heads than query heads: grouped-query attention), under
    the step's (attn_mask, is_causal, valid length)."""
    attn_mask, is_causal, length = mask
    if is_causal:
        return F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scale,
                                              enable_gqa=True)
    return cached_attention(query, key, value, attn_mask, length, scale)
