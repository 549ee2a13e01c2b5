"""Llama (2 and 3) and Mistral, as Hugging Face's checkpoints lay them out.

A decoder-only transformer: token embeddings, then per layer
    x = x + Attention(RMSNorm(x))          grouped-query attention with rotary positions
    x = x + MLP(RMSNorm(x))                SwiGLU: down(silu(gate(x)) * up(x))
then a final RMSNorm and the vocabulary projection (`lm_head`, tied to the embeddings where the
config says so). Qwen2 is this model with biases on the query, key and value projections,
Qwen3 with an RMSNorm of each query and key head before the rotation.
The query, key and value projections are one matrix, and so are gate and up (models/fused.py);
state dicts still name them as the checkpoints do. Without gradients, each residual add and the
RMSNorm after it run as one kernel on the GPU.
"""

from .. import nn
from ..nn import functional as F
from ..ops.shape_copies import cat
from .attention_mask import attend, step_inputs
from .cache import embedding_rows
from .config import ModelConfig
from .fused import FusedLinear, FusedParent, add_norm, silu_gate_down
from .pretrained import PreTrainedModel
from .rotary import RotaryEmbedding, apply_rotary, rope_parameters

PREFILL_MLP_BYTES = 32 << 20
"""generate's prefill runs each MLP over blocks of rows whose fused gate/up output stays within
this: with all the prompt's rows at once, the MLP intermediates (three times the intermediate
size a row) are generate's peak beyond its weights and cache."""

ACTIVATIONS = {"silu": F.silu, "swish": F.silu, "relu": F.relu, "gelu": F.gelu,
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}


class LlamaConfig(ModelConfig):
    DEFAULTS = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None,
                    head_dim=None, hidden_act="silu", max_position_embeddings=2048,
                    rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                    attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                    bos_token_id=1, eos_token_id=2, pad_token_id=None)

    @property
    def qkv_bias(self):
        """Whether the query, key and value projections have biases."""
        return self.attention_bias

    @property
    def qk_norm(self):
        """Whether each query and key head is RMS-normalised before the rotation."""
        return False

    def checkpoint_parts(self, parts, fused_name):
        """How checkpoints name a fused projection's rows: `parts` (name -> rows), each
        projection on its own."""
        return parts

    def rope(self):
        """The rotary embedding's parameters (models/rotary.py)."""
        return rope_parameters(self)

    @property
    def layer_windows(self):
        """Each layer's sliding attention window (a query sees the keys fewer than this many
        positions back) or None (every earlier key): `layer_types` where the config lists
        them, else Qwen's `use_sliding_window` from layer `max_window_layers` on, else
        Mistral's `sliding_window` in every layer."""
        window, layers = self.get("sliding_window"), range(self.num_hidden_layers)
        types = self.get("layer_types")
        if types is not None:
            return [window if kind == "sliding_attention" else None for kind in types]
        if self.get("use_sliding_window") is not None:
            return [window if self.use_sliding_window and i >= self.max_window_layers else None
                    for i in layers]
        return [window for _ in layers]

    @property
    def kv_heads(self):
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def head_size(self):
        return self.head_dim or self.hidden_size // self.num_attention_heads


