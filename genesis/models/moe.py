"""Sparse Mixture-of-Experts feed-forward blocks (Mixtral, Qwen2-MoE, Qwen3-MoE), as Hugging
Face's checkpoints lay them out.

A router (`gate`, one logit an expert) sends each token to its `num_experts_per_tok` experts:
softmax of the logits in float32, the k largest probabilities, renormalised to sum to 1 where
`norm_topk_prob` says (Mixtral always). Each expert is a SwiGLU MLP, and a token's output is its
experts' outputs weighted by those probabilities: Qwen's weights rounded to the model's dtype
first, Mixtral's kept in float32 up to the product, each product rounded to the model's dtype
before the sum (as transformers does). Qwen2-MoE adds a shared expert, an MLP every token runs,
scaled by sigmoid(shared_expert_gate(x)).

The experts' weights are stacked (experts, out, in), `gate_up_proj` (gate rows, then up) and
`down_proj` as transformers 5 holds them, so one expert's matrices are an index away. State
dicts and checkpoints name each expert's matrices apart ("experts.3.w1.weight", ...): views of
the stacks, read and written as published checkpoints and transformers' save_pretrained have
them.

Compute: by the number of (token, chosen expert) pairs, rows * top_k, against the number of
experts:
- pairs <= experts: each pair gathers its expert's matrices (an index of the stacks on the
  device) and batched matmuls run them. That touches only the chosen experts' weights, what
  batch-1 decoding (bound by weight reads) needs, and nothing goes back to the host; the
  gather copies them, so they cross memory three times (read, written, read by the product)
  where a product reading the stacks by expert index would read them once.
- more pairs in a decode step, which reads nothing back to the host (it is captured in a CUDA
  graph): every expert runs over every row, and each row sums its chosen experts' outputs,
  weighted. Each expert's weights are read once; the arithmetic is experts / top_k times the
  routed one, which a decode step's few rows afford.
- more pairs otherwise (prompts, training): the routing is read back to the host once a layer
  (as a prompt's embedding lookup already reads its ids), the pairs sorted by expert, and each
  chosen expert runs on its own rows: the routed arithmetic, each expert's weights read once.
"""

import math

import numpy as np

from .. import nn
from ..nn import functional as F
from ..nn import init
from ..ops.creation import empty, tensor, zeros
from ..ops.elementwise import where
from ..ops.index import Index, IndexPut
from ..ops.linalg import matmul
from ..ops.ranges import arange
from ..ops.shape_copies import cat
from ..ops.sorting import topk
from .fused import load_views, silu_gate
from .llama import ACTIVATIONS, MLP, DecoderLayer, LlamaForCausalLM, LlamaModel, RowBlocks


class MoEConfig:
    """What a Mixture-of-Experts config adds to its dense family's (a mixin before it)."""

    expert_names = ("gate_proj", "up_proj", "down_proj")
    """How checkpoints name an expert's gate, up and down projections."""

    float32_routing_weights = False
    """Whether the routing weights stay float32 up to their product (Mixtral), else they are
    rounded to the model's dtype (Qwen)."""

    @property
    def expert_count(self):
        """num_experts (Qwen), or num_local_experts (Mixtral, and Qwen3-MoE as transformers 5
        writes it), whichever the file gives, else the family's default."""
        for name in ("num_experts", "num_local_experts"):
            if name in self._values:
                return self._values[name]
        return self.get("num_experts", self.get("num_local_experts", 0))

    @property
    def expert_size(self):
        """Each expert's intermediate size: moe_intermediate_size, else intermediate_size."""
        return self.get("moe_intermediate_size") or self.intermediate_size

    def sparse_layer(self, layer_idx):
        """Whether layer `layer_idx` has experts: every decoder_sparse_step-th layer but those
        in mlp_only_layers; the others have the dense MLP."""
        return (self.expert_count > 0 and layer_idx not in (self.get("mlp_only_layers") or ())
                and (layer_idx + 1) % self.get("decoder_sparse_step", 1) == 0)


def route(logits, top_k, normalize, float32_weights):
    """(weights, experts), each (rows, top_k), of router `logits` (rows, experts), as
    transformers: softmax in float32, the top_k, renormalised if `normalize`; the weights in
    float32 if `float32_weights`, else in the logits' dtype."""
    weights, experts = topk(F.softmax(logits.float(), dim=-1), top_k, dim=-1)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return (weights if float32_weights else weights.to(logits.dtype)), experts


def rows_at(stack, index):
    """stack[index] for an int64 `index` valid by construction: no bounds check, which would
    read the index back to the host."""
    return Index.apply(stack, (index,), None)


