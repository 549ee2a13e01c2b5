"""Ported GPT scripts (nanoGPT, build-nanogpt, minGPT, makemore, ng-video-lecture, llama2.c):
the smallest models that use the same API, written once against a framework (`torch` or
`genesis`), trained a few steps from the same initial weights in both; losses and gradient norms
agree within 2e-4 relative in float32 (widened where torch's own float32 run drifts from its
float64 run: see nn_compare.assert_trajectory_close)."""

import copy
import dataclasses
import inspect
import math

import numpy as np
import pytest
import torch

import genesis
from helpers import TORCH_DTYPES
from nn_compare import assert_trajectory_close, copy_module

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

VOCAB, BLOCK, EMBD, HEADS, BATCH = 11, 8, 16, 2, 4


@dataclasses.dataclass
class GPTConfig:
    """nanoGPT's config, kept in its checkpoints beside the weights."""
    n_layer: int = 2
    bias: bool = True
    flash: bool = True
    gelu: str = "none"


def gpt(lib, config):
    """nanoGPT / build-nanogpt: LayerNorm with optional bias through F.layer_norm, one qkv
    projection split in three, causal attention by scaled_dot_product_attention or by a masked
    softmax over a tril buffer, GELU, tied embedding, GPT-2 init through apply()."""
    nn, F = lib.nn, lib.nn.functional

    class LayerNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(EMBD))
            self.bias = nn.Parameter(lib.zeros(EMBD)) if config.bias else None

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBD, 3 * EMBD, bias=config.bias)
            self.c_proj = nn.Linear(EMBD, EMBD, bias=config.bias)
            self.register_buffer("bias", lib.tril(lib.ones(BLOCK, BLOCK))
                                 .view(1, 1, BLOCK, BLOCK))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2)
                       for t in self.c_attn(x).split(EMBD, dim=2))
            if config.flash:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0,
                                                   is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = LayerNorm(), Attention(), LayerNorm()
            self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD, bias=config.bias),
                                     nn.GELU(approximate=config.gelu),
                                     nn.Linear(4 * EMBD, EMBD, bias=config.bias))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(VOCAB, EMBD), wpe=nn.Embedding(BLOCK, EMBD),
                drop=nn.Dropout(0.0), h=nn.ModuleList([Block() for _ in range(config.n_layer)]),
                ln_f=LayerNorm()))
            self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    lib.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                lib.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                lib.nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                           ignore_index=-1)

    return GPT()


