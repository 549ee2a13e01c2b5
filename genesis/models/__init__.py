"""Language models in Hugging Face's checkpoint format: Llama (and Mistral), Qwen2, Qwen3,
Gemma 2, Gemma 3, Phi-3, GPT-2, and the Mixture-of-Experts Mixtral, Qwen2-MoE and Qwen3-MoE
(models/moe.py).

    model = genesis.models.from_pretrained("path/to/model", dtype=genesis.bfloat16,
                                           device="cuda")
    tokenizer = genesis.models.Tokenizer.from_pretrained("path/to/model")
    ids, mask = tokenizer(["Once upon a time"], device="cuda")
    out = model.generate(ids, attention_mask=mask, max_new_tokens=32)
    print(tokenizer.decode(out[0]))
"""

from .cache import StaticCache
from .config import ModelConfig
from .gemma2 import Gemma2Config, Gemma2ForCausalLM
from .gemma3 import Gemma3ForCausalLM, Gemma3TextConfig
from .generation import GenerationMixin, TextStreamer
from .gpt2 import GPT2Config, GPT2LMHeadModel
from .hub import MODEL_TYPES, from_pretrained
from .llama import LlamaConfig, LlamaForCausalLM
from .mixtral import MixtralConfig, MixtralForCausalLM
from .moe import SparseMoeBlock
from .phi3 import Phi3Config, Phi3ForCausalLM
from .pretrained import PreTrainedModel, save_pretrained
from .qwen2 import Qwen2Config, Qwen2ForCausalLM
from .qwen2_moe import Qwen2MoeConfig, Qwen2MoeForCausalLM
from .qwen3 import Qwen3Config, Qwen3ForCausalLM
from .qwen3_moe import Qwen3MoeConfig, Qwen3MoeForCausalLM
from .rotary import RotaryEmbedding, apply_rotary, rotate_half
from .tokenizer import Tokenizer

__all__ = ["from_pretrained", "save_pretrained", "Tokenizer", "TextStreamer", "StaticCache",
           "GenerationMixin", "PreTrainedModel", "ModelConfig", "MODEL_TYPES", "LlamaConfig",
           "LlamaForCausalLM", "Qwen2Config", "Qwen2ForCausalLM", "Qwen3Config",
           "Qwen3ForCausalLM", "Gemma2Config", "Gemma2ForCausalLM", "Gemma3TextConfig",
           "Gemma3ForCausalLM", "Phi3Config", "Phi3ForCausalLM", "GPT2Config", "GPT2LMHeadModel",
           "MixtralConfig", "MixtralForCausalLM", "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
           "Qwen3MoeConfig", "Qwen3MoeForCausalLM", "SparseMoeBlock", "RotaryEmbedding",
           "apply_rotary", "rotate_half"]
