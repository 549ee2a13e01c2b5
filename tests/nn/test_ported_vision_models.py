"""Ported vision models (Swin, ViT, MAE, CLIP): for each, the smallest model using the API its
reference code uses, written once against a framework (`torch` or `genesis`) and trained a few
steps from the same initial weights on the same synthetic data in both; the losses must agree
within 2e-4 relative in float32. Each case is (build(lib, device) -> model,
step(lib, model, data) -> loss); random draws (MAE's masking noise) come with the data."""

import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import genesis
from nn_compare import run_both, train_case

pytestmark = pytest.mark.usefixtures("cudnn_ieee")


def _relative_index(lib, window):
    """Swin's relative position index: pairwise offsets of a window's cells (meshgrid called
    without `indexing`, as the reference does), shifted to start at 0 and flattened."""
    coords = lib.stack(lib.meshgrid([lib.arange(window), lib.arange(window)]))
    flat = lib.flatten(coords, 1)
    rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += window - 1
    rel[:, :, 1] += window - 1
    rel[:, :, 0] *= 2 * window - 1
    return rel.sum(-1)


def _partition(x, window):
    """(B, H, W, C) -> (B * windows, window * window, C)."""
    b, h, w, c = x.shape
    x = x.view(b, h // window, window, w // window, window, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window * window, c)


def _reverse(windows, window, b, h, w):
    x = windows.view(b, h // window, w // window, window, window, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


for _lib in (torch, genesis):  # leaves of symbolic tracing, registered as the reference does
    _lib.fx.wrap("_partition")
    _lib.fx.wrap("_reverse")


def swin(lib, device):
    """Shifted-window attention (Swin): a relative position bias gathered from a table by an
    index buffer, a cyclic shift by roll, windows by view/permute, the shifted windows' mask
    from masked_fill, then patch merging by strided slices and a pooled head."""
    nn, F = lib.nn, lib.nn.functional
    window, shift, dim, heads = 2, 1, 8, 2

    class WindowBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.table = nn.Parameter(lib.zeros((2 * window - 1) ** 2, heads))
            nn.init.trunc_normal_(self.table, std=0.02)
            self.register_buffer("index", _relative_index(lib, window))

        def shift_mask(self, h, w, device):
            marks = lib.zeros(1, h, w, 1, device=device)
            spans = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
            for n, (rows, cols) in enumerate((r, c) for r in spans for c in spans):
                marks[:, rows, cols, :] = n
            marks = _partition(marks, window).squeeze(-1)
            mask = marks.unsqueeze(1) - marks.unsqueeze(2)
            return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)

        def forward(self, x):
            b, h, w, c = x.shape
            shifted = lib.roll(self.norm(x), shifts=(-shift, -shift), dims=(1, 2))
            windows = _partition(shifted, window)
            n = windows.shape[1]
            q, k, v = self.qkv(windows).reshape(-1, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
            attn = (q * (c // heads) ** -0.5) @ k.transpose(-2, -1) + bias.unsqueeze(0)
            mask = self.shift_mask(h, w, x.device)
            attn = attn.view(b, mask.shape[0], heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            out = (attn.view(-1, heads, n, n).softmax(-1) @ v).transpose(1, 2).reshape(-1, n, c)
            out = _reverse(self.proj(out), window, b, h, w)
            return x + lib.roll(out, shifts=(shift, shift), dims=(1, 2))

    class Swin(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, dim, kernel_size=2, stride=2)
            self.block = WindowBlock()
            self.merge = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.head = nn.Linear(2 * dim, 5)

        def forward(self, x):
            x = self.block(self.embed(x).permute(0, 2, 3, 1))
            x = F.pad(x, (0, 0, 0, x.shape[2] % 2, 0, x.shape[1] % 2))
            x = lib.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                         x[..., 1::2, 1::2, :]], -1)
            x = self.merge(x).permute(0, 3, 1, 2)
            return self.head(lib.flatten(nn.AdaptiveAvgPool2d(1)(x), 1))

    model = Swin()
    model.optimizer = lambda: lib.optim.AdamW(model.parameters(), lr=1e-2)
    return model


def classify_step(lib, model, data):
    loss = lib.nn.functional.cross_entropy(model(data["images"]), data["labels"])
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def vit(lib, device):
    """torchvision's ViT: a patchify conv, a class token expanded over the batch, encoder
    blocks checking their input with _assert and attending through batch_first
    MultiheadAttention without weights, and an MLP block of a later `_version` (whose
    checkpoints record it in their metadata)."""
    nn = lib.nn
    dim, patch = 8, 4

    class MLPBlock(nn.Sequential):
        _version = 2

        def __init__(self):
            super().__init__(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(0.0),
                             nn.Linear(2 * dim, dim), nn.Dropout(0.0))

    class EncoderBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(dim, 2, batch_first=True)
            self.mlp = MLPBlock()

        def forward(self, input):
            lib._assert(input.dim() == 3, f"Expected (batch, seq, hidden) got {input.shape}")
            x = self.ln_1(input)
            x, _ = self.self_attention(query=x, key=x, value=x, need_weights=False)
            x = x + input
            return x + self.mlp(self.ln_2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
            self.class_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.pos_embedding = nn.Parameter(lib.empty(1, 5, dim).normal_(std=0.02))
            self.layers = nn.Sequential(OrderedDict(
                (f"encoder_layer_{i}", EncoderBlock()) for i in range(2)))
            self.heads = nn.Sequential(OrderedDict(head=nn.Linear(dim, 5)))

        def forward(self, x):
            n = x.shape[0]
            x = self.conv_proj(x).reshape(n, dim, -1).permute(0, 2, 1)
            x = lib.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
            return self.heads(self.layers(x)[:, 0])

    model = ViT()
    model.optimizer = lambda: lib.optim.AdamW(model.parameters(), lr=1e-2)
    return model


def mae(lib, device):
    """MAE: patchify by reshape(shape=...) and einsum, per-sample random masking (argsort of
    noise, gather of the kept patches, the mask unshuffled by gather), mask tokens repeated
    and scattered back, and a loss on the removed patches of the normalized pixels."""
    nn = lib.nn
    dim, patch = 8, 4

    class MAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3 * patch * patch, dim)
            self.encoder = nn.TransformerEncoderLayer(dim, 2, 16, dropout=0.0, batch_first=True)
            self.mask_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.decoder_pred = nn.Linear(dim, 3 * patch * patch)

        def patchify(self, imgs):
            h = w = imgs.shape[2] // patch
            x = imgs.reshape(shape=(imgs.shape[0], 3, h, patch, w, patch))
            return lib.einsum("nchpwq->nhwpqc", x).reshape(shape=(imgs.shape[0], h * w, -1))

        def random_masking(self, x, noise, keep):
            ids_shuffle = lib.argsort(noise, dim=1)
            ids_restore = lib.argsort(ids_shuffle, dim=1)
            kept = lib.gather(x, 1, ids_shuffle[:, :keep].unsqueeze(-1).repeat(1, 1, x.shape[2]))
            mask = lib.ones(x.shape[:2], device=x.device)
            mask[:, :keep] = 0
            return kept, lib.gather(mask, 1, ids_restore), ids_restore

        def forward(self, imgs, noise):
            target = self.patchify(imgs)
            x, mask, ids_restore = self.random_masking(self.embed(target), noise, 2)
            x = self.encoder(x)
            tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] - x.shape[1], 1)
            x = lib.cat([x, tokens], dim=1)
            x = lib.gather(x, 1, ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
            target = (target - target.mean(-1, keepdim=True)) / (target.var(-1, keepdim=True)
                                                                + 1e-6) ** 0.5
            loss = ((self.decoder_pred(x) - target) ** 2).mean(dim=-1)
            return (loss * mask).sum() / mask.sum()

    model = MAE()
    model.optimizer = lambda: lib.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
    return model


def mae_step(lib, model, data):
    loss = model(data["images"], data["noise"])
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def clip(lib, device):
    """CLIP: an attention pool (multi_head_attention_forward with separate q/k/v weights and
    an output projection to the embedding width) over conv features, a text transformer
    with a causal -inf mask, QuickGELU and a LayerNorm subclass computing in float32, the eot
    token's features picked by argmax, and the symmetric contrastive loss."""
    nn, F = lib.nn, lib.nn.functional
    width, embed, context = 8, 6, 5

    class LayerNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.type(lib.float32)).type(x.dtype)

    class QuickGELU(nn.Module):
        def forward(self, x):
            return x * lib.sigmoid(1.702 * x)

    class AttentionPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.positional_embedding = nn.Parameter(lib.randn(5, width) / width ** 0.5)
            self.q_proj, self.k_proj = nn.Linear(width, width), nn.Linear(width, width)
            self.v_proj, self.c_proj = nn.Linear(width, width), nn.Linear(width, embed)

        def forward(self, x):
            x = x.reshape(x.shape[0], x.shape[1], -1).permute(2, 0, 1)
            x = lib.cat([x.mean(dim=0, keepdim=True), x]) + self.positional_embedding[:, None]
            x, _ = F.multi_head_attention_forward(
                query=x, key=x, value=x, embed_dim_to_check=width, num_heads=2,
                q_proj_weight=self.q_proj.weight, k_proj_weight=self.k_proj.weight,
                v_proj_weight=self.v_proj.weight, in_proj_weight=None,
                in_proj_bias=lib.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
                bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
                out_proj_weight=self.c_proj.weight, out_proj_bias=self.c_proj.bias,
                use_separate_proj_weight=True, training=self.training, need_weights=False)
            return x[0]

    class CLIP(nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = nn.Sequential(nn.Conv2d(3, width, 4, stride=4), nn.ReLU(),
                                        AttentionPool())
            self.token_embedding = nn.Embedding(10, width)
            self.positional_embedding = nn.Parameter(lib.randn(context, width) * 0.01)
            self.attn = nn.MultiheadAttention(width, 2)
            self.mlp = nn.Sequential(OrderedDict(c_fc=nn.Linear(width, 4 * width),
                                                 gelu=QuickGELU(),
                                                 c_proj=nn.Linear(4 * width, width)))
            self.ln_1, self.ln_final = LayerNorm(width), LayerNorm(width)
            self.text_projection = nn.Parameter(lib.randn(width, embed) * width ** -0.5)
            self.logit_scale = nn.Parameter(lib.ones([]) * np.log(1 / 0.07))
            self.register_buffer("mask", lib.empty(context, context).fill_(float("-inf"))
                                 .triu_(1), persistent=False)

        def encode_text(self, text):
            x = (self.token_embedding(text) + self.positional_embedding).permute(1, 0, 2)
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, need_weights=False, attn_mask=self.mask)[0]
            x = self.ln_final(x + self.mlp(x)).permute(1, 0, 2)
            return x[lib.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection

        def forward(self, image, text):
            image_features = self.visual(image)
            text_features = self.encode_text(text)
            image_features = image_features / image_features.norm(dim=-1, keepdim=True)
            text_features = text_features / text_features.norm(dim=-1, keepdim=True)
            return self.logit_scale.exp() * image_features @ text_features.t()

    model = CLIP()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98),
                                             eps=1e-6, weight_decay=0.2)
    return model