def configure_optimizers(lib, model, lr, device_type="cpu"):
    """nanoGPT's: weight decay on the 2-D parameters only; fused on CUDA when AdamW's signature
    has it."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    fused_available = "fused" in inspect.signature(lib.optim.AdamW).parameters
    assert fused_available
    return lib.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8,
                           fused=fused_available and device_type == "cuda")


def cosine_lr(it, warmup=2, max_steps=6, max_lr=1e-2):
    if it < warmup:
        return max_lr * (it + 1) / warmup
    ratio = (it - warmup) / (max_steps - warmup)
    return 0.1 * max_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * 0.9 * max_lr


def train_gpt(lib, model, optimizer, batches, steps, start=0):
    """build-nanogpt's step: gradient accumulation over micro-batches, clip_grad_norm_, cosine
    learning rate written into the param groups. Returns the losses and gradient norms."""
    losses, norms = [], []
    for step in range(start, start + steps):
        optimizer.zero_grad(set_to_none=True)
        loss_accum = 0.0
        for x, y in batches:
            _, loss = model(x, y)
            loss = loss / len(batches)
            loss_accum += loss.detach()
            loss.backward()
        norms.append(float(lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
        for group in optimizer.param_groups:
            group["lr"] = cosine_lr(step)
        optimizer.step()
        losses.append(loss_accum.item())
    return losses, norms


def _tokens(rng, shape, high=VOCAB):
    return rng.integers(0, high, shape)


def _pairs(lib, arrays, device="cpu"):
    return [tuple(lib.tensor(a, device=device) for a in pair) for pair in arrays]


def _batches(rng, n=2):
    data = _tokens(rng, (n, BATCH, BLOCK + 1))
    return [(d[:, :-1], d[:, 1:]) for d in data]


def _gpt_pair(config, device):
    torch_model = gpt(torch, config)
    return torch_model, copy_module(gpt(genesis, config), torch_model, device)


@pytest.mark.parametrize("config", [GPTConfig(), GPTConfig(bias=False, gelu="tanh"),
                                    GPTConfig(flash=False)], ids=["nanogpt", "build", "manual"])
def test_gpt_trains_as_torch(config, rng, device):
    torch_model, model = _gpt_pair(config, device)
    exact_model = copy.deepcopy(torch_model).double()
    batches = _batches(rng)
    exact = train_gpt(torch, exact_model, configure_optimizers(torch, exact_model, 1e-2),
                      _pairs(torch, batches), 6)
    expected = train_gpt(torch, torch_model, configure_optimizers(torch, torch_model, 1e-2),
                         _pairs(torch, batches), 6)
    got = train_gpt(genesis, model, configure_optimizers(genesis, model, 1e-2, device),
                    _pairs(genesis, batches, device), 6)
    assert_trajectory_close(got, expected, exact)
    assert expected[0][-1] < expected[0][0]


def _checkpoint(model, optimizer, config, iter_num, best_val_loss):
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "model_args": dict(n_layer=config.n_layer, bias=config.bias), "iter_num": iter_num,
            "best_val_loss": best_val_loss, "config": config}


def test_checkpoint_resume_continues_the_run(rng, device, tmp_path):
    """nanoGPT's train.py: save model, optimizer, args and config; resume from a compiled
    model's state dict ('_orig_mod.' stripped) and go on exactly as the unbroken run."""
    config = GPTConfig()
    torch_model, model = _gpt_pair(config, device)
    batches = _pairs(genesis, _batches(rng), device)
    expected = train_gpt(torch, torch_model, configure_optimizers(torch, torch_model, 1e-2),
                         _pairs(torch, [(x.cpu().numpy(), y.cpu().numpy()) for x, y in batches]),
                         4)[0]
    compiled = genesis.compile(model)
    optimizer = configure_optimizers(genesis, model, 1e-2, device)
    first = train_gpt(genesis, compiled, optimizer, batches, 2)[0]
    genesis.save(_checkpoint(compiled, optimizer, config, 2, genesis.tensor(first[-1])),
                 tmp_path / "ckpt.pt")

    checkpoint = genesis.load(tmp_path / "ckpt.pt", map_location=device, weights_only=False)
    assert checkpoint["config"] == config and checkpoint["iter_num"] == 2
    resumed = gpt(genesis, GPTConfig(**checkpoint["model_args"])).to(device)
    state_dict = checkpoint["model"]
    for k in list(state_dict):
        if k.startswith("_orig_mod."):
            state_dict[k[len("_orig_mod."):]] = state_dict.pop(k)
    resumed.load_state_dict(state_dict)
    optimizer = configure_optimizers(genesis, resumed, 1e-2, device)
    optimizer.load_state_dict(checkpoint["optimizer"])
    rest = train_gpt(genesis, resumed, optimizer, batches, 2, start=checkpoint["iter_num"])[0]
    np.testing.assert_allclose(first + rest, expected, rtol=2e-4)


def _sample_step(lib, model, idx, top_k, temperature=0.8):
    """nanoGPT's generate step up to the probabilities: last position, temperature, top-k
    masking by boolean index assignment, softmax."""
    logits, _ = model(idx)
    logits = logits[:, -1, :] / temperature
    v, _ = lib.topk(logits, min(top_k, logits.size(-1)))
    logits[logits < v[:, [-1]]] = -float("Inf")
    return lib.nn.functional.softmax(logits, dim=-1)


