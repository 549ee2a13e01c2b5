"""`from_pretrained`: the model family a Hugging Face directory's config.json names, built on
the target device and filled with the directory's weights."""

from .. import dtypes
from ..device import device as as_device
from .config import read_config_file, read_generation_config
from .gemma2 import Gemma2ForCausalLM
from .gemma3 import Gemma3ForCausalLM, Gemma3LanguageModel
from .gpt2 import GPT2LMHeadModel
from .llama import LlamaForCausalLM
from .mixtral import MixtralForCausalLM
from .phi3 import Phi3ForCausalLM
from .pretrained import load_weights
from .qwen2 import Qwen2ForCausalLM
from .qwen2_moe import Qwen2MoeForCausalLM
from .qwen3 import Qwen3ForCausalLM
from .qwen3_moe import Qwen3MoeForCausalLM

MODEL_TYPES = {"llama": LlamaForCausalLM, "mistral": LlamaForCausalLM,
               "qwen2": Qwen2ForCausalLM, "qwen3": Qwen3ForCausalLM, "gpt2": GPT2LMHeadModel,
               "gemma2": Gemma2ForCausalLM, "gemma3_text": Gemma3ForCausalLM,
               "gemma3": Gemma3LanguageModel, "phi3": Phi3ForCausalLM,
               "mixtral": MixtralForCausalLM, "qwen2_moe": Qwen2MoeForCausalLM,
               "qwen3_moe": Qwen3MoeForCausalLM}


def model_class(model_type):
    if model_type not in MODEL_TYPES:
        raise ValueError(f"from_pretrained: unknown model_type {model_type!r}; Genesis knows "
                         f"{', '.join(sorted(MODEL_TYPES))}")
    return MODEL_TYPES[model_type]


def _config_dtype(values):
    name = values.get("dtype") or values.get("torch_dtype") or "float32"
    return dtypes.as_dtype(name)


def from_pretrained(path, dtype=None, device=None):
    """The model in the Hugging Face directory `path`, on `device` (default CPU), in `dtype`
    (default: the dtype its config names)."""
    values = read_config_file(path)
    cls = model_class(values["model_type"])
    config = cls.config_class(values)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else _config_dtype(values)
    device = as_device(device or "cpu")
    model = cls(config, device=device, dtype=dtype)
    load_weights(model, path)
    model.generation_config = read_generation_config(path)
    return model.eval()


