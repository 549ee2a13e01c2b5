"""Transformer, its encoder/decoder stacks and layers against torch: outputs and every gradient
with weights copied through state dicts, masks, causal hints, unbatched input, bf16, errors and
a small encoder classifier trained like torch's."""

import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from helpers import assert_close, assert_refuses_as_torch, from_torch, to_torch
from nn_compare import check_grads

D_MODEL, NHEAD, FF = 8, 2, 16
# A few stacked float32 layers with LayerNorm: torch's own CPU paths differ by a few ulps.
TOL = {"rtol": 1e-5, "atol": 2e-5}


def module_pair(name, *args, device="cpu", **kwargs):
    """torch's module (default init, dropout 0) and genesis's holding the same weights."""
    g_kwargs = dict(kwargs)
    if kwargs.get("activation") is torch.nn.functional.gelu:
        g_kwargs["activation"] = nn.functional.gelu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, name)(*args, **kwargs)
        gm = getattr(nn, name)(*args, **g_kwargs).to(device)
    gm.load_state_dict({k: from_torch(v, device) for k, v in tm.state_dict().items()})
    return gm, tm


def stack_pair(kind, layers, layer_kwargs, device, norm=True):
    """TransformerEncoder/Decoder of `layers` copies in torch and genesis, with a final norm."""
    name = f"Transformer{kind}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_layer = getattr(torch.nn, name + "Layer")(D_MODEL, NHEAD, FF, dropout=0.0,
                                                    **layer_kwargs)
        g_layer = getattr(nn, name + "Layer")(D_MODEL, NHEAD, FF, dropout=0.0, **layer_kwargs)
        tm = getattr(torch.nn, name)(t_layer, layers, torch.nn.LayerNorm(D_MODEL) if norm
                                     else None)
        gm = getattr(nn, name)(g_layer, layers, nn.LayerNorm(D_MODEL) if norm else None)
    for p in tm.parameters():
        with torch.no_grad():
            p.uniform_(-0.5, 0.5)
    gm.to(device).load_state_dict({k: from_torch(v, device) for k, v in tm.state_dict().items()})
    return gm, tm


def random_pair(shape, rng, device, requires_grad=True):
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return from_torch(t, device, requires_grad=requires_grad), t.requires_grad_(requires_grad)


def seq_shape(length, batch, batch_first):
    if batch is None:
        return (length, D_MODEL)
    return (batch, length, D_MODEL) if batch_first else (length, batch, D_MODEL)


def backward_and_compare(gm, tm, g_out, t_out, leaves, rng):
    """One random cotangent through both; inputs' and parameters' gradients agree."""
    grad = rng.standard_normal(tuple(t_out.shape)).astype(np.float32)
    t_out.backward(torch.from_numpy(grad))
    g_out.backward(genesis.tensor(grad, device=g_out.device))
    for g, t in leaves:
        assert_close(g.grad, t.grad, **TOL)
    g_params = dict(gm.named_parameters())
    assert list(g_params) == [n for n, _ in tm.named_parameters()]
    for name, tp in tm.named_parameters():
        assert_close(g_params[name].grad, tp.grad, **TOL)


def masks(kind, length, batch, rng, device, key_length=None):
    """An attention mask (bool or float) of (L, S) and a key padding mask of (N, S)."""
    key_length = key_length or length
    blocked = rng.random((length, key_length)) < 0.3
    blocked[:, 0] = False
    padded = np.zeros((batch or 1, key_length), dtype=bool)
    padded[0, key_length - 2:] = True
    if batch is None:
        padded = padded[0]
    attn = torch.from_numpy(blocked)
    pad = torch.from_numpy(padded)
    if kind == "float":
        attn = torch.zeros(attn.shape).masked_fill(attn, float("-inf"))
        pad = torch.zeros(pad.shape).masked_fill(pad, -1e4)
    return (from_torch(attn, device), attn), (from_torch(pad, device), pad)


LAYER_KWARGS = [{}, {"norm_first": True}, {"activation": "gelu", "batch_first": True},
                {"bias": False, "layer_norm_eps": 1e-3},
                {"activation": torch.nn.functional.gelu, "norm_first": True}]


def _kwargs_id(kwargs):
    return "-".join(f"{k}={getattr(v, '__name__', v)}" for k, v in kwargs.items()) or "default"