def clip_step(lib, model, data):
    F = lib.nn.functional
    logits = model(data["images"], data["tokens"])
    labels = lib.arange(logits.shape[0], device=logits.device)
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def _data(rng):
    """The synthetic inputs every case reads from, as numpy arrays."""
    tokens = rng.integers(1, 8, (4, 5))
    tokens[np.arange(4), rng.integers(1, 5, 4)] = 9  # one end-of-text token per caption
    return {"images": rng.standard_normal((4, 3, 8, 8)).astype(np.float32),
            "labels": rng.integers(0, 5, 4), "noise": rng.random((4, 4)).astype(np.float32),
            "tokens": tokens}


CASES = {
    "swin": (swin, classify_step),
    "vit": (vit, classify_step),
    "mae": (mae, mae_step),
    "clip": (clip, clip_step),
}


@pytest.mark.filterwarnings("ignore:torch.meshgrid", "ignore:enable_nested_tensor")
@pytest.mark.parametrize("name", list(CASES))
def test_ported_vision_model_trains_as_torch(name, rng, device):
    build, step = CASES[name]
    expected, losses = run_both(build, _data(rng), device, lambda lib, model, data: train_case(
        lib, model, data, step, steps=4))
    np.testing.assert_allclose(losses, expected, rtol=2e-4)
    assert all(math.isfinite(v) for v in expected)
