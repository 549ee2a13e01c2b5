"""A static key/value cache: per layer, keys and values of every position generated so far,
in buffers allocated once for the whole generation (prompt plus new tokens), so decoding a
token allocates nothing and writes one slot per layer."""

from ..ops.creation import zeros


class StaticCache:
    """Keys and values of `max_length` positions for each of `num_layers` layers."""

    def __init__(self, num_layers, batch_size, num_kv_heads, max_length, head_dim, dtype,
                 device):
        shape = (batch_size, num_kv_heads, max_length, head_dim)
        self.keys = [zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.max_length = max_length
        self.length = 0

    def update(self, layer, key, value):
        """Write this step's (batch, kv heads, tokens, head_dim) keys and values after the
        cached ones; returns every position's keys and values so far."""
        start, end = self.length, self.length + key.shape[2]
        if end > self.max_length:
            raise RuntimeError(f"StaticCache: {end} positions do not fit the cache's "
                               f"{self.max_length}")
        self.keys[layer][:, :, start:end] = key
        self.values[layer][:, :, start:end] = value
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def advance(self, tokens):
        """Count `tokens` more cached positions (after every layer has written them)."""
        self.length += tokens
