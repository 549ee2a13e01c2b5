"""Phi-3 (and Phi-3.5, Phi-4-mini): the Llama architecture whose checkpoints keep the query,
key and value projections as one `qkv_proj` matrix and gate and up as one `gate_up_proj`, with
rotary embeddings that may turn only part of each head (`partial_rotary_factor`) and stretch to
long contexts by LongRoPE (per-frequency factors, short and long)."""

from .llama import LlamaConfig, LlamaForCausalLM
from .rotary import rope_parameters


class Phi3Config(LlamaConfig):
    DEFAULTS = dict(LlamaConfig.DEFAULTS, vocab_size=32064, hidden_size=3072,
                    intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
                    max_position_embeddings=4096, rms_norm_eps=1e-5, bos_token_id=1,
                    eos_token_id=32000, pad_token_id=32000, sliding_window=None)

    def checkpoint_parts(self, parts, fused_name):
        return {fused_name: sum(parts.values())}

    def rope(self):
        """The rotary parameters, with older configs' top-level partial_rotary_factor and
        original_max_position_embeddings, and the context length longrope stretches to."""
        params = rope_parameters(self)
        for name in ("partial_rotary_factor", "original_max_position_embeddings"):
            if self.get(name) is not None:
                params.setdefault(name, self.get(name))
        params.setdefault("max_position_embeddings", self.max_position_embeddings)
        return params


class Phi3ForCausalLM(LlamaForCausalLM):
    config_class = Phi3Config