class Attention(FusedParent):
    """Grouped-query self-attention: `num_key_value_heads` key/value heads shared by groups of
    query heads, rotary positions on queries and keys, a key/value cache when generating."""

    norm_class = nn.RMSNorm
    """The norm of each query and key head, where the config asks for one."""

    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.heads, self.kv_heads, self.head_dim = (config.num_attention_heads, config.kv_heads,
                                                    config.head_size)
        kw = dict(device=device, dtype=dtype)
        width = config.hidden_size
        kv_width = self.kv_heads * self.head_dim
        parts = {"q_proj": self.heads * self.head_dim, "k_proj": kv_width, "v_proj": kv_width}
        self.qkv_proj = FusedLinear(width, config.checkpoint_parts(parts, "qkv_proj"),
                                    bias=config.qkv_bias, **kw)
        self.o_proj = nn.Linear(self.heads * self.head_dim, width, bias=config.attention_bias,
                                **kw)
        self.q_norm, self.k_norm = (
            [self.norm_class(self.head_dim, eps=config.rms_norm_eps, **kw) for _ in "qk"]
            if config.qk_norm else (None, None))
        self.scale = None  # softmax(q k^T * scale): None is 1 / sqrt(head_dim)
        self.softcap = None  # scores capped at +-softcap (attention_mask.capped_attention)

    def forward(self, x, cos, sin, mask, cache=None):
        B, T, _ = x.shape
        heads = self.qkv_proj.fused(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        q, k, v = heads.split([self.heads, self.kv_heads, self.kv_heads], dim=1)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if cache is None:
            q, k = apply_rotary(q, k, cos, sin)
        else:
            q, k, v = cache.rotate_and_update(self.layer_idx, q, k, v, cos, sin)
        y = attend(q, k, v, mask, self.scale, self.softcap)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))


class RowBlocks:
    """How a decoder layer runs its feed-forward block (a module whose forward takes the
    normed stream): `run`, over blocks of rows in generate's prefill (`block_rows`); the
    block gives `row_features()`, the intermediate features its forward makes a row."""

    def run(self, x, rows=None, decoding=False):
        """forward(x), over blocks of `rows` rows if given. `decoding` (a decode step, which
        reads nothing back to the host) changes nothing here; sparse blocks (models/moe.py)
        route by it."""
        return self(x) if rows is None else self.blockwise(x, rows)

    def blockwise(self, x, rows):
        """forward(x), computed over blocks of `rows` rows (positions): the same values, with
        one block's intermediates alive at a time."""
        flat = x.reshape(-1, x.shape[-1])
        blocks = [self(flat[start:start + rows]) for start in range(0, flat.shape[0], rows)]
        return cat(blocks).view(*x.shape[:-1], -1)

    def block_rows(self, x):
        """Rows per block for `blockwise` in generate's prefill, as even as they can be; None
        when the rows of `x` fit PREFILL_MLP_BYTES at once."""
        total = x.numel() // x.shape[-1]
        per_row = self.row_features() * x.element_size()
        blocks = -(-total * per_row // PREFILL_MLP_BYTES)
        return -(-total // blocks) if blocks > 1 else None


class MLP(RowBlocks, FusedParent):
    """SwiGLU feed-forward: down(act(gate(x)) * up(x)), gate and up one matrix;
    `intermediate_size` defaults to the config's."""

    def __init__(self, config, device=None, dtype=None, intermediate_size=None):
        super().__init__()
        kw = dict(bias=config.mlp_bias, device=device, dtype=dtype)
        inner = intermediate_size or config.intermediate_size
        parts = config.checkpoint_parts({"gate_proj": inner, "up_proj": inner}, "gate_up_proj")
        self.gate_up_proj = FusedLinear(config.hidden_size, parts, **kw)
        self.down_proj = nn.Linear(inner, config.hidden_size, **kw)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x):
        if self.act is F.silu:
            return silu_gate_down(self.gate_up_proj.fused(x), self.down_proj)
        gate, up = self.gate_up_proj.fused(x).chunk(2, -1)
        return self.down_proj(self.act(gate) * up)

    def row_features(self):
        return self.gate_up_proj.out_features


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps, **kw)
        self.self_attn = Attention(config, layer_idx, **kw)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps,
                                                   **kw)
        self.mlp = self.feed_forward(config, layer_idx, **kw)

    def feed_forward(self, config, layer_idx, device=None, dtype=None):
        """This layer's MLP (Mixture-of-Experts families make some layers sparse)."""
        return MLP(config, device, dtype)

    def forward(self, x, normed, cos, sin, mask, cache, next_norm, rows=None):
        """(the residual stream after this layer, `next_norm` of it) from the stream `x` and
        this layer's input_layernorm of it, `normed`: each residual add and the norm after it
        are one kernel where they can be (models/fused.py); the MLP over blocks of `rows` rows
        if given."""
        x, normed = self.attention_block(x, normed, cos, sin, mask, cache)
        return self.mlp_block(x, normed, next_norm, rows, cache is not None and cache.decoding)

    def attention_block(self, x, normed, cos, sin, mask, cache):
        """(x + attention(normed), post_attention_layernorm of it)."""
        return add_norm(x, self.self_attn(normed, cos, sin, mask, cache),
                        self.post_attention_layernorm)

    def mlp_block(self, x, normed, next_norm, rows=None, decoding=False):
        """(x + mlp(normed), `next_norm` of it); the MLP over blocks of `rows` rows if given;
        `decoding`: in a decode step (RowBlocks.run)."""
        return add_norm(x, self.mlp.run(normed, rows, decoding), next_norm)


