"""Attention with torch's semantics: scaled_dot_product_attention, multi_head_attention_forward.

On CUDA, scaled_dot_product_attention runs as fused FlashAttention kernels
(backends/cuda/kernels/attention.py: one launch forward, three backward, no (L, S) scores in
memory; the backward's deterministic two-pass form for half types, head dims over 64 and under
use_deterministic_algorithms(True), else its one-pass form, whose dQ sums with float atomics),
is_causal, a bool or additive attn_mask (read in place, broadcast dims at stride 0) and dropout
(drawn from the CUDA generator by counter, the same flags again in the backward) applied inside
them; grouped-query heads (enable_gqa) are read in place instead of repeated. One query row per
head (decoding against a cache), without gradients and with at most a bool mask over the keys,
runs as the decode kernel (backends/cuda/kernels/decode_attention.py), grouped-query heads read
in place. `cached_attention` is that path with the valid length of a static cache read on the
device. Everything else composes matmul, softmax, where and dropout, differentiable to any
order, with float16 and bfloat16 computed in float32 and rounded once, as torch's math backend.
Which of these runs follows the SDP flags (`genesis.nn.attention.sdpa_kernel`;
sdpa_backends.py).
"""

import math


from ... import dtypes
from ...autograd import autocast_state
from ...autograd.function import Function, name_node, records
from ...autograd.grad_mode import is_grad_enabled
from ...backends.cuda import sdp
from ...backends.cuda.sdp import SDPAParams, SDPBackend
from ...dispatch import has_kernel
from ...ops import creation, linalg, ranges
from ...ops import elementwise as ew
from ...ops import shape_copies
from ...ops.autocast import autocast_policy
from ...ops.common import call, wrap
from ...ops.random import philox_args
from ...settings import are_deterministic_algorithms_enabled
from ..attention.bias import CausalBias, CausalVariant, causal_mask
from . import sdpa_backends
from ._utils import warn
from .activation import softmax
from .dropout import dropout
from .linear import linear
from .padding import pad
from .sdpa_backends import GPU_FUSED_DTYPES


def dropout_counters(planes, q_len, k_len):
    """How many Philox counters the fused kernels' dropout draws: one per eight keys of each
    query row of each plane (backends/cuda/kernels/attention_dropout.py's layout)."""
    return planes * q_len * -(-k_len // 8)


def _repeat_heads(x, groups):
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated `groups` times in a row."""
    *lead, heads, length, dim = x.shape
    expanded = x.unsqueeze(-3).expand(*lead, heads, groups, length, dim)
    return expanded.reshape(*lead, heads * groups, length, dim)


def _attention_weights(scores, attn_mask, is_causal):
    """Softmax over the keys with the masks applied (causal; bool: True may attend; float:
    added). Rows that may attend to nothing give zeros, as torch's math kernel does."""
    if is_causal:
        causal = causal_mask(scores.shape[-2], scores.shape[-1], scores.device)
        if attn_mask is None:
            return softmax(ew.where(causal, scores, -math.inf), -1)
        scores = ew.where(causal, scores, -math.inf)
        if attn_mask.dtype is dtypes.bool_:
            attn_mask = attn_mask & causal
    if attn_mask is None:
        return softmax(scores, -1)
    if attn_mask.dtype is dtypes.bool_:
        return _safe_softmax(ew.where(attn_mask, scores, -math.inf),
                             ~attn_mask.any(-1, keepdim=True))
    scores = scores + attn_mask
    return _safe_softmax(scores, (scores == -math.inf).all(-1, keepdim=True))


def _safe_softmax(scores, empty):
    """softmax over the keys with zeros in the `empty` rows (every score -inf): their scores
    are replaced before the softmax, so neither the values nor the gradients there are NaN."""
    return ew.where(empty, 0.0, softmax(ew.where(empty, 0.0, scores), -1))


@autocast_policy("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over (..., L, E) queries and (..., S, E) keys.

    A bool `attn_mask` marks the positions that may be attended (True) and a float one is
    added to the scores; `is_causal` applies a lower-triangular mask. A CausalBias
    (genesis.nn.attention.bias) as the mask is its causal mask. Which implementation runs
    follows the SDP flags (sdpa_backends.py).
    """
    if isinstance(attn_mask, CausalBias):
        return _causal_bias_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                      enable_gqa)
    _check_inputs(query, key, value, attn_mask)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if query.numel() == 0 or key.numel() == 0 or value.numel() == 0:
        return _composite(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    decodable = not is_causal and dropout_p == 0.0 and _decodable(query, key, value, attn_mask,
                                                                  enable_gqa)
    params = SDPAParams(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if sdpa_backends.choose(params, fits=True if decodable else None) is SDPBackend.MATH:
        return _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if decodable:
        return _decode(query, key, value, attn_mask, None, scale)
    if query.device.type == "cuda":
        return _flash(query, key, value, attn_mask, dropout_p, is_causal, scale)
    out = _composite(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return name_node(out, "ScaledDotProductFlashAttentionForCpuBackward0") \
        if out.requires_grad else out


def _check_inputs(query, key, value, attn_mask):
    """torch's checks of the shapes and dtypes, whichever backend runs."""
    q_shape, k_shape, v_shape = query._data.shape, key._data.shape, value._data.shape
    if len(q_shape) < 2 or len(k_shape) < 2 or len(v_shape) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {len(q_shape)} key.dim: {len(k_shape)} and "
                           f"value.dim: {len(v_shape)} instead.")
    if q_shape[-1] != k_shape[-1] or k_shape[-2] != v_shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: expected query (..., L, E), key "
                           f"(..., S, E) and value (..., S, Ev), got {list(query.shape)}, "
                           f"{list(key.shape)} and {list(value.shape)}")
    if not query.dtype is key.dtype is value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {dtypes.type_meta_name(query.dtype)} key.dtype: "
                           f"{dtypes.type_meta_name(key.dtype)} and value.dtype: "
                           f"{dtypes.type_meta_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not dtypes.bool_ \
            and attn_mask.dtype is not query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: "
                           f"{dtypes.type_meta_name(attn_mask.dtype)} and  query.dtype: "
                           f"{dtypes.type_meta_name(query.dtype)} instead.")


