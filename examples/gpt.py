"""A character-level GPT in the style of nanoGPT, written against genesis's PyTorch-like API.

Token and position embeddings, pre-norm transformer blocks (causal self-attention, GELU MLP),
a final LayerNorm, and an output head whose weight is the token embedding's (weight tying).
The same code runs on PyTorch when `lib` is torch (the tests compare the two step by step).
"""

import math
from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0


def build_gpt(config, lib):
    """A GPT model built with the library `lib` (the `genesis` or the `torch` module)."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.n_head = config.n_head
            self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.proj = nn.Linear(config.n_embd, config.n_embd)
            self.dropout = config.dropout

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               dropout_p=self.dropout if self.training else 0.0)
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
            self.act = nn.GELU(approximate="tanh")
            self.proj = nn.Linear(4 * config.n_embd, config.n_embd)
            self.drop = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.drop(self.proj(self.act(self.fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention()
            self.ln2 = nn.LayerNorm(config.n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = config
            self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
            self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
            self.drop = nn.Dropout(config.dropout)
            self.blocks = nn.ModuleList([Block() for _ in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd)
            self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.head.weight = self.tok_emb.weight
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        @staticmethod
        def _init_weights(module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            B, T = idx.shape
            if T > config.block_size:
                raise ValueError(f"GPT: sequence length {T} exceeds block_size {config.block_size}")
            pos = lib.arange(T, device=idx.device)
            x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            if targets is None:
                return logits, None
            loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
            return logits, loss

    return GPT()
