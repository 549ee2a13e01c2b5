"""Qwen3: the Llama architecture with each query and key head RMS-normalised (over its
head_dim channels, one learned scale per channel shared by the heads) before the rotation;
no projection biases unless the config asks for them."""

from .llama import LlamaConfig, LlamaForCausalLM


class Qwen3Config(LlamaConfig):
    DEFAULTS = dict(LlamaConfig.DEFAULTS, vocab_size=151936, hidden_size=4096,
                    intermediate_size=22016, num_attention_heads=32, num_key_value_heads=32,
                    head_dim=128, rope_theta=10000.0, tie_word_embeddings=False,
                    rms_norm_eps=1e-6, max_position_embeddings=32768,
                    use_sliding_window=False, max_window_layers=28)

    @property
    def qk_norm(self):
        return True


class Qwen3ForCausalLM(LlamaForCausalLM):
    config_class = Qwen3Config
