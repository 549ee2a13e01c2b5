"""Gemma 2, as Hugging Face's checkpoints lay it out: Gemma 3's decoder (models/gemma3.py)
without the query/key norms, with every other layer attending within a sliding window (the
even ones, from the first), one rotary frequency base for all layers, and both the attention
scores (attn_logit_softcapping, 50) and the logits (final_logit_softcapping, 30) capped by
cap * tanh(x / cap)."""

from .gemma3 import FULL, SLIDING, Gemma3ForCausalLM, Gemma3TextConfig


class Gemma2Config(Gemma3TextConfig):
    DEFAULTS = dict(Gemma3TextConfig.DEFAULTS, vocab_size=256000, max_position_embeddings=8192,
                    rope_theta=10000.0, final_logit_softcapping=30.0,
                    attn_logit_softcapping=50.0)

    @property
    def qk_norm(self):
        return False

    @property
    def layer_kinds(self):
        """Each layer's attention: `layer_types`, or SLIDING and FULL in turn from layer 0."""
        kinds = self.get("layer_types")
        if kinds is None:
            kinds = [SLIDING if i % 2 == 0 else FULL for i in range(self.num_hidden_layers)]
        return kinds

    def rope_of(self, kind):
        return self.rope()


class Gemma2ForCausalLM(Gemma3ForCausalLM):
    config_class = Gemma2Config