@pytest.mark.parametrize("kwargs", LAYER_KWARGS, ids=_kwargs_id)
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_encoder_layer_matches_torch(kwargs, mask_kind, rng, device):
    gm, tm = module_pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, dropout=0.0,
                         device=device, **kwargs)
    gx, tx = random_pair(seq_shape(5, 3, kwargs.get("batch_first")), rng, device)
    g_kw, t_kw = {}, {}
    if mask_kind:
        (g_attn, t_attn), (g_pad, t_pad) = masks(mask_kind, 5, 3, rng, device)
        g_kw = {"src_mask": g_attn, "src_key_padding_mask": g_pad}
        t_kw = {"src_mask": t_attn, "src_key_padding_mask": t_pad}
    g_out, t_out = gm(gx, **g_kw), tm(tx, **t_kw)
    assert_close(g_out, t_out, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, [(gx, tx)], rng)


@pytest.mark.parametrize("kwargs", LAYER_KWARGS, ids=_kwargs_id)
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_decoder_layer_matches_torch(kwargs, mask_kind, rng, device):
    gm, tm = module_pair("TransformerDecoderLayer", D_MODEL, NHEAD, FF, dropout=0.0,
                         device=device, **kwargs)
    batch_first = kwargs.get("batch_first")
    g_tgt, t_tgt = random_pair(seq_shape(4, 2, batch_first), rng, device)
    g_mem, t_mem = random_pair(seq_shape(6, 2, batch_first), rng, device)
    g_kw, t_kw = {}, {}
    if mask_kind:
        (g_tm, t_tm), (g_tp, t_tp) = masks(mask_kind, 4, 2, rng, device)
        (g_mm, t_mm), (g_mp, t_mp) = masks(mask_kind, 4, 2, rng, device, key_length=6)
        g_kw = {"tgt_mask": g_tm, "tgt_key_padding_mask": g_tp, "memory_mask": g_mm,
                "memory_key_padding_mask": g_mp}
        t_kw = {"tgt_mask": t_tm, "tgt_key_padding_mask": t_tp, "memory_mask": t_mm,
                "memory_key_padding_mask": t_mp}
    g_out, t_out = gm(g_tgt, g_mem, **g_kw), tm(t_tgt, t_mem, **t_kw)
    assert_close(g_out, t_out, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, [(g_tgt, t_tgt), (g_mem, t_mem)], rng)


@pytest.mark.parametrize("causal_hint", [None, True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_with_causal_mask(causal_hint, batch_first, rng, device):
    gm, tm = stack_pair("Encoder", 2, {"batch_first": batch_first}, device)
    gx, tx = random_pair(seq_shape(5, 3, batch_first), rng, device)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    g_mask = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    (_, _), (g_pad, t_pad) = masks("bool", 5, 3, rng, device)
    g_out = gm(gx, mask=g_mask, src_key_padding_mask=g_pad, is_causal=causal_hint)
    t_out = tm(tx, mask=t_mask, src_key_padding_mask=t_pad, is_causal=causal_hint)
    assert_close(g_out, t_out, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, [(gx, tx)], rng)


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack_matches_torch(batch_first, rng, device):
    gm, tm = stack_pair("Decoder", 2, {"batch_first": batch_first, "norm_first": True}, device)
    g_tgt, t_tgt = random_pair(seq_shape(4, 2, batch_first), rng, device)
    g_mem, t_mem = random_pair(seq_shape(5, 2, batch_first), rng, device)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    g_mask = from_torch(t_mask, device)
    (_, _), (g_pad, t_pad) = masks("bool", 5, 2, rng, device)
    g_out = gm(g_tgt, g_mem, tgt_mask=g_mask, memory_key_padding_mask=g_pad)
    t_out = tm(t_tgt, t_mem, tgt_mask=t_mask, memory_key_padding_mask=t_pad)
    assert_close(g_out, t_out, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, [(g_tgt, t_tgt), (g_mem, t_mem)], rng)


@pytest.mark.parametrize("batch", [None, 2])
@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True,
                                         "activation": "gelu"}], ids=_kwargs_id)
def test_transformer_matches_torch(batch, kwargs, rng, device):
    gm, tm = module_pair("Transformer", D_MODEL, NHEAD, 2, 1, FF, dropout=0.0, device=device,
                         **kwargs)
    batch_first = kwargs.get("batch_first")
    g_src, t_src = random_pair(seq_shape(5, batch, batch_first), rng, device)
    g_tgt, t_tgt = random_pair(seq_shape(3, batch, batch_first), rng, device)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(3)
    (_, _), (g_pad, t_pad) = masks("bool", 5, batch, rng, device)
    g_out = gm(g_src, g_tgt, tgt_mask=from_torch(t_mask, device), src_key_padding_mask=g_pad,
               memory_key_padding_mask=g_pad, tgt_is_causal=True)
    t_out = tm(t_src, t_tgt, tgt_mask=t_mask, src_key_padding_mask=t_pad,
               memory_key_padding_mask=t_pad, tgt_is_causal=True)
    assert_close(g_out, t_out, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, [(g_src, t_src), (g_tgt, t_tgt)], rng)


