"""Mixtral: Mistral's attention with a sparse Mixture-of-Experts MLP in every layer
(models/moe.py): `block_sparse_moe.gate` routes each token to its two (num_experts_per_tok)
experts of num_local_experts, each `block_sparse_moe.experts.{i}.w1/w3/w2` (gate, up, down);
the routing weights are always renormalised and stay float32 up to their product."""

from .llama import LlamaConfig
from .moe import MoEConfig, MoEForCausalLM

CHECKPOINT_BLOCK, STATE_BLOCK = ".block_sparse_moe.", ".mlp."
"""Where checkpoints keep a layer's experts, and where the model holds them (as transformers 5
does)."""


class MixtralConfig(MoEConfig, LlamaConfig):
    DEFAULTS = dict(LlamaConfig.DEFAULTS, intermediate_size=14336, num_key_value_heads=8,
                    max_position_embeddings=4096 * 32, rms_norm_eps=1e-5, rope_theta=1e6,
                    sliding_window=None, num_local_experts=8, num_experts_per_tok=2,
                    norm_topk_prob=True)

    expert_names = ("w1", "w3", "w2")
    float32_routing_weights = True


class MixtralForCausalLM(MoEForCausalLM):
    config_class = MixtralConfig

    @staticmethod
    def checkpoint_name(name):
        name = MoEForCausalLM.checkpoint_name(name)
        return name and name.replace(CHECKPOINT_BLOCK, STATE_BLOCK)

    @staticmethod
    def saved_name(name):
        return name.replace(STATE_BLOCK, CHECKPOINT_BLOCK)