def _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The math backend: the composite, half types in float32 unless
    allow_fp16_bf16_reduction_math_sdp."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    return _composite(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                      half_in_float=not sdp.fp16_bf16_reduction_math_sdp_allowed())


def _composite(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
               half_in_float=True):
    """Attention by matmul, softmax and dropout, differentiable to any order; float16 and
    bfloat16 computed in float32 and rounded once (`half_in_float`: torch's math backend, and
    the closest of the orders tried to its CPU flash kernel), else rounded after each op. As
    torch's math kernel, each side of the scores' product is scaled by sqrt(scale). It is one
    op to autocast, whose policy cast the inputs where it was called: the ops inside follow
    none."""
    with autocast_state.suspended():
        return _composite_ops(query, key, value, attn_mask, dropout_p, is_causal, scale,
                              enable_gqa, half_in_float and query.dtype in _HALF)


def _composite_ops(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, widen):
    dtype = query.dtype
    if widen:
        query, key, value = query.float(), key.float(), value.float()
        if attn_mask is not None and attn_mask.dtype is not dtypes.bool_:
            attn_mask = attn_mask.float()
    if enable_gqa and query.ndim >= 3:
        key, value = _grouped_heads(key, query.shape[-3]), _grouped_heads(value, query.shape[-3])
    root = math.sqrt(abs(scale))
    scores = linalg.matmul(query * math.copysign(root, scale), key.transpose(-2, -1) * root)
    weights = _attention_weights(scores, attn_mask, is_causal)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = linalg.matmul(weights, value)
    return out.to(dtype) if out.dtype is not dtype else out


def _grouped_heads(x, heads):
    """Key or value heads repeated up to the query's `heads` (grouped-query attention)."""
    if x.shape[-3] == heads:
        return x
    if x.shape[-3] == 0 or heads % x.shape[-3]:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return _repeat_heads(x, heads // x.shape[-3])


def _causal_bias_attention(query, key, value, bias, dropout_p, is_causal, scale, enable_gqa):
    """Attention under a CausalBias: is_causal where its alignment is the top-left one, else
    its materialized lower-right mask."""
    if is_causal:
        raise ValueError("CausalBias should not be used with causal=True")
    if bias.seq_len_q == bias.seq_len_kv or bias.variant == CausalVariant.UPPER_LEFT:
        return scaled_dot_product_attention(query, key, value, None, dropout_p, True, scale,
                                            enable_gqa)
    return scaled_dot_product_attention(query, key, value, bias._materialize(query.device),
                                        dropout_p, False, scale, enable_gqa)


_HALF = (dtypes.float16, dtypes.bfloat16)


def cached_attention(query, key, value, attn_mask=None, valid_length=None, scale=None):
    """softmax(Q K^T * scale + mask) V of (B, H, L, D) queries against a (B, KVH, S, D)
    key/value cache, query head h reading cache head h // (H / KVH).

    One query row on CUDA runs the decode kernel, which skips the keys at and past
    `valid_length` (an int64 tensor of one element, read on the device: no host sync). Every
    other path is scaled_dot_product_attention with enable_gqa, where a given bool `attn_mask`
    must hide those keys too; without one, the mask is made from `valid_length`.
    """
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if _decodable(query, key, value, attn_mask, True):
        return _decode(query, key, value, attn_mask, valid_length, scale)
    if attn_mask is None and valid_length is not None:
        attn_mask = ranges.arange(key.shape[2], device=key.device) < valid_length
    return scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, scale=scale,
                                        enable_gqa=True)