def test_sampling_as_torch(rng, device):
    torch_model, model = _gpt_pair(GPTConfig(), device)
    idx = _tokens(rng, (3, 5))
    with torch.no_grad():
        expected = _sample_step(torch, torch_model, torch.tensor(idx), 4)
    with genesis.no_grad():
        probs = _sample_step(genesis, model, genesis.tensor(idx, device=device), 4)
        np.testing.assert_allclose(probs.cpu().numpy(), expected.numpy(), rtol=2e-4, atol=1e-7)
        assert ((probs > 0).sum(-1) == 4).all()
        generator = genesis.Generator(device=device)
        generator.manual_seed(42)
        topk_probs, topk_indices = genesis.topk(probs, 4, dim=-1)
        ix = genesis.multinomial(topk_probs, 1, generator=generator)
        col = genesis.gather(topk_indices, -1, ix)
        assert col.shape == (3, 1) and col.dtype is genesis.int64
        assert (probs.gather(-1, col) > 0).all()


def test_autocast_bfloat16_as_torch(rng, device):
    """build-nanogpt's forward under torch.autocast(device_type=..., dtype=bfloat16), with
    float32 matmul precision set to 'high' (restored after); torch's reference runs on the CPU,
    where autocast gives the same dtypes (bfloat16 logits, a float32 loss)."""
    torch_model, model = _gpt_pair(GPTConfig(bias=False, gelu="tanh"), device)
    x, y = _batches(rng, 1)[0]
    precision = genesis.get_float32_matmul_precision()
    genesis.set_float32_matmul_precision("high")
    try:
        with genesis.autocast(device_type=genesis.device(device).type, dtype=genesis.bfloat16):
            logits, loss = model(genesis.tensor(x, device=device), genesis.tensor(y, device=device))
    finally:
        genesis.set_float32_matmul_precision(precision)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        t_logits, t_loss = torch_model(torch.tensor(x), torch.tensor(y))
    assert TORCH_DTYPES[logits.dtype] is t_logits.dtype and TORCH_DTYPES[loss.dtype] is t_loss.dtype
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=2e-2)
    loss.backward()
    assert model.lm_head.weight.grad.dtype is genesis.float32


def mingpt_decay_sets(lib, model):
    """minGPT's configure_optimizers: parameter names sorted into decay / no decay by the type
    of the module that owns them, found through named_modules and named_parameters."""
    decay, no_decay = set(), set()
    for mn, m in model.named_modules():
        for pn, _ in m.named_parameters():
            fpn = f"{mn}.{pn}" if mn else pn
            if pn.endswith("bias"):
                no_decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, lib.nn.Linear):
                decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, (lib.nn.LayerNorm, lib.nn.Embedding)):
                no_decay.add(fpn)
    return decay, no_decay


def test_mingpt_parameter_groups_and_greedy_generation(rng, device):
    torch_model, model = _gpt_pair(GPTConfig(), device)
    assert mingpt_decay_sets(genesis, model) == mingpt_decay_sets(torch, torch_model)
    idx = _tokens(rng, (2, 3))
    with torch.no_grad(), genesis.no_grad():
        g, t = genesis.tensor(idx, device=device), torch.tensor(idx)
        for _ in range(4):
            _, g_next = genesis.topk(genesis.softmax(model(g)[0][:, -1, :], -1), k=1, dim=-1)
            _, t_next = torch.topk(torch.softmax(torch_model(t)[0][:, -1, :], -1), k=1, dim=-1)
            g, t = genesis.cat((g, g_next), dim=1), torch.cat((t, t_next), dim=1)
    assert g.tolist() == t.tolist()


def test_mingpt_infinite_sampler_loader():
    """minGPT's and makemore's endless loader: RandomSampler(replacement=True,
    num_samples=int(1e10)) under a DataLoader, iterated lazily."""
    data = genesis.utils.data
    dataset = data.TensorDataset(genesis.arange(10), genesis.arange(10) * 2)
    loader = data.DataLoader(dataset, batch_size=4, shuffle=False, num_workers=0,
                             sampler=data.RandomSampler(dataset, replacement=True,
                                                        num_samples=int(1e10)))
    it = iter(loader)
    for _ in range(3):
        x, y = next(it)
        assert x.shape == (4,) and (y == 2 * x).all()
    assert len(loader) == int(1e10) // 4


