"""The attention masks of a causal language model over a key/value cache.

Query t of this step sits at cache position `start + t` and may see keys at positions up to its
own, except the padding that `attention_mask` (1 for tokens, 0 for left padding) marks. Where
nothing is padded, the mask is left out: a prompt from an empty cache is plainly causal (the
fused attention kernel's case) and a single decoded token sees every cached key.
"""

from ..ops.creation import arange


def causal_mask(attention_mask, start, tokens, device):
    """(attn_mask, is_causal) for `scaled_dot_product_attention`: a bool (batch, 1, tokens,
    start + tokens) mask, or None with is_causal for unpadded steps."""
    if attention_mask is None:
        return None, start == 0 and tokens > 1
    end = start + tokens
    keys = arange(end, device=device)
    queries = arange(start, end, device=device)
    visible = keys.unsqueeze(0) <= queries.unsqueeze(1)
    padding = attention_mask[:, :end].bool()
    return visible.unsqueeze(0).unsqueeze(0) & padding.unsqueeze(1).unsqueeze(1), False


def position_ids(attention_mask):
    """Positions counted over the real tokens only (left padding gets position 1, unused)."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.masked_fill(attention_mask == 0, 1)


def step_inputs(input_ids, attention_mask, position_ids, cache):
    """(position ids, (attn_mask, is_causal)) of a forward step over `input_ids` that follows
    the `cache`'s positions (positions count up from the cache's length by default)."""
    B, T = input_ids.shape
    start = cache.length if cache is not None else 0
    if position_ids is None:
        position_ids = arange(start, start + T, device=input_ids.device).expand(B, T)
    return position_ids, causal_mask(attention_mask, start, T, input_ids.device)