class LlamaModel(nn.Module):
    """Embeddings, decoder layers and the final norm: hidden states, (batch, tokens, width)."""

    layer_class = DecoderLayer

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, **kw)
        self.layers = nn.ModuleList([self.layer_class(config, i, **kw)
                                     for i in range(config.num_hidden_layers)])
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps, **kw)
        self.rotary = RotaryEmbedding(config.head_size, config.rope(), device)
        self.windows = config.layer_windows

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None):
        position_ids, masks = step_inputs(input_ids, attention_mask, position_ids, cache,
                                          set(self.windows))
        x = embedding_rows(self.embed_tokens, input_ids, cache)
        decoding = cache is not None and cache.decoding
        cos, sin = self.rotary(position_ids, x.dtype, cache.max_length if decoding else None)
        layers = list(self.layers)
        normed = layers[0].input_layernorm(x) if layers else self.norm(x)
        prefill = layers and cache is not None and not decoding
        rows = layers[0].mlp.block_rows(x) if prefill else None
        for layer, window, after in zip(layers, self.windows, layers[1:] + [None]):
            next_norm = self.norm if after is None else after.input_layernorm
            mask = masks[window]
            if layer._forward_pre_hooks or layer._forward_hooks:
                x, normed = layer(x, normed, cos, sin, mask, cache, next_norm, rows)
                continue
            # The halves one by one, not layer(...): a call holds its inputs to its end, and
            # the layer's input stream and norm would outlive the attention into the MLP,
            # whose prefill intermediates are the forward's peak. A layer with hooks is
            # called, so that they run.
            x, normed = layer.attention_block(x, normed, cos, sin, mask, cache)
            x, normed = layer.mlp_block(x, normed, next_norm, rows, decoding)
        if cache is not None:
            cache.advance(input_ids.shape[1])
        return normed


class LlamaForCausalLM(PreTrainedModel):
    """The language model: `model(input_ids)` gives (batch, tokens, vocab) logits."""

    config_class = LlamaConfig
    base_model_class = LlamaModel

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.model = self.base_model_class(config, device, dtype)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False,
                                 device=device, dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None,
                logits_to_keep=0):
        """Logits of every position, or of the last `logits_to_keep` (as transformers)."""
        hidden = self.model(input_ids, attention_mask, position_ids, cache)
        return self.lm_head(hidden[:, -logits_to_keep:] if logits_to_keep else hidden)

    def cache_geometry(self):
        """(layers, key/value heads, head size) of this model's key/value cache."""
        c = self.config
        return c.num_hidden_layers, c.kv_heads, c.head_size

    def tied_weights(self):
        if self.config.tie_word_embeddings:
            return {"lm_head.weight": "model.embed_tokens.weight"}
        return {}

    @staticmethod
    def checkpoint_name(name):
        """Older checkpoints store each layer's rotary frequencies, recomputed here."""
        return None if name.endswith("rotary_emb.inv_freq") else name