def makemore(lib, kind):
    """makemore's Bigram (a logits table indexed by tokens), MLP (torch.roll and a write into
    the rolled indices), RNN and GRU cells (an expanded start parameter, stack over time) and
    BoW (a masked softmax over zeros)."""
    nn, F = lib.nn, lib.nn.functional
    n_embd = 8

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.logits = nn.Parameter(lib.zeros((VOCAB, VOCAB)))

        def forward(self, idx):
            return self.logits[idx]

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB + 1, n_embd)
            self.mlp = nn.Sequential(nn.Linear(3 * n_embd, 16), nn.Tanh(), nn.Linear(16, VOCAB))

        def forward(self, idx):
            embs = []
            for _ in range(3):
                embs.append(self.wte(idx))
                idx = lib.roll(idx, 1, 1)
                idx[:, 0] = VOCAB
            return self.mlp(lib.cat(embs, -1))

    class GRUCell(nn.Module):
        def __init__(self):
            super().__init__()
            self.xh_to_z, self.xh_to_r, self.xh_to_hbar = (nn.Linear(2 * n_embd, n_embd)
                                                          for _ in range(3))

        def forward(self, xt, hprev):
            xh = lib.cat([xt, hprev], dim=1)
            r = F.sigmoid(self.xh_to_r(xh))
            hbar = F.tanh(self.xh_to_hbar(lib.cat([xt, r * hprev], dim=1)))
            z = F.sigmoid(self.xh_to_z(xh))
            return (1 - z) * hprev + z * hbar

    class RNNCell(nn.Module):
        def __init__(self):
            super().__init__()
            self.xh_to_h = nn.Linear(2 * n_embd, n_embd)

        def forward(self, xt, hprev):
            return F.tanh(self.xh_to_h(lib.cat([xt, hprev], dim=1)))

    class RNN(nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.start = nn.Parameter(lib.zeros(1, n_embd))
            self.wte, self.cell = nn.Embedding(VOCAB, n_embd), cell
            self.lm_head = nn.Linear(n_embd, VOCAB)

        def forward(self, idx):
            emb = self.wte(idx)
            hprev, hiddens = self.start.expand((idx.size(0), -1)), []
            for i in range(idx.size(1)):
                hprev = self.cell(emb[:, i, :], hprev)
                hiddens.append(hprev)
            return self.lm_head(lib.stack(hiddens, 1))

    class BoW(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, n_embd), nn.Embedding(BLOCK, n_embd)
            self.register_buffer("bias", lib.tril(lib.ones(BLOCK, BLOCK)).view(1, BLOCK, BLOCK))
            self.lm_head = nn.Linear(n_embd, VOCAB)

        def forward(self, idx):
            B, T = idx.size()
            pos = lib.arange(0, T, dtype=lib.long, device=idx.device).unsqueeze(0)
            x = self.wte(idx) + self.wpe(pos)
            att = lib.zeros((B, T, T), device=x.device)
            att = F.softmax(att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf")), dim=-1)
            return self.lm_head(x + att @ x)

    return {"bigram": Bigram, "mlp": MLP, "bow": BoW, "rnn": lambda: RNN(RNNCell()),
            "gru": lambda: RNN(GRUCell())}[kind]()


def train_makemore(lib, model, x, y, steps):
    """makemore's loop: AdamW with weight decay, loss masked by ignore_index=-1 targets,
    zero_grad on the model; then evaluate() under inference_mode."""
    optimizer = lib.optim.AdamW(model.parameters(), lr=5e-2, weight_decay=0.01,
                                betas=(0.9, 0.99), eps=1e-8)
    losses = []
    for _ in range(steps):
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1),
                                               ignore_index=-1)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with lib.inference_mode():
        model.eval()
        logits = model(x)
        losses.append(lib.nn.functional.cross_entropy(
            logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1).item())
    return losses