def _decodable(query, key, value, attn_mask, enable_gqa):
    """The decode kernel computes this: CUDA, no gradient, (B, H, 1, D) queries against
    (B, KVH, S, D) keys and values of one dtype with H a multiple of KVH (KVH == H without
    enable_gqa), head dim 16..128, a bool mask that varies at most over batch and keys."""
    device = query.device
    if device.type != "cuda" or key.device != device or value.device != device:
        return False
    if _needs_grad(query, key, value):
        return False
    if not (query.ndim == key.ndim == value.ndim == 4 and query.shape[2] == 1
            and query.dtype in GPU_FUSED_DTYPES and key.dtype is query.dtype
            and value.dtype is query.dtype and key.shape == value.shape
            and key.shape[0] == query.shape[0] and key.shape[-1] == query.shape[-1]
            and 16 <= query.shape[-1] <= 128 and key.shape[2] > 0 and query.numel() > 0):
        return False
    heads, kv_heads = query.shape[1], key.shape[1]
    if not (heads == kv_heads or (enable_gqa and heads % kv_heads == 0)):
        return False
    return (_key_mask(attn_mask, query.shape[0], key.shape[2]) is not False
            and has_kernel("decode_attention", device.type))


def _key_mask(attn_mask, batch, keys):
    """A bool `attn_mask` broadcastable to (batch, 1, 1, keys) as a (batch, keys) view; None
    for no mask; False for a mask the decode kernel cannot read."""
    if attn_mask is None:
        return None
    shape = (1,) * (4 - attn_mask.ndim) + tuple(attn_mask.shape)
    if attn_mask.dtype is not dtypes.bool_ or attn_mask.ndim > 4 or shape[1:3] != (1, 1) \
            or shape[0] not in (1, batch) or shape[3] != keys:
        return False
    return attn_mask.reshape(shape).expand(batch, 1, 1, keys)[:, 0, 0, :]


def _decode(query, key, value, attn_mask, valid_length, scale):
    mask = _key_mask(attn_mask, query.shape[0], key.shape[2])
    out = call("decode_attention", _unit_last_stride(query), _unit_last_stride(key),
               _unit_last_stride(value), mask, valid_length, scale, device=query.device)
    return wrap(out, query.device)


def _needs_grad(*tensors):
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


def _flash(query, key, value, attn_mask, dropout_p, is_causal, scale):
    query, key, value = (_unit_last_stride(t) for t in (query, key, value))
    scores_shape = (*query.shape[:-1], key.shape[-2])
    if attn_mask is not None:
        attn_mask = attn_mask.expand(*scores_shape)
    dropout = None
    if dropout_p > 0.0:
        planes = math.prod(query.shape[:-2])
        draw = philox_args(query.device, None, dropout_counters(planes, *scores_shape[-2:]))
        dropout = (float(dropout_p), *draw)
    if records(query, key, value):
        return _FlashAttention.apply(query, key, value, attn_mask, dropout, is_causal, scale)
    return _FlashAttention.compute(query, key, value, attn_mask, dropout, is_causal, scale,
                                   False)[0]


def fused_masked_attention(query, key, value, attn_mask, scale, enable_gqa):
    """softmax(Q K^T * scale where attn_mask) V through the fused kernels when they take the
    call by the memory-efficient backend's rules, whatever the SDP flags, else None:
    flex_attention's route for a mask_mod alone."""
    if query.device.type != "cuda":
        return None
    params = SDPAParams(query, key, value, attn_mask, 0.0, False, enable_gqa)
    if not sdpa_backends.fused_fits(params, SDPBackend.EFFICIENT_ATTENTION):
        return None
    return _flash(query, key, value, attn_mask, 0.0, False, scale)


