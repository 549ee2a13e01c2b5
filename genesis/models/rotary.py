"""Rotary position embeddings (RoPE), as Llama, Mistral, Qwen, Gemma and Phi use them.

Each pair of channels (i, i + D/2) of a query or key is rotated by the angle
position * inv_freq[i], inv_freq[i] = theta^(-2i/D): attention scores then depend on the
distance between two positions, not on where they are. Llama 3 stretches the low frequencies
for long contexts ("llama3" scaling); "linear" scaling divides every frequency by a factor;
LongRoPE (Phi) divides each by its own factor, from a short or a long list, and scales cos and
sin. With `partial_rotary_factor`, only the first channels of each head rotate (D is theirs).
Where the backend has the fused kernel (CUDA), queries and keys rotate in one launch instead of
ten ops, and come out laid out as a (batch, tokens, heads * head_dim) projection.
"""

import math

import numpy as np

from .. import dtypes
from ..autograd.function import Function, records
from ..dispatch import has_kernel, kernel
from ..ops.common import call, wrap
from ..ops.creation import tensor
from ..ops.elementwise import where
from ..ops.ranges import arange
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


def rotary_dim(head_dim, params):
    """The channels of a head that rotate: all, or the first `partial_rotary_factor` of them."""
    return int(head_dim * params.get("partial_rotary_factor", 1.0))


def inverse_frequencies(dim, params, long=False):
    """inv_freq (float32 numpy, dim / 2 values) for the scaling `params` describe; longrope's
    with its long factors where `long`, else its short ones."""
    exponents = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
    powers = np.float32(params["rope_theta"]) ** exponents
    inv_freq = np.float32(1.0) / powers
    kind = params["rope_type"]
    if kind == "default":
        return inv_freq.astype(np.float32)
    if kind == "linear":
        return (inv_freq / np.float32(params["factor"])).astype(np.float32)
    if kind == "llama3":
        return _llama3(inv_freq, params)
    if kind == "longrope":
        factors = np.asarray(params["long_factor" if long else "short_factor"], np.float32)
        return (np.float32(1.0) / (factors * powers)).astype(np.float32)
    raise NotImplementedError(f"rotary embeddings: rope_type {kind!r} is not supported "
                              "(default, linear, llama3 and longrope are)")


def attention_scaling(params):
    """The factor cos and sin are scaled by: longrope's attention_factor (by default
    sqrt(1 + ln(factor) / ln(original context)) for a context stretched `factor` times), else
    1."""
    if params["rope_type"] != "longrope":
        return 1.0
    if params.get("attention_factor") is not None:
        return params["attention_factor"]
    context = params["original_max_position_embeddings"]
    factor = params.get("factor") or params["max_position_embeddings"] / context
    return math.sqrt(1 + math.log(factor) / math.log(context)) if factor > 1.0 else 1.0


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
    instead of six ops. Longrope has two sets of frequencies, its long ones taken, as in
    transformers, once the largest position reaches past the original context: chosen on the
    device, so that a decode step stays free of host reads."""

    def __init__(self, head_dim, params, device=None):
        self.dim = rotary_dim(head_dim, params)
        self.inv_freq = tensor(inverse_frequencies(self.dim, params), device=device)
        self.scaling = attention_scaling(params)
        self.long_freq = self.long_after = None
        if params["rope_type"] == "longrope":
            self.long_freq = tensor(inverse_frequencies(self.dim, params, long=True),
                                    device=device)
            self.long_after = params["original_max_position_embeddings"]
        self._tables, self._outgrown = {}, []

    def __call__(self, position_ids, dtype, bound=None):
        """(cos, sin), each (batch, tokens, rotary dim), for (batch, tokens) integer positions;
        `bound`, when given, exceeds every one of them."""
        table = None if bound is None else self._table(bound, dtype, position_ids.device)
        if table is None:
            return self._select(position_ids, *self._angles(position_ids, dtype))
        device = position_ids.device
        rows = wrap(kernel("index", device.type)(table._data, [position_ids._data]), device,
                    dtype)
        return self._select(position_ids, *rows.unbind(2))

    def _angles(self, positions, dtype):
        """(cos, sin) of `positions` by each set of frequencies, the long ones last."""
        freqs = [self.inv_freq] + ([] if self.long_freq is None else [self.long_freq])
        return [part for inv_freq in freqs for part in self._cos_sin(positions, inv_freq, dtype)]

    def _cos_sin(self, positions, inv_freq, dtype):
        freqs = positions.to(dtypes.float32).unsqueeze(-1) * inv_freq.to(positions.device)
        angles = cat([freqs, freqs], dim=-1)
        cos, sin = angles.cos(), angles.sin()
        if self.scaling != 1.0:
            cos, sin = cos * self.scaling, sin * self.scaling
        return cos.to(dtype), sin.to(dtype)

    def _select(self, positions, cos, sin, long_cos=None, long_sin=None):
        """(cos, sin): the long frequencies' once `positions` reach past the original
        context."""
        if long_cos is None:
            return cos, sin
        long = positions.amax() >= self.long_after
        return where(long, long_cos, cos), where(long, long_sin, sin)

    def _table(self, bound, dtype, device):
        """(positions, 2 or 4, rotary dim): cos and sin of positions 0.. (at least `bound` of
        them) by each set of frequencies, or None while a CUDA graph is being captured and the
        table would have to grow."""
        key = (dtype, str(device))
        table = self._tables.get(key)
        if table is None or table.shape[0] < bound:
            if device.type == "cuda":
                from .. import cuda
                if cuda.is_current_stream_capturing():
                    return None
            if table is not None:  # a captured decode step may still read it: kept alive
                self._outgrown.append(table)
            table = self._tables[key] = stack(self._angles(arange(bound, device=device), dtype),
                                              1)
        return table


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the two halves of the last dim."""
    half = x.shape[-1] // 2
    return cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(q, k, cos, sin):
    """Rotate (batch, heads, tokens, head_dim) queries and keys by (batch, tokens, rotary dim)
    angles: the first rotary-dim channels of each head, the rest passing through."""
    dim = cos.shape[-1]
    if dim < q.shape[-1]:
        q_rot, k_rot = apply_rotary(q[..., :dim], k[..., :dim], cos, sin)
        return cat([q_rot, q[..., dim:]], dim=-1), cat([k_rot, k[..., dim:]], dim=-1)
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