@pytest.mark.parametrize("kind", ["bigram", "mlp", "rnn", "gru", "bow"])
def test_makemore_models_train_as_torch(kind, rng, device):
    torch_model = makemore(torch, kind)
    model = copy_module(makemore(genesis, kind), torch_model, device)
    x = _tokens(rng, (BATCH, BLOCK))
    y = _tokens(rng, (BATCH, BLOCK))
    y[:, -2:] = -1
    expected = train_makemore(torch, torch_model, torch.tensor(x), torch.tensor(y), 4)
    got = train_makemore(genesis, model, genesis.tensor(x, device=device),
                         genesis.tensor(y, device=device), 4)
    np.testing.assert_allclose(got, expected, rtol=2e-4)


def lecture_gpt(lib):
    """ng-video-lecture's gpt.py: one module per head with its own tril buffer, heads joined by
    cat, k.shape[-1]**-0.5 scaling, a ReLU feed-forward with Dropout."""
    nn, F = lib.nn, lib.nn.functional
    head_size = EMBD // HEADS

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.key, self.query, self.value = (nn.Linear(EMBD, head_size, bias=False)
                                                for _ in range(3))
            self.register_buffer("tril", lib.tril(lib.ones(BLOCK, BLOCK)))
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            B, T, C = x.shape
            k, q = self.key(x), self.query(x)
            wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
            wei = F.softmax(wei.masked_fill(self.tril[:T, :T] == 0, float("-inf")), dim=-1)
            return self.dropout(wei) @ self.value(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([Head() for _ in range(HEADS)])
            self.proj = nn.Linear(EMBD, EMBD)
            self.ffwd = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.ReLU(),
                                      nn.Linear(4 * EMBD, EMBD), nn.Dropout(0.0))
            self.ln1, self.ln2 = nn.LayerNorm(EMBD), nn.LayerNorm(EMBD)

        def forward(self, x):
            x = x + self.proj(lib.cat([h(self.ln1(x)) for h in self.heads], dim=-1))
            return x + self.ffwd(self.ln2(x))

    class GPTLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.token_embedding_table = nn.Embedding(VOCAB, EMBD)
            self.position_embedding_table = nn.Embedding(BLOCK, EMBD)
            self.blocks = nn.Sequential(Block(), Block())
            self.ln_f, self.lm_head = nn.LayerNorm(EMBD), nn.Linear(EMBD, VOCAB)

        def forward(self, idx, targets):
            B, T = idx.shape
            pos = self.position_embedding_table(lib.arange(T, device=idx.device))
            logits = self.lm_head(self.ln_f(self.blocks(self.token_embedding_table(idx) + pos)))
            B, T, C = logits.shape
            return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))

    return GPTLanguageModel()


def estimate_loss(lib, model, batches):
    """ng-video-lecture's estimate_loss: losses written into a zeros tensor by item(), their
    mean formatted as the script prints it."""
    model.eval()
    with lib.no_grad():
        losses = lib.zeros(len(batches))
        for k, (x, y) in enumerate(batches):
            losses[k] = model(x, y)[1].item()
    model.train()
    return f"{losses.mean():.4f}"