def _unit_last_stride(t):
    """`t` itself when its last dim is read with unit stride (the kernels take any other
    strides), else a contiguous copy."""
    return t if t.stride(-1) == 1 else t.contiguous()


class _FlashAttention(Function):
    """dropout(softmax(Q K^T * scale + mask, causal)) V through the backend's fused kernels,
    the mask (bool or additive, broadcast to the scores' shape; or None) taking no gradient,
    dropout None or (p, seed, offset) of the generator's draw. The forward saves the row
    logsumexp (and, for half types, its output in float32) so the backward rebuilds the
    probabilities without storing them; when the backward itself is differentiated
    (create_graph), the gradients are recomputed with genesis ops so every order is exact."""

    @staticmethod
    def compute(query, key, value, attn_mask, dropout, is_causal, scale, keep):
        """(the output, the row logsumexp, with `keep` the output in float32 for half types
        else None) from the kernel; the last two are arrays."""
        mask = None if attn_mask is None else attn_mask._data
        out, lse, out_f = call("flash_attention", query, key, value, mask, dropout, is_causal,
                               scale, keep, device=query.device)
        return wrap(out, query.device), lse, out_f

    @staticmethod
    def forward(ctx, query, key, value, attn_mask, dropout, is_causal, scale):
        out, lse, out_f = _FlashAttention.compute(query, key, value, attn_mask, dropout,
                                                  is_causal, scale,
                                                  any(ctx.needs_input_grad[:3]))
        ctx.is_causal, ctx.scale, ctx.attn_mask, ctx.dropout = is_causal, scale, attn_mask, dropout
        kept = out if out_f is None else wrap(out_f, query.device)
        ctx.save_for_backward(query, key, value, kept, wrap(lse, query.device))
        return out

    @staticmethod
    def backward(ctx, grad):
        query, key, value, out, lse = ctx.saved_tensors
        mask = ctx.attn_mask
        if is_grad_enabled():
            grads = _attention_grads(grad, query, key, value, mask, ctx.dropout, ctx.is_causal,
                                     ctx.scale)
        else:
            grads = call("flash_attention_backward", _unit_last_stride(grad), query, key, value,
                         out, None if mask is None else mask._data, ctx.dropout, lse,
                         ctx.is_causal, ctx.scale, are_deterministic_algorithms_enabled(),
                         device=query.device)
            grads = [wrap(g, query.device) for g in grads]
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad[:3])) \
            + (None, None, None, None)


def _attention_grads(grad, query, key, value, attn_mask, dropout, is_causal, scale):
    """(dQ, dK, dV) of dropout(softmax(Q K^T * scale + mask)) V with genesis ops
    (differentiable again), dropout by the flags the kernels drew; keys and values with fewer
    heads than the query are repeated, their gradients summed back."""
    groups = query.shape[-3] // key.shape[-3] if query.ndim >= 3 else 1
    if groups > 1:
        key, value = _repeat_heads(key, groups), _repeat_heads(value, groups)
    weights = _attention_weights(linalg.matmul(query * scale, key.transpose(-2, -1)), attn_mask,
                                 is_causal)
    kept = 1.0
    if dropout is not None:
        p, seed, offset = dropout
        flags = call("attention_dropout_mask", tuple(weights.shape), p, seed, offset,
                     query.device.index, device=query.device)
        kept = wrap(flags, query.device).to(weights.dtype) * (1.0 / (1.0 - p))
    d_value = linalg.matmul((weights * kept).transpose(-2, -1), grad)
    d_weights = linalg.matmul(grad, value.transpose(-2, -1)) * kept
    d_scores = weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True)) * scale
    d_key = linalg.matmul(d_scores.transpose(-2, -1), query)
    if groups > 1:
        d_key, d_value = _sum_heads(d_key, groups), _sum_heads(d_value, groups)
    return linalg.matmul(d_scores, key), d_key, d_value


