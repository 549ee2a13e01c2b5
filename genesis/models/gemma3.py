"""Gemma 3 (its text model), as Hugging Face's checkpoints lay it out.

Llama's decoder with these changes:
- token embeddings scaled by sqrt(hidden_size) (the factor rounded to the weights' dtype);
- every RMSNorm scales by (1 + weight), computed in float32 (GemmaRMSNorm);
- each query and key head is RMS-normalised before the rotation, and scores are scaled by
  query_pre_attn_scalar^-1/2 instead of head_dim^-1/2;
- four norms a layer, the attention's and the MLP's outputs normalised before each residual add:
      x = x + post_attention_layernorm(Attention(input_layernorm(x)))
      x = x + post_feedforward_layernorm(MLP(pre_feedforward_layernorm(x)))
- most layers attend within a sliding window and rotate with a local base frequency; every
  sliding_window_pattern-th layer attends globally with the global frequencies (layer_types);
- a tanh-GELU gated MLP, and optionally tanh-capped logits (final_logit_softcapping) and
  attention scores (attn_logit_softcapping; Gemma 3 checkpoints leave it unset, Gemma 2's
  set it, models/gemma2.py).
"""

import math

import numpy as np

from .. import nn
from ..nn import functional as F
from ..ops.creation import zeros
from .attention_mask import step_inputs
from .cache import embedding_rows
from .llama import MLP, Attention, LlamaConfig, LlamaForCausalLM
from .rotary import RotaryEmbedding, older_rope_parameters, standard_rope

SLIDING, FULL = "sliding_attention", "full_attention"


class Gemma3TextConfig(LlamaConfig):
    DEFAULTS = dict(LlamaConfig.DEFAULTS, vocab_size=262208, hidden_size=2304,
                    intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
                    num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh",
                    max_position_embeddings=131072, rms_norm_eps=1e-6, rope_theta=1e6,
                    rope_local_base_freq=10000.0, query_pre_attn_scalar=256,
                    sliding_window=4096, sliding_window_pattern=6, final_logit_softcapping=None,
                    attn_logit_softcapping=None, tie_word_embeddings=True, pad_token_id=0,
                    eos_token_id=1, bos_token_id=2)

    @property
    def qk_norm(self):
        return True

    @property
    def hidden_act(self):
        return self.hidden_activation

    @property
    def layer_kinds(self):
        """Each layer's attention, SLIDING or FULL: `layer_types`, or every
        `sliding_window_pattern`-th layer FULL."""
        kinds = self.get("layer_types")
        if kinds is None:
            pattern = self.sliding_window_pattern
            kinds = [FULL if (i + 1) % pattern == 0 else SLIDING
                     for i in range(self.num_hidden_layers)]
        return kinds

    @property
    def layer_windows(self):
        return [self.sliding_window if kind == SLIDING else None for kind in self.layer_kinds]

    def rope_of(self, kind):
        """The rotary parameters of `kind`'s layers: `rope_parameters[kind]`, or the older
        rope_local_base_freq (sliding layers) and rope_theta with rope_scaling (full ones)."""
        params = self.get("rope_parameters")
        if params is not None and kind in params:
            return standard_rope(params[kind])
        if kind == SLIDING:
            return older_rope_parameters(None, self.rope_local_base_freq)
        return older_rope_parameters(self.get("rope_scaling"), self.rope_theta)


class GemmaRMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * (1 + weight), computed in float32 and rounded once: the
    weight starts at zero, the identity scale."""

    def __init__(self, dim, eps=1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(zeros(dim, device=device, dtype=dtype))

    def forward(self, x):
        scale = 1.0 + self.weight.float()
        return F.rms_norm(x.float(), (x.shape[-1],), scale, self.eps).to(x.dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.eps}"


class Gemma3Attention(Attention):
    """Llama's attention with Gemma's query/key norms (where the config has them),
    query_pre_attn_scalar scaling and tanh-capped scores (attn_logit_softcapping, where set)."""

    norm_class = GemmaRMSNorm

    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__(config, layer_idx, device, dtype)
        self.scale = config.query_pre_attn_scalar ** -0.5
        self.softcap = config.attn_logit_softcapping


class Gemma3DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        width, eps = config.hidden_size, config.rms_norm_eps
        self.self_attn = Gemma3Attention(config, layer_idx, **kw)
        self.mlp = MLP(config, **kw)
        self.input_layernorm = GemmaRMSNorm(width, eps, **kw)
        self.post_attention_layernorm = GemmaRMSNorm(width, eps, **kw)
        self.pre_feedforward_layernorm = GemmaRMSNorm(width, eps, **kw)
        self.post_feedforward_layernorm = GemmaRMSNorm(width, eps, **kw)

    def forward(self, x, cos, sin, mask, cache=None):
        attended = self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        x = x + self.post_attention_layernorm(attended)
        return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))


class Gemma3TextModel(nn.Module):
    """Scaled embeddings, decoder layers and the final norm: hidden states, (batch, tokens,
    width)."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, **kw)
        self.embed_scale = math.sqrt(config.hidden_size)
        self.layers = nn.ModuleList([Gemma3DecoderLayer(config, i, **kw)
                                     for i in range(config.num_hidden_layers)])
        self.norm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, **kw)
        self.kinds, self.windows = config.layer_kinds, config.layer_windows
        self.rotary = {kind: RotaryEmbedding(config.head_size, config.rope_of(kind), device)
                       for kind in set(self.kinds)}

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None):
        position_ids, masks = step_inputs(input_ids, attention_mask, position_ids, cache,
                                          set(self.windows))
        x = embedding_rows(self.embed_tokens, input_ids, cache)
        x = x * embedding_scale(self.embed_scale, x.dtype)
        bound = cache.max_length if cache is not None and cache.decoding else None
        angles = {kind: rotary(position_ids, x.dtype, bound)
                  for kind, rotary in self.rotary.items()}
        for layer, kind, window in zip(self.layers, self.kinds, self.windows):
            x = layer(x, *angles[kind], masks[window], cache)
        if cache is not None:
            cache.advance(input_ids.shape[1])
        return self.norm(x)


def embedding_scale(scale, dtype):
    """`scale` as a float32 rounded to `dtype`, the factor the checkpoints were trained with."""
    return float(np.float32(scale).astype(dtype.numpy_dtype))


class Gemma3ForCausalLM(LlamaForCausalLM):
    """The language model: `model(input_ids)` gives (batch, tokens, vocab) logits."""

    config_class = Gemma3TextConfig
    base_model_class = Gemma3TextModel

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None,
                logits_to_keep=0):
        logits = super().forward(input_ids, attention_mask, position_ids, cache, logits_to_keep)
        cap = self.config.final_logit_softcapping
        return logits if cap is None else (logits / cap).tanh() * cap


class Gemma3Config(Gemma3TextConfig):
    """The config.json of a Gemma 3 image-text checkpoint (model_type gemma3): the language
    model's settings are its text_config's. Saved back as the text model's config (model_type
    gemma3_text), the part Genesis holds."""

    def __getattr__(self, name):
        text = object.__getattribute__(self, "_values").get("text_config") or {}
        if name in text:
            return text[name]
        return super().__getattr__(name)

    def to_dict(self):
        values = dict(self._values)
        text = values.pop("text_config", None) or {}
        values.pop("vision_config", None)
        return {**values, **text, "model_type": "gemma3_text",
                "architectures": ["Gemma3ForCausalLM"]}


CHECKPOINT_PREFIXES = {"language_model.model.": "model.", "model.language_model.": "model.",
                       "language_model.lm_head.": "lm_head."}
"""Where image-text checkpoints keep the language model's tensors, and where they go."""


class Gemma3LanguageModel(Gemma3ForCausalLM):
    """The language model of a Gemma 3 image-text checkpoint; its vision tower and projector
    are left unread."""

    config_class = Gemma3Config

    @staticmethod
    def checkpoint_name(name):
        for prefix, target in CHECKPOINT_PREFIXES.items():
            if name.startswith(prefix):
                return target + name[len(prefix):]
        return name if name.startswith("lm_head.") else None