def test_lecture_gpt_trains_as_torch(rng, device):
    torch_model = lecture_gpt(torch)
    model = copy_module(lecture_gpt(genesis), torch_model, device)
    data = _batches(rng, 3)
    t_batches, g_batches = _pairs(torch, data), _pairs(genesis, data, device)
    results = []
    for lib, m, batches in ((torch, torch_model, t_batches), (genesis, model, g_batches)):
        optimizer = lib.optim.AdamW(m.parameters(), lr=1e-2)
        losses = []
        for x, y in batches * 2:
            _, loss = m(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results.append((losses, estimate_loss(lib, m, batches)))
    (expected, t_text), (got, g_text) = results
    np.testing.assert_allclose(got, expected, rtol=2e-4)
    assert abs(float(g_text) - float(t_text)) <= 1e-4


def early_mingpt(lib):
    """minGPT's first model.py: separate key/query/value projections, a learned pos_emb
    Parameter sliced to the sequence, -1e10 as the mask value, init through .data's in-place
    fills, and forward decorated with the CUDA autocast of torch.cuda.amp (off without CUDA)."""
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.key, self.query, self.value, self.proj = (nn.Linear(EMBD, EMBD)
                                                           for _ in range(4))
            self.register_buffer("mask", lib.tril(lib.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

        @lib.cuda.amp.autocast()
        def forward(self, x):
            B, T, C = x.size()
            k, q, v = (f(x).view(B, T, HEADS, C // HEADS).transpose(1, 2)
                       for f in (self.key, self.query, self.value))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.mask[:, :, :T, :T] == 0, -1e10), dim=-1)
            return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(VOCAB, EMBD)
            self.pos_emb = nn.Parameter(lib.zeros(1, BLOCK, EMBD))
            self.ln1, self.attn, self.ln_f = nn.LayerNorm(EMBD), Attention(), nn.LayerNorm(EMBD)
            self.head = nn.Linear(EMBD, VOCAB, bias=False)
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        @lib.cuda.amp.autocast()
        def forward(self, idx, targets):
            x = self.tok_emb(idx) + self.pos_emb[:, :idx.size(1), :]
            logits = self.head(self.ln_f(x + self.attn(self.ln1(x))))
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


@pytest.mark.filterwarnings("ignore:`(torch|genesis).cuda.amp.autocast:FutureWarning")
@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_early_mingpt_trains_as_torch(rng):
    torch_model = early_mingpt(torch)
    model = copy_module(early_mingpt(genesis), torch_model)
    data = _batches(rng, 3)
    results = []
    for lib, m, batches in ((torch, torch_model, _pairs(torch, data)),
                            (genesis, model, _pairs(genesis, data))):
        decay, no_decay = mingpt_decay_sets(lib, m)
        params = dict(m.named_parameters())
        optimizer = lib.optim.AdamW([
            {"params": [params[n] for n in sorted(decay)], "weight_decay": 0.1},
            {"params": [params[n] for n in sorted(no_decay | {"pos_emb"})], "weight_decay": 0.0},
        ], lr=1e-2, betas=(0.9, 0.95))
        losses = []
        for x, y in batches * 2:
            _, loss = m(x, y)
            m.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
        results.append(losses)
    np.testing.assert_allclose(results[1], results[0], rtol=2e-4)


def llama2c(lib, kv_heads=1):
    """llama2.c's model.py: RMSNorm through rsqrt in float32 then type_as, rotary embeddings
    as cos/sin tables (outer, unbind of (..., -1, 2) pairs, stack and flatten(3)), grouped
    keys and values repeated by a None-indexed expand, causal scaled_dot_product_attention,
    a SwiGLU feed-forward, tied embedding, scaled init of w3/wo by parameter name, the loss
    kept in last_loss and only the last position's logits without targets."""
    nn, F = lib.nn, lib.nn.functional
    head_dim = EMBD // HEADS

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(EMBD))

        def forward(self, x):
            x32 = x.float()
            normed = x32 * lib.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)
            return normed.type_as(x) * self.weight

    def rotate(x, cos, sin):
        x_r, x_i = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
        cos, sin = (t.view(1, x_r.shape[1], 1, x_r.shape[-1]) for t in (cos, sin))
        out = lib.stack([x_r * cos - x_i * sin, x_r * sin + x_i * cos], dim=-1).flatten(3)
        return out.type_as(x)

    def repeat_kv(x, n_rep):
        bs, slen, n_kv, hd = x.shape
        return x if n_rep == 1 else (x[:, :, :, None, :].expand(bs, slen, n_kv, n_rep, hd)
                                     .reshape(bs, slen, n_kv * n_rep, hd))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = nn.Linear(EMBD, EMBD, bias=False)
            self.wk, self.wv = (nn.Linear(EMBD, kv_heads * head_dim, bias=False)
                                for _ in range(2))
            self.wo = nn.Linear(EMBD, EMBD, bias=False)
            self.w1, self.w3 = (nn.Linear(EMBD, 3 * EMBD, bias=False) for _ in range(2))
            self.w2 = nn.Linear(3 * EMBD, EMBD, bias=False)
            self.attention_norm, self.ffn_norm = RMSNorm(), RMSNorm()

        def forward(self, x, cos, sin):
            bsz, seqlen, _ = x.shape
            h = self.attention_norm(x)
            q = self.wq(h).view(bsz, seqlen, HEADS, head_dim)
            k, v = (f(h).view(bsz, seqlen, kv_heads, head_dim) for f in (self.wk, self.wv))
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            k, v = repeat_kv(k, HEADS // kv_heads), repeat_kv(v, HEADS // kv_heads)
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                 v.transpose(1, 2), attn_mask=None,
                                                 dropout_p=0.0, is_causal=True)
            x = x + self.wo(out.transpose(1, 2).contiguous().view(bsz, seqlen, -1))
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(VOCAB, EMBD)
            self.layers = nn.ModuleList([Block(), Block()])
            self.norm, self.output = RMSNorm(), nn.Linear(EMBD, VOCAB, bias=False)
            self.tok_embeddings.weight = self.output.weight
            freqs = 1.0 / (10000.0 ** (lib.arange(0, head_dim, 2).float() / head_dim))
            angles = lib.outer(lib.arange(BLOCK), freqs).float()
            self.register_buffer("freqs_cos", lib.cos(angles), persistent=False)
            self.register_buffer("freqs_sin", lib.sin(angles), persistent=False)
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("w3.weight") or pn.endswith("wo.weight"):
                    lib.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(4))
            self.last_loss = None

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                lib.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, tokens, targets=None):
            seqlen = tokens.shape[1]
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h, self.freqs_cos[:seqlen], self.freqs_sin[:seqlen])
            h = self.norm(h)
            if targets is None:
                self.last_loss = None
                return self.output(h[:, [-1], :])
            logits = self.output(h)
            self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                             ignore_index=-1)
            return logits

    return Transformer()


