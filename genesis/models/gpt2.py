"""GPT-2, as Hugging Face's checkpoints lay it out.

Token and learned position embeddings, then per block
    x = x + Attention(LayerNorm(x))        causal multi-head attention
    x = x + MLP(LayerNorm(x))              c_proj(gelu_tanh(c_fc(x)))
then a final LayerNorm and the output projection tied to the token embeddings. Its projections
are `Conv1D`s: weights stored (in, out), the transpose of `nn.Linear`'s, as the checkpoints hold
them.
"""

from .. import nn
from ..nn import functional as F
from ..ops.creation import empty
from ..ops.linalg import addmm
from .attention_mask import attend, step_inputs
from .cache import embedding_rows
from .config import ModelConfig
from .pretrained import PreTrainedModel

ACTIVATIONS = {"gelu_new": lambda x: F.gelu(x, approximate="tanh"),
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
               "gelu": F.gelu, "relu": F.relu, "silu": F.silu}


class GPT2Config(ModelConfig):
    DEFAULTS = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                    n_inner=None, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                    scale_attn_weights=True, tie_word_embeddings=True, bos_token_id=50256,
                    eos_token_id=50256, pad_token_id=None)


class Conv1D(nn.Module):
    """y = x @ weight + bias with weight of shape (in_features, out_features)."""

    def __init__(self, out_features, in_features, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(empty(in_features, out_features, device=device, dtype=dtype))
        self.bias = nn.Parameter(empty(out_features, device=device, dtype=dtype))
        nn.init.normal_(self.weight, std=0.02)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        flat = addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
        return flat.reshape(*x.shape[:-1], self.weight.shape[1])


class Attention(nn.Module):
    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__()
        self.layer_idx, self.heads = layer_idx, config.n_head
        self.c_attn = Conv1D(3 * config.n_embd, config.n_embd, device, dtype)
        self.c_proj = Conv1D(config.n_embd, config.n_embd, device, dtype)
        self.scale = None if config.scale_attn_weights else 1.0

    def forward(self, x, mask, cache=None):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)
        y = attend(q, k, v, mask, self.scale)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        inner = config.n_inner or 4 * config.n_embd
        self.c_fc = Conv1D(inner, config.n_embd, device, dtype)
        self.c_proj = Conv1D(config.n_embd, inner, device, dtype)
        self.act = ACTIVATIONS[config.activation_function]

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__()
        kw = dict(eps=config.layer_norm_epsilon, device=device, dtype=dtype)
        self.ln_1 = nn.LayerNorm(config.n_embd, **kw)
        self.attn = Attention(config, layer_idx, device, dtype)
        self.ln_2 = nn.LayerNorm(config.n_embd, **kw)
        self.mlp = MLP(config, device, dtype)

    def forward(self, x, mask, cache=None):
        x = x + self.attn(self.ln_1(x), mask, cache)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd, **kw)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd, **kw)
        self.h = nn.ModuleList([Block(config, i, **kw) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon, **kw)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None):
        position_ids, masks = step_inputs(input_ids, attention_mask, position_ids, cache)
        mask = masks[None]
        x = embedding_rows(self.wte, input_ids, cache) + embedding_rows(self.wpe, position_ids,
                                                                         cache)
        for block in self.h:
            x = block(x, mask, cache)
        if cache is not None:
            cache.advance(input_ids.shape[1])
        return self.ln_f(x)


class GPT2LMHeadModel(PreTrainedModel):
    """The language model: `model(input_ids)` gives (batch, tokens, vocab) logits."""

    config_class = GPT2Config

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config, device, dtype)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False, device=device,
                                 dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None,
                logits_to_keep=0):
        """Logits of every position, or of the last `logits_to_keep` (as transformers)."""
        hidden = self.transformer(input_ids, attention_mask, position_ids, cache)
        return self.lm_head(hidden[:, -logits_to_keep:] if logits_to_keep else hidden)

    def cache_geometry(self):
        c = self.config
        return c.n_layer, c.n_head, c.n_embd // c.n_head

    def tied_weights(self):
        if self.config.tie_word_embeddings:
            return {"lm_head.weight": "transformer.wte.weight"}
        return {}

    @staticmethod
    def checkpoint_name(name):
        """OpenAI's original checkpoints name tensors without the "transformer." prefix and
        store each attention's causal mask ("attn.bias", recomputed here)."""
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            return None
        if name.startswith("transformer.") or name.startswith("lm_head."):
            return name
        return "transformer." + name
