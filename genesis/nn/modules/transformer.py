"""Transformer, its encoder and decoder stacks and their layers, with torch's parameter names.

A layer is attention (MultiheadAttention, run through scaled_dot_product_attention since no
weights are asked for) and a two-layer feed-forward block, each with dropout, a residual and
a LayerNorm after (or, with norm_first, before) it.
"""

import copy
import math
import warnings

from ..._warnings import warn_once
from ...autograd.grad_mode import is_grad_enabled
from ...ops import creation
from .. import functional as F
from .. import init
from ..functional.attention import _canonical_mask
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (no attending ahead)."""
    return creation.full((sz, sz), -math.inf, dtype=dtype, device=device).triu(1)


def _get_seq_len(src, batch_first):
    if src.ndim == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """`is_causal` when given, else whether `mask` equals the causal mask of `size`."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())
    return make_causal


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _relu_or_gelu(activation):
    """torch's code for the activation: 1 relu, 2 gelu, 0 anything else."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _add_feed_forward(layer, d_model, dim_feedforward, dropout, layer_norm_eps, bias, blocks,
                      factory):
    """linear1, dropout, linear2, then norm1..norm{blocks} and dropout1..dropout{blocks} (one
    per residual block), registered in torch's order so state dicts and reprs match."""
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
    for k in range(1, blocks + 1):
        setattr(layer, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
    for k in range(1, blocks + 1):
        setattr(layer, f"dropout{k}", Dropout(dropout))


def _feed_forward(layer, x):
    """The feed-forward block: linear2(dropout(act(linear1(x)))), then its own dropout."""
    x = layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))
    return getattr(layer, f"dropout{layer._blocks}")(x)


class TransformerEncoderLayer(Module):
    """Self-attention then feed-forward, each with dropout, residual and LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        _add_feed_forward(self, d_model, dim_feedforward, dropout, layer_norm_eps, bias, 2,
                          factory)
        self.norm_first = norm_first
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype, src_mask, "src_mask")
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    _blocks = 2

    def _ff_block(self, x):
        return _feed_forward(self, x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, then feed-forward."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **factory)
        _add_feed_forward(self, d_model, dim_feedforward, dropout, layer_norm_eps, bias, 3,
                          factory)
        self.norm_first = norm_first
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) \
            else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    _blocks = 3

    def _ff_block(self, x):
        return _feed_forward(self, x)


def _why_not_nested(layer):
    """Why torch's nested-tensor encoder path cannot serve `layer` ('' when it can)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    reasons = [(layer.norm_first, f"{name}.norm_first was True"),
               (not attn.batch_first, f"{name}.self_attn.batch_first was not True(use "
                                      f"batch_first for better inference performance)"),
               (not attn._qkv_same_embed_dim,
                f"{name}.self_attn._qkv_same_embed_dim was not True"),
               (attn.in_proj_bias is None, f"{name}.self_attn was passed bias=False"),
               (not layer.activation_relu_or_gelu,
                f"{name}.activation_relu_or_gelu was not True"),
               (layer.norm1.eps != layer.norm2.eps,
                f"{name}.norm1.eps was not equal to {name}.norm2.eps"),
               (attn.num_heads % 2 == 1, f"{name}.self_attn.num_heads is odd")]
    return next((why for failed, why in reasons if failed), "")


# What torch warns (once a process) on building the nested tensor its fast path runs.
_NESTED_PROTOTYPE = ("The PyTorch API of nested tensors is in prototype stage and will change in "
                     "the near future. We recommend specifying layout=torch.jagged when "
                     "constructing a nested tensor, as this layout receives active development, "
                     "has better operator coverage, and works with torch.compile.")


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer`, then the optional final `norm`.

    With enable_nested_tensor, in eval mode without autograd and with a left-aligned
    src_key_padding_mask only, torch runs packed (nested) sequences and returns zeros at the
    padded positions; this encoder computes the padded batch and zeroes those positions.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor = self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype, mask, "mask")
        mask = _canonical_mask(mask, "mask", src.dtype)
        first = self.layers[0]
        is_causal = _detect_is_causal_mask(mask, is_causal,
                                           _get_seq_len(src, first.self_attn.batch_first))
        nested = self._runs_nested(src, mask, src_key_padding_mask)
        if nested:
            warn_once("nested tensor", _NESTED_PROTOTYPE)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if nested:
            output = output.masked_fill((src_key_padding_mask != 0).unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _runs_nested(self, src, mask, key_padding_mask):
        """Whether torch would take its nested-tensor path for these arguments."""
        if not self.use_nested_tensor or self.layers[0].training or src.ndim != 3 \
                or key_padding_mask is None or mask is not None:
            return False
        if is_grad_enabled() and (src.requires_grad
                                  or any(p.requires_grad for p in self.layers[0].parameters())):
            return False
        return not self.mask_check or _left_aligned(key_padding_mask == 0)


def _left_aligned(keep):
    """Whether each row of the bool (N, S) `keep` is some Trues followed only by Falses."""
    if keep.shape[1] < 2:
        return True
    return not bool((keep[:, 1:] & ~keep[:, :-1]).any())


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer`, then the optional final `norm`."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder Transformer; every matrix parameter Xavier-uniform initialised."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The causal float mask for a sequence of `sz`: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
