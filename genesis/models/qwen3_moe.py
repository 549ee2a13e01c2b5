"""Qwen3-MoE: Qwen3's attention (query and key heads RMS-normalised) with sparse
Mixture-of-Experts MLPs (models/moe.py): `mlp.gate` routes each token to num_experts_per_tok
of num_experts experts, `mlp.experts.{i}.gate_proj/up_proj/down_proj`, renormalised where
norm_topk_prob says. Every decoder_sparse_step-th layer is sparse, but those in
mlp_only_layers, which keep Qwen3's dense MLP."""

from .moe import MoEConfig, MoEForCausalLM
from .qwen3 import Qwen3Config


class Qwen3MoeConfig(MoEConfig, Qwen3Config):
    DEFAULTS = dict(Qwen3Config.DEFAULTS, hidden_size=2048, intermediate_size=6144,
                    num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=4,
                    head_dim=None, rope_theta=10000.0, max_window_layers=0,
                    decoder_sparse_step=1, moe_intermediate_size=768, num_experts_per_tok=8,
                    num_experts=128, norm_topk_prob=False, mlp_only_layers=None)
    """max_window_layers=0: a sliding window, where use_sliding_window asks for one, in every
    layer (Qwen3-MoE has no max_window_layers)."""


class Qwen3MoeForCausalLM(MoEForCausalLM):
    config_class = Qwen3MoeConfig