def test_transformer_init_is_xavier_and_names_match_torch():
    gm = nn.Transformer(16, 4, 1, 1, 32)
    tm = torch.nn.Transformer(16, 4, 1, 1, 32)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert repr(gm) == repr(tm)
    weight = gm.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.9 * bound
    tm.load_state_dict({k: to_torch(v) for k, v in gm.state_dict().items()})


def test_generate_square_subsequent_mask():
    for size in (0, 1, 5):
        assert_close(nn.Transformer.generate_square_subsequent_mask(size),
                     torch.nn.Transformer.generate_square_subsequent_mask(size))
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=genesis.float64)
    assert mask.dtype is genesis.float64


def test_encoder_eval_without_grad_zeroes_padding_as_torch(rng):
    """torch's nested-tensor path (eval, no autograd, batch_first, padding mask) returns zeros
    at padded positions before the final norm; genesis does the same."""
    gm, tm = stack_pair("Encoder", 2, {"batch_first": True}, "cpu", norm=False)
    gm.eval()
    tm.eval()
    gx, tx = random_pair((3, 5, D_MODEL), rng, "cpu", requires_grad=False)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad(), genesis.no_grad():
        t_out = tm(tx, src_key_padding_mask=pad)
        g_out = gm(gx, src_key_padding_mask=from_torch(pad))
    assert float(t_out[1, 4].abs().sum()) == 0.0
    assert_close(g_out, t_out, **TOL)


def _nested_path_warnings(lib, encoder, x, pad):
    """The distinct warnings (their text before torch's C++ suffix) of an eval call without
    autograd, then of a training call; the once-a-process warnings given every time (torch's
    then come from each layer too)."""
    saved = lib.is_warn_always_enabled()
    lib.set_warn_always(True)
    try:
        texts = []
        for train in (False, True):
            encoder.train(train)
            with warnings.catch_warnings(record=True) as caught, lib.no_grad():
                warnings.simplefilter("always")
                encoder(x, src_key_padding_mask=pad)
            texts.append({(w.category, str(w.message).split(" (Triggered internally")[0])
                          for w in caught})
        return texts
    finally:
        lib.set_warn_always(saved)


def test_encoder_nested_path_warns_as_torch(rng):
    """torch's nested-tensor path warns that nested tensors are a prototype (once a process,
    every time under set_warn_always); genesis gives the same warning where it takes the path's
    semantics, and none in training."""
    gm, tm = stack_pair("Encoder", 2, {"batch_first": True}, "cpu", norm=False)
    gx, tx = random_pair((3, 5, D_MODEL), rng, "cpu", requires_grad=False)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    expected = _nested_path_warnings(torch, tm, tx, pad)
    assert len(expected[0]) == 1 and expected[1] == set()
    assert _nested_path_warnings(genesis, gm, gx, from_torch(pad)) == expected


def test_nested_tensor_warning_as_torch():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD)
    with pytest.warns(UserWarning, match="self_attn.batch_first was not True"):
        encoder = nn.TransformerEncoder(layer, 1)
    assert encoder.use_nested_tensor is False and encoder.enable_nested_tensor is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        batch_first = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD,
                                                                       batch_first=True), 1)
    assert batch_first.use_nested_tensor is True


def test_bfloat16_forward_within_bf16_tolerance(rng):
    gm, tm = module_pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, dropout=0.0)
    gm, tm = gm.bfloat16(), tm.bfloat16()
    gx, tx = random_pair((5, 3, D_MODEL), rng, "cpu", requires_grad=False)
    g_out, t_out = gm(gx.bfloat16()), tm(tx.bfloat16())
    assert_close(g_out, t_out, rtol=3.2e-2, atol=3.2e-2)


