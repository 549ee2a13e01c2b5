"""Qwen2-MoE: Qwen2's attention (biases on the query, key and value projections) with sparse
Mixture-of-Experts MLPs (models/moe.py) as Qwen3-MoE's, plus a shared expert every token runs
(`mlp.shared_expert`, a SwiGLU MLP of shared_expert_intermediate_size) scaled by
sigmoid(`mlp.shared_expert_gate`(x))."""

from .moe import MoEConfig, MoEForCausalLM
from .qwen2 import Qwen2Config


class Qwen2MoeConfig(MoEConfig, Qwen2Config):
    DEFAULTS = dict(Qwen2Config.DEFAULTS, hidden_size=2048, intermediate_size=5632,
                    num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16,
                    decoder_sparse_step=1, moe_intermediate_size=1408,
                    shared_expert_intermediate_size=5632, num_experts_per_tok=4,
                    num_experts=60, norm_topk_prob=False, mlp_only_layers=None)

    @property
    def qkv_bias(self):
        return self._values.get("qkv_bias", True)


class Qwen2MoeForCausalLM(MoEForCausalLM):
    config_class = Qwen2MoeConfig
