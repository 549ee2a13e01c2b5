"""Rotary position embeddings (RoPE), as Llama, Mistral and Qwen use them.

Each pair of channels (i, i + D/2) of a query or key is rotated by the angle
position * inv_freq[i], inv_freq[i] = theta^(-2i/D): attention scores then depend on the
distance between two positions, not on where they are. Llama 3 stretches the low frequencies
for long contexts ("llama3" scaling); "linear" scaling divides every frequency by a factor.
Where the backend has the fused kernel (CUDA), queries and keys rotate in one launch instead of
ten ops, and come out laid out as a (batch, tokens, heads * head_dim) projection.
"""

import math

import numpy as np

from .. import dtypes
from ..autograd.function import Function, records
from ..dispatch import has_kernel, kernel
from ..ops.common import call, wrap
from ..ops.creation import arange, tensor
from ..ops.shape_copies import cat, stack


def rope_parameters(config):
    """{"rope_type", "rope_theta", ...}: transformers 5's `rope_parameters`, or the older
    `rope_theta` and `rope_scaling` settings."""
    params = config.get("rope_parameters")
    if params is None:
        return older_rope_parameters(config.get("rope_scaling"), config.get("rope_theta", 10000.0))
    return standard_rope(params)


def older_rope_parameters(scaling, theta):
    """The parameters of a config's older `rope_scaling` dict (or None) and `rope_theta`."""
    return standard_rope({"rope_theta": theta, **(scaling or {})})


def standard_rope(params):
    """`params` with its `rope_type` named as transformers 5 names it (older configs say
    "type", and "su" for longrope)."""
    kind = params.get("rope_type", params.get("type", "default"))
    return dict(params, rope_type="longrope" if kind == "su" else kind)


def inverse_frequencies(head_dim, params):
    """inv_freq (float32 numpy, head_dim / 2 values) for the scaling `params` describe."""
    exponents = np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    inv_freq = (np.float32(1.0) / np.float32(params["rope_theta"]) ** exponents)
    kind = params["rope_type"]
    if kind == "default":
        return inv_freq.astype(np.float32)
    if kind == "linear":
        return (inv_freq / np.float32(params["factor"])).astype(np.float32)
    if kind == "llama3":
        return _llama3(inv_freq, params)
    raise NotImplementedError(f"rotary embeddings: rope_type {kind!r} is not supported "
                              "(default, linear and llama3 are)")


def _llama3(inv_freq, params):
    """Llama 3's scaling: long wavelengths divided by `factor`, short ones kept, the band
    between them interpolated smoothly."""
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    context = params["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > context / low, inv_freq / factor, inv_freq)
    smooth = (context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < context / high) & ~(wavelen > context / low)
    return np.where(medium, smoothed, scaled).astype(np.float32)


class RotaryEmbedding:
    """cos and sin of position * inv_freq for given positions, in float32, then cast. Positions
    known to lie below a bound (a decoding cache's) are looked up in a table of every position
    up to it, made once per dtype and device with the same ops: one gather a decode step
    instead of six ops."""

    def __init__(self, head_dim, params, device=None):
        self.inv_freq = tensor(inverse_frequencies(head_dim, params), device=device)
        self._tables, self._outgrown = {}, []

    def __call__(self, position_ids, dtype, bound=None):
        """(cos, sin), each (batch, tokens, head_dim), for (batch, tokens) integer positions;
        `bound`, when given, exceeds every one of them."""
        table = None if bound is None else self._table(bound, dtype, position_ids.device)
        if table is None:
            return self._angles(position_ids, dtype)
        device = position_ids.device
        rows = wrap(kernel("index", device.type)(table._data, [position_ids._data]), device,
                    dtype)
        return rows[:, :, 0], rows[:, :, 1]

    def _angles(self, positions, dtype):
        inv_freq = self.inv_freq.to(positions.device)
        freqs = positions.to(dtypes.float32).unsqueeze(-1) * inv_freq
        angles = cat([freqs, freqs], dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def _table(self, bound, dtype, device):
        """(positions, 2, head_dim): cos and sin of positions 0.. (at least `bound` of them), or
        None while a CUDA graph is being captured and the table would have to grow."""
        key = (dtype, str(device))
        table = self._tables.get(key)
        if table is None or table.shape[0] < bound:
            if device.type == "cuda":
                from .. import cuda
                if cuda.is_current_stream_capturing():
                    return None
            if table is not None:  # a captured decode step may still read it: kept alive
                self._outgrown.append(table)
            cos, sin = self._angles(arange(bound, device=device), dtype)
            table = self._tables[key] = stack([cos, sin], 1)
        return table


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the two halves of the last dim."""
    half = x.shape[-1] // 2
    return cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(q, k, cos, sin):
    """Rotate (batch, heads, tokens, head_dim) queries and keys by (batch, tokens, head_dim)
    angles."""
    if fusable(q, k, cos, sin):
        if records(q, k, cos, sin):
            return _Rotary.apply(q, k, cos, sin)
        return _Rotary.compute(q, k, cos, sin, False)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


MAX_FUSED_HEADS = 64
"""The most heads (query or key) the fused kernel rotates in one program."""


def fusable(q, k, cos, sin):
    """The fused kernel computes this: its backend has it, one device and float dtype for q
    and k, (B, H, T, D) operands of an even D with unit last strides, (B, T, D) angles that
    need no gradient."""
    device = q.device
    if not (has_kernel("rotary", device.type) and k.device == device and cos.device == device
            and sin.device == device and q.dtype is k.dtype and q.dtype.is_floating_point
            and not (cos.requires_grad or sin.requires_grad)):
        return False
    q_shape, k_shape = q._data.shape, k._data.shape
    return (len(q_shape) == len(k_shape) == 4
            and cos._data.shape == sin._data.shape == (q_shape[0], q_shape[2], q_shape[3])
            and q_shape[3] % 2 == 0 and q_shape[0] == k_shape[0] and q_shape[2:] == k_shape[2:]
            and max(q_shape[1], k_shape[1]) <= MAX_FUSED_HEADS
            and all(t.stride(-1) == 1 for t in (q, k, cos, sin)))


class _Rotary(Function):
    """Queries and keys rotated by the backend's fused kernel; the gradient rotates back (the
    same kernel with the angles negated)."""

    @staticmethod
    def compute(q, k, cos, sin, inverse):
        """(rotated q, rotated k) from the kernel; rotated back with `inverse`."""
        q_out, k_out = call("rotary", q, k, cos, sin, inverse)
        return wrap(q_out, q.device, q.dtype), wrap(k_out, k.device, k.dtype)

    @staticmethod
    def forward(ctx, q, k, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _Rotary.compute(q, k, cos, sin, False)

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        cos, sin = ctx.saved_tensors
        grad_q, grad_k = (g if g.stride(-1) == 1 else g.contiguous() for g in (grad_q, grad_k))
        return _Rotary.compute(grad_q, grad_k, cos, sin, True) + (None, None)