def test_errors_match_torch():
    gm, tm = module_pair("Transformer", D_MODEL, NHEAD, 1, 1, FF)
    for src, tgt in (((5, 2, D_MODEL), (3, 3, D_MODEL)), ((5, 2, D_MODEL), (3, 2, 4))):
        with pytest.raises(RuntimeError) as t_err:
            tm(torch.zeros(src), torch.zeros(tgt))
        with pytest.raises(RuntimeError, match=str(t_err.value)):
            gm(genesis.zeros(src), genesis.zeros(tgt))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh")
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD)
    with pytest.warns(UserWarning, match="mismatched src_key_padding_mask and src_mask"):
        layer(genesis.zeros(3, 2, D_MODEL), src_mask=genesis.zeros(3, 3),
              src_key_padding_mask=genesis.zeros(2, 3, dtype=genesis.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of src_mask"):
        layer(genesis.zeros(3, 2, D_MODEL), src_mask=genesis.zeros(3, 3, dtype=genesis.int64))


def _mha(m, shapes, **kwargs):
    """MultiheadAttention(8, 2) (its own kwargs first) called on zeros of `shapes` (query, key,
    value) and the masks among kwargs given as shapes."""
    layer = m.nn.MultiheadAttention(8, 2, **kwargs.pop("layer", {}))
    masks = {name: m.zeros(shape) for name, shape in kwargs.items()}
    return layer(*(m.zeros(shape) for shape in shapes), **masks)


@pytest.mark.parametrize("call", [
    lambda m: _mha(m, [(3, 2, 6)] * 3),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (5, 2, 8)]),
    lambda m: _mha(m, [(3, 2, 8), (4, 8), (4, 8)]),
    lambda m: _mha(m, [(3, 8), (4, 2, 8), (4, 2, 8)]),
    lambda m: _mha(m, [(8,)] * 3),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 5), (4, 2, 4)], layer={"kdim": 4, "vdim": 4}),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 4), (5, 2, 4)], layer={"kdim": 4, "vdim": 4}),
    lambda m: _mha(m, [(2, 3, 8), (2, 4, 8), (2, 5, 8)], layer={"batch_first": True}),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (4, 2, 8)], attn_mask=(3, 5)),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (4, 2, 8)], attn_mask=(5, 3, 4)),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (4, 2, 8)], attn_mask=(1, 1, 3, 4)),
    lambda m: _mha(m, [(3, 8), (4, 8), (4, 8)], attn_mask=(3, 3, 4)),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (4, 2, 8)], key_padding_mask=(2, 5)),
    lambda m: _mha(m, [(3, 2, 8), (4, 2, 8), (4, 2, 8)], key_padding_mask=(3, 4)),
    lambda m: _mha(m, [(3, 8), (4, 8), (4, 8)], key_padding_mask=(1, 4)),
    lambda m: m.nn.TransformerEncoderLayer(8, 2)(m.zeros(3, 2, 6)),
    lambda m: m.nn.TransformerEncoderLayer(8, 2)(m.zeros(3, 2, 8), src_mask=m.zeros(4, 4)),
    lambda m: m.nn.TransformerEncoderLayer(8, 2)(m.zeros(3, 2, 8),
                                                 src_key_padding_mask=m.zeros(2, 4))])
def test_attention_refusals_as_torch(call):
    """MultiheadAttention (and the transformer layers through it) refuses inputs and masks of
    shapes that do not go together with torch's exception and words: its AssertionErrors
    ('was expecting embedding dimension of 8, but got 6', 'key shape ... does not match value
    shape ...') and the attn_mask's RuntimeError."""
    assert_refuses_as_torch(call)