class Experts(nn.Module):
    """`count` SwiGLU experts, width -> inner -> width, weights stacked; `names` are the
    checkpoints' (gate, up, down) names."""

    def __init__(self, count, width, inner, names, act, device=None, dtype=None):
        super().__init__()
        self.count, self.inner, self.names, self.act = count, inner, names, act
        kw = dict(device=device, dtype=dtype)
        self.gate_up_proj = nn.Parameter(empty((count, 2 * inner, width), **kw))
        self.down_proj = nn.Parameter(empty((count, width, inner), **kw))
        for weight in (self.gate_up_proj, self.down_proj):
            bound = 1 / math.sqrt(weight.shape[-1])  # nn.Linear's, expert by expert
            init.uniform_(weight, -bound, bound)

    def views(self):
        """{checkpoint name under this module: (stack's name, the view of it that name holds)}."""
        gate, up, down = self.names
        views = {}
        for e in range(self.count):
            gate_up = self.gate_up_proj.select(0, e)
            views[f"{e}.{gate}.weight"] = ("gate_up_proj", gate_up.narrow(0, 0, self.inner))
            views[f"{e}.{up}.weight"] = ("gate_up_proj", gate_up.narrow(0, self.inner, self.inner))
            views[f"{e}.{down}.weight"] = ("down_proj", self.down_proj.select(0, e))
        return views

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, (_, view) in self.views().items():
            destination[prefix + name] = view if keep_vars else view.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        views = {prefix + name: (self, stack, view)
                 for name, (stack, view) in self.views().items()}
        unexpected_keys.extend(k for k in state_dict if k not in views)
        load_views(state_dict, views, local_metadata, missing_keys, error_msgs)

    def glu(self, gate_up):
        """act(gate) * up of a (..., 2 * inner) gate/up output."""
        if self.act is F.silu:
            return silu_gate(gate_up.contiguous())
        gate, up = gate_up.chunk(2, -1)
        return self.act(gate) * up

    def forward(self, x, weights, experts, decoding=False):
        """The weighted sum of each row of `x` (rows, width)'s chosen `experts` (rows, top_k)
        outputs; `decoding`: in a decode step (the module docstring says which way runs)."""
        if experts.numel() <= self.count:
            return self.gathered(x, weights, experts)
        return self.dense(x, weights, experts) if decoding else self.grouped(x, weights, experts)

    def gathered(self, x, weights, experts):
        """Each (row, expert) pair with its expert's matrices, gathered from the stacks."""
        rows, k = experts.shape
        flat = experts.reshape(-1)
        gate_up = rows_at(self.gate_up_proj, flat).view(rows, k, 2 * self.inner, -1)
        hidden = matmul(gate_up, x.reshape(rows, 1, -1, 1)).squeeze(-1)
        down = rows_at(self.down_proj, flat).view(rows, k, -1, self.inner)
        out = matmul(down, self.glu(hidden).unsqueeze(-1)).squeeze(-1)
        return (out * weights.unsqueeze(-1)).to(x.dtype).sum(1)

    def dense(self, x, weights, experts):
        """Every expert over every row; each row keeps its chosen experts' outputs, weighted."""
        hidden = matmul(x, self.gate_up_proj.transpose(1, 2))  # (experts, rows, 2 inner)
        out = matmul(self.glu(hidden), self.down_proj.transpose(1, 2)).transpose(0, 1)
        chosen = experts.unsqueeze(-1) == arange(self.count, device=x.device)  # (rows, k, E)
        share = where(chosen, weights.unsqueeze(-1), 0).sum(1)
        out = (out * share.unsqueeze(-1)).to(x.dtype)
        return where(chosen.any(1).unsqueeze(-1), out, 0).sum(1)

    def grouped(self, x, weights, experts):
        """Each chosen expert on its own rows, grouped on the host (one read of the routing)."""
        k = experts.shape[1]
        flat = experts.reshape(-1).cpu().numpy()
        order = np.argsort(flat, kind="stable")
        pairs = tensor(order, device=x.device)
        tokens = tensor(order // k, device=x.device)
        inputs = rows_at(x, tokens)
        outs, start = [], 0
        for e, n in enumerate(np.bincount(flat, minlength=self.count).tolist()):
            if n:
                gate_up = F.linear(inputs[start:start + n], self.gate_up_proj.select(0, e))
                outs.append(F.linear(self.glu(gate_up), self.down_proj.select(0, e)))
                start += n
        out = (cat(outs) * rows_at(weights.reshape(-1), pairs).unsqueeze(-1)).to(x.dtype)
        return IndexPut.apply(zeros(x.shape, dtype=x.dtype, device=x.device), (tokens,), out,
                              True)


class SparseMoeBlock(RowBlocks, nn.Module):
    """A layer's experts and their router (`gate`), and Qwen2-MoE's shared expert where the
    config sizes one (`shared_expert_intermediate_size`)."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        width, count = config.hidden_size, config.expert_count
        self.top_k, self.normalize = config.num_experts_per_tok, config.norm_topk_prob
        self.float32_weights = config.float32_routing_weights
        self.gate = nn.Linear(width, count, bias=False, **kw)
        self.experts = Experts(count, width, config.expert_size, config.expert_names,
                               ACTIVATIONS[config.hidden_act], **kw)
        shared = config.get("shared_expert_intermediate_size")
        self.shared_expert = MLP(config, intermediate_size=shared, **kw) if shared else None
        self.shared_expert_gate = nn.Linear(width, 1, bias=False, **kw) if shared else None

    def route(self, x):
        """(weights, experts) of each row of `x` (rows, width): see `route`."""
        return route(self.gate(x), self.top_k, self.normalize, self.float32_weights)

    def forward(self, x, decoding=False):
        flat = x.reshape(-1, x.shape[-1])
        out = self.experts(flat, *self.route(flat), decoding)
        if self.shared_expert is not None:
            out = out + F.sigmoid(self.shared_expert_gate(flat)) * self.shared_expert(flat)
        return out.view(x.shape)

    def run(self, x, rows=None, decoding=False):
        return self(x, decoding) if rows is None else self.blockwise(x, rows)

    def row_features(self):
        shared = 0 if self.shared_expert is None else self.shared_expert.row_features()
        return self.top_k * 2 * self.experts.inner + shared


class MoEDecoderLayer(DecoderLayer):
    """Llama's decoder layer whose MLP is a SparseMoeBlock where the config says."""

    def feed_forward(self, config, layer_idx, device=None, dtype=None):
        if config.sparse_layer(layer_idx):
            return SparseMoeBlock(config, device, dtype)
        return super().feed_forward(config, layer_idx, device, dtype)


class MoEModel(LlamaModel):
    layer_class = MoEDecoderLayer


class MoEForCausalLM(LlamaForCausalLM):
    """A Llama-family language model with Mixture-of-Experts layers."""

    base_model_class = MoEModel