def train_llama2c(lib, model, batches, steps):
    """llama2.c's train.py step: the loss read back from the model's last_loss, gradient
    accumulation through a disabled GradScaler, unscale_ and clipping, parameter groups decayed
    by p.dim(). Returns the losses and the greedy continuation."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = lib.optim.AdamW([{"params": [p for p in params if p.dim() >= 2],
                                  "weight_decay": 0.1},
                                 {"params": [p for p in params if p.dim() < 2],
                                  "weight_decay": 0.0}], lr=1e-2, betas=(0.9, 0.95))
    scaler = lib.amp.GradScaler("cpu", enabled=False)
    losses = []
    for _ in range(steps):
        for x, y in batches:
            model(x, y)
            scaler.scale(model.last_loss / len(batches)).backward()
        scaler.unscale_(optimizer)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(model.last_loss.item())
    model.eval()
    with lib.inference_mode():
        idx = batches[0][0][:, :2]
        for _ in range(3):
            _, idx_next = lib.topk(model(idx)[:, -1, :], k=1, dim=-1)
            idx = lib.cat((idx, idx_next), dim=1)
    return losses, idx.tolist()


@pytest.mark.parametrize("kv_heads", [1, HEADS])
def test_llama2c_trains_as_torch(kv_heads, rng, device):
    torch_model = llama2c(torch, kv_heads)
    model = copy_module(llama2c(genesis, kv_heads), torch_model, device)
    exact_model = copy.deepcopy(torch_model).double()
    data = _batches(rng)
    exact, _ = train_llama2c(torch, exact_model, _pairs(torch, data), 4)
    expected, t_idx = train_llama2c(torch, torch_model, _pairs(torch, data), 4)
    got, g_idx = train_llama2c(genesis, model, _pairs(genesis, data, device), 4)
    assert_trajectory_close(got, expected, exact)
    assert g_idx == t_idx
