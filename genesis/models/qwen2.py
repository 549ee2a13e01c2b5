"""Qwen2: the Llama architecture with biases on the query, key and value projections (and, in
the small models, the output projection tied to the embeddings, as their configs say)."""

from .llama import LlamaConfig, LlamaForCausalLM


class Qwen2Config(LlamaConfig):
    DEFAULTS = dict(LlamaConfig.DEFAULTS, vocab_size=151936, hidden_size=4096,
                    intermediate_size=22016, rope_theta=10000.0, tie_word_embeddings=False,
                    rms_norm_eps=1e-6, max_position_embeddings=32768,
                    use_sliding_window=False, max_window_layers=28)

    @property
    def qkv_bias(self):
        return True


class Qwen2ForCausalLM(LlamaForCausalLM):
    config_class = Qwen2Config
