"""A static key/value cache: per layer, keys and values of every position generated so far,
in buffers allocated once for the whole generation (prompt plus new tokens), so decoding a
token allocates no cache memory and writes one slot per layer.

The prompt (prefill) is written where the host says (`length` counts the cached positions).
After `start_decoding`, the count lives on the device (`position`, one int64): each decode step
writes its keys and values at that slot, attends over the whole buffer with a mask computed on
the device, and advances it in place. A decode step then has fixed shapes and reads nothing
back to the host, which is what a CUDA graph needs to capture and replay it.
"""

from .. import dtypes
from ..dispatch import has_kernel, kernel
from ..ops.common import wrap
from ..ops.creation import full, ones, zeros
from ..ops.ranges import arange
from .rotary import apply_rotary
from .rotary import fusable as rotary_fusable


class StaticCache:
    """Keys and values of `max_length` positions for each of `num_layers` layers."""

    def __init__(self, num_layers, batch_size, num_kv_heads, max_length, head_dim, dtype,
                 device):
        shape = (batch_size, num_kv_heads, max_length, head_dim)
        self.keys = [zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.max_length = max_length
        self.length = 0
        self.decoding = self.padded = False
        self.position = None
        self.key_padding = None
        self.key_positions = None

    def reset(self):
        """Empty the cache for a new prompt. The buffers stay where they are (a captured decode
        step keeps reading them); the stale keys and values are never visible, since a step
        attends only to the positions written since."""
        self.length = 0
        self.decoding = False

    def start_decoding(self, attention_mask=None):
        """Keep the count of cached positions on the device from here on. `attention_mask`
        (batch, cached positions), 1 for tokens and 0 for padding, marks the keys no query
        may see. The device buffers are made on the first call and rewritten in place after a
        `reset`."""
        device = self.keys[0].device
        batch = self.keys[0].shape[0]
        if self.position is None:
            self.position = full((1,), self.length, dtype=dtypes.int64, device=device)
            self.key_positions = arange(self.max_length, device=device)
        else:
            self.position.fill_(self.length)
        self.padded = attention_mask is not None
        if self.padded:
            if self.key_padding is None:
                self.key_padding = ones((batch, self.max_length), dtype=dtypes.bool_,
                                        device=device)
            else:
                self.key_padding.fill_(True)
            self.key_padding[:, :self.length] = attention_mask[:, :self.length].bool()
        self.decoding = True

    def decode_mask(self, window=None):
        """(bool attn_mask (batch or 1, 1, 1, max_length) or None, valid length) of a decode
        step, on the device: the keys up to this step's slot, less the padding, and less the
        keys `window` or more positions back when a sliding window is given. Without padding
        or window the valid length alone says which keys are seen."""
        length = self.position + 1
        windowed = window is not None and self.max_length > window
        if not (self.padded or windowed):
            return None, length
        visible = self.key_positions <= self.position
        if windowed:
            visible = visible & (self.key_positions > self.position - window)
        if self.padded:
            visible = self.key_padding & visible
        return visible.view(-1, 1, 1, self.max_length), length

    def update(self, layer, key, value):
        """Write this step's (batch, kv heads, tokens, head_dim) keys and values after the
        cached ones; returns the keys and values attention reads (the written prefix, or the
        whole buffers when decoding)."""
        if self.decoding:
            keys, values = self.keys[layer], self.values[layer]
            kernel("kv_cache_write", key.device.type)(keys._data, values._data, key._data,
                                                      value._data, self.position._data)
            return keys, values
        start, end = self.length, self.length + key.shape[2]
        if end > self.max_length:
            raise RuntimeError(f"StaticCache: {end} positions do not fit the cache's "
                               f"{self.max_length}")
        self.keys[layer][:, :, start:end] = key
        self.values[layer][:, :, start:end] = value
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def rotate_and_update(self, layer, query, key, value, cos, sin):
        """(rotated queries, keys, values attention reads): `update` with the keys rotated by
        `apply_rotary`, as the queries are. A decode step on a backend with the fused kernel
        rotates both and writes the cache in one launch."""
        if self.decoding and has_kernel("rotary_cache_write", key.device.type) \
                and rotary_fusable(query, key, cos, sin) and value.dtype is key.dtype:
            rotated = kernel("rotary_cache_write", key.device.type)(
                query._data, key._data, value._data, cos._data, sin._data,
                self.keys[layer]._data, self.values[layer]._data, self.position._data)
            return wrap(rotated, query.device, query.dtype), self.keys[layer], self.values[layer]
        query, key = apply_rotary(query, key, cos, sin)
        return (query, *self.update(layer, key, value))

    def advance(self, tokens):
        """Count `tokens` more cached positions (after every layer has written them)."""
        if self.decoding:
            self.position.add_(tokens)
        else:
            self.length += tokens


def embedding_rows(embedding, ids, cache):
    """`embedding(ids)`; in a decode step the ids are the model's own samples, looked up
    without nn.Embedding's bounds check (which reads the ids back to the host)."""
    if cache is None or not cache.decoding:
        return embedding(ids)
    weight = embedding.weight
    rows = kernel("index", weight.device.type)(weight._data, [ids._data])
    return wrap(rows, weight.device, weight.dtype)