def _sum_heads(x, groups):
    """(..., H * groups, S, E) -> (..., H, S, E), each run of `groups` heads summed: the
    gradient of _repeat_heads."""
    *lead, heads, length, dim = x.shape
    return x.reshape(*lead, heads // groups, groups, length, dim).sum(-3)


def _canonical_mask(mask, name, target_dtype, other=None, other_name=""):
    """A bool mask (True = blocked) as an additive float mask; float masks pass through. As
    torch, it warns when the `other` mask given beside it has another dtype."""
    if mask is None:
        return None
    if other is not None and other.dtype != mask.dtype:
        warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
             f"type for both instead.")
    if mask.dtype is dtypes.bool_:
        zeros = creation.zeros(mask.shape, dtype=target_dtype, device=mask.device)
        return zeros.masked_fill(mask, -math.inf)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _project(query, key, value, in_proj_weight, in_proj_bias, separate):
    """The input projections: one packed matmul for self-attention, else one per input."""
    if separate is None and query is key and key is value:
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    if separate is not None:
        _check_separate_weights(query, key, value, separate)
    weights = separate if separate is not None else in_proj_weight.chunk(3)
    biases = in_proj_bias.chunk(3) if in_proj_bias is not None else (None,) * 3
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _check_attn_mask(attn_mask, shape):
    """The (N * heads, L, S) mask, refused in torch's words unless 2-D (L, S) or 3-D `shape`."""
    if attn_mask.ndim not in (2, 3):
        raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    correct = shape[-attn_mask.ndim:]
    if tuple(attn_mask.shape) != correct:
        raise RuntimeError(f"The shape of the {attn_mask.ndim}D attn_mask is {attn_mask.shape}, "
                           f"but should be {correct}.")
    return attn_mask if attn_mask.ndim == 3 else attn_mask.unsqueeze(0)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's AssertionErrors for inputs and masks of ranks that do not go together: key and
    value of the query's rank, the masks of the ranks a batched or unbatched query takes."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    kind = "batched (3-D)" if query.ndim == 3 else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                             f"{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             f"respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{query.ndim - 1}-D but found {key_padding_mask.ndim}-D tensor "
                             f"instead")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                             f"but found {attn_mask.ndim}-D tensor instead")
    expected = (num_heads, query.shape[0], key.shape[0])
    if query.ndim == 2 and attn_mask is not None and attn_mask.ndim == 3 and \
            tuple(attn_mask.shape) != expected:
        raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                             f"{attn_mask.shape}")


def _check_key_value(key, value, separate):
    """torch's AssertionError for a key and value whose shapes do not match (only their sequence
    and batch dims with separate projections)."""
    if separate is None and key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if separate is not None and key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                             f"value's {value.shape[:2]}")


def _check_separate_weights(query, key, value, separate):
    """torch's AssertionError for a separate projection weight not (E, that input's last dim)."""
    for name, x, weight in zip(("query", "key", "value"), (query, key, value), separate):
        expected = (query.shape[-1], x.shape[-1])
        if tuple(weight.shape) != expected:
            raise AssertionError(f"expecting {name} weights shape of {expected}, but got "
                                 f"{weight.shape}")


def _append_keys(k, v, extra_k, extra_v, attn_mask, key_padding_mask):
    """Keys/values with one more position appended, and the masks padded to match."""
    k, v = shape_copies.cat([k, extra_k]), shape_copies.cat([v, extra_v])
    if attn_mask is not None:
        attn_mask = pad(attn_mask, (0, 1))
    if key_padding_mask is not None:
        key_padding_mask = pad(key_padding_mask, (0, 1))
    return k, v, attn_mask, key_padding_mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention over sequence-first (L, N, E) inputs, as torch's function."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not "
                                  "supported")
    _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype,
                                       attn_mask, "attn_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = False
    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    _check_key_value(key, value, separate)
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, (bsz * num_heads, tgt_len, key.shape[0]))
    if bias_k is not None and bias_v is not None:
        k, v, attn_mask, key_padding_mask = _append_keys(
            k, v, bias_k.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim),
            bias_v.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim), attn_mask,
            key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=q.dtype, device=q.device)
        k, v, attn_mask, key_padding_mask = _append_keys(
            k.transpose(0, 1), v.transpose(0, 1), zeros.transpose(0, 1), zeros.transpose(0, 1),
            attn_mask, key_padding_mask)
        k, v = k.transpose(0, 1), v.transpose(0, 1)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        for dim, size in enumerate((bsz, src_len)):
            if key_padding_mask.shape[dim] != size:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {size}, but "
                                     f"got {key_padding_mask.shape[dim]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = linalg.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = linalg.matmul(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 \
                else attn_mask.reshape(bsz, num_heads, -1, src_len)
        q, k, v = (x.reshape(bsz, num_heads, x.shape[1], head_dim) for x in (q, k, v))
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        weights = None
    out = linear(out, out_proj_weight, out_proj_bias)  # may map to another width (CLIP's pool)
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    return (out if batched else out.squeeze(1)), weights