def test_encoder_classifier_trains_like_torch(rng):
    """A ported script: token embedding, a two-layer batch_first encoder, mean pooling and a
    linear head trained with AdamW from torch's initial weights; losses within 2e-4."""
    vocab, classes, length, batch = 30, 3, 6, 8

    def build(lib):
        class Classifier(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(vocab, D_MODEL)
                layer = lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                                       batch_first=True)
                self.encoder = lib.nn.TransformerEncoder(layer, 2)
                self.head = lib.nn.Linear(D_MODEL, classes)

            def forward(self, tokens, padding):
                hidden = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
                return self.head(hidden.mean(1))
        return Classifier()

    t_model, g_model = build(torch), build(genesis)
    g_model.load_state_dict({k: from_torch(v) for k, v in t_model.state_dict().items()})
    t_opt = torch.optim.AdamW(t_model.parameters(), lr=3e-3)
    g_opt = genesis.optim.AdamW(g_model.parameters(), lr=3e-3)
    tokens = rng.integers(0, vocab, (6, batch, length))
    labels = rng.integers(0, classes, (6, batch))
    padding = np.zeros((batch, length), dtype=bool)
    padding[::2, -2:] = True
    t_losses, g_losses = [], []
    for x, y in zip(tokens, labels):
        for model, opt, lib, losses in ((t_model, t_opt, torch, t_losses),
                                        (g_model, g_opt, genesis, g_losses)):
            loss = lib.nn.functional.cross_entropy(
                model(lib.tensor(x), lib.tensor(padding)), lib.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(g_losses, t_losses, rtol=2e-4)


MHA_LAYOUTS = [{}, {"batch_first": True, "kdim": 5, "vdim": 3},
               {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}]


@pytest.mark.parametrize("kwargs", MHA_LAYOUTS, ids=_kwargs_id)
@pytest.mark.parametrize("padding", [None, "bool", "float"])
@pytest.mark.parametrize("attn", [None, "bool2d", "float3d"])
@pytest.mark.parametrize("unbatched", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_arguments_match_torch(kwargs, padding, attn, unbatched,
                                                   need_weights, rng, device):
    """MultiheadAttention over torch's argument grid: kdim/vdim, bias_kv, zero attention,
    bool and float key padding and 2-D/3-D attention masks, unbatched input, with and without
    the weights (the latter through scaled_dot_product_attention)."""
    embed, heads, L, S, N = 8, 2, 3, 4, 2
    gm, tm = module_pair("MultiheadAttention", embed, heads, device=device, **kwargs)
    lead = (lambda n: (n,)) if unbatched else \
        (lambda n: (N, n) if kwargs.get("batch_first") else (n, N))
    shapes = [lead(L) + (embed,), lead(S) + (kwargs.get("kdim", embed),),
              lead(S) + (kwargs.get("vdim", embed),)]
    pairs = [random_pair(s, rng, device) for s in shapes]
    g_kw, t_kw = {"need_weights": need_weights}, {"need_weights": need_weights}
    batch = 1 if unbatched else N
    if padding:
        blocked = torch.from_numpy(rng.random((batch, S)) < 0.3)
        blocked[:, 0] = False
        blocked = blocked[0] if unbatched else blocked
        mask = blocked if padding == "bool" else torch.zeros(blocked.shape).masked_fill(
            blocked, -1e9)
        g_kw["key_padding_mask"], t_kw["key_padding_mask"] = from_torch(mask, device), mask
    if attn:
        shape = (L, S) if attn == "bool2d" else (batch * heads, L, S)
        blocked = torch.from_numpy(rng.random(shape) < 0.3)
        blocked[..., 0] = False
        mask = blocked if attn == "bool2d" else torch.zeros(shape).masked_fill(blocked,
                                                                               float("-inf"))
        g_kw["attn_mask"], t_kw["attn_mask"] = from_torch(mask, device), mask
    with warnings.catch_warnings(record=True) as g_warned:
        warnings.simplefilter("always")
        g_out, g_weights = gm(*(p[0] for p in pairs), **g_kw)
    with warnings.catch_warnings(record=True) as t_warned:
        warnings.simplefilter("always")
        t_out, t_weights = tm(*(p[1] for p in pairs), **t_kw)
    assert [str(w.message) for w in g_warned] == [str(w.message) for w in t_warned]
    assert_close(g_out, t_out, **TOL)
    assert (g_weights is None) == (t_weights is None)
    if t_weights is not None:
        assert_close(g_weights, t_weights, **TOL)
    backward_and_compare(gm, tm, g_out, t_out, pairs, rng)


@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_pool_projects_to_another_width_as_torch(need_weights, rng, device):
    """multi_head_attention_forward with separate q/k/v weights and an output projection to
    another width, as CLIP's AttentionPool2d calls it."""
    embed, out_dim, heads, L, N = 8, 5, 2, 4, 3
    shapes = [(embed, embed)] * 3 + [(3 * embed,), (out_dim, embed), (out_dim,)]
    pairs = [random_pair((L, N, embed), rng, device)] + [
        tuple(x * embed ** -0.5 for x in random_pair(s, rng, device, requires_grad=False))
        for s in shapes]  # parameters scaled as a layer's initialisation scales them
    pairs = [(g.requires_grad_(), t.requires_grad_()) for g, t in pairs]

    def pool(lib, x, q, k, v, in_bias, out_weight, out_bias):
        return lib.nn.functional.multi_head_attention_forward(
            x, x, x, embed, heads, None, in_bias, None, None, False, 0.0, out_weight, out_bias,
            need_weights=need_weights, use_separate_proj_weight=True, q_proj_weight=q,
            k_proj_weight=k, v_proj_weight=v)[0]
    g_out = pool(genesis, *(p[0] for p in pairs))
    t_out = pool(torch, *(p[1] for p in pairs))
    assert_close(g_out, t_out, **TOL)
    check_grads(g_out, t_out, *zip(*pairs), rng, **TOL)
