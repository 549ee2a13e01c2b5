"""Ported NLP and speech training scripts (LoRA fine-tuning, BERT masked-language-model
pretraining, T5 relative position biases, ALiBi, a DeepSpeech2-like CTC model, Tacotron 2's
location-sensitive attention, a character-level seq2seq): for each, the smallest model using the
API its reference code uses, written once against a framework (`torch` or `genesis`) and trained
a few steps from the same initial weights on the same synthetic data in both; the losses must
agree within 2e-4 relative in float32, and so must what the case keeps beside them (merged
weights, learning rates, decoded transcripts). Random draws of the references (masking draws,
replacement tokens, teacher-forcing coins) come with the data."""

import math

import numpy as np
import pytest

from nn_compare import assert_case_trains_as_torch

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

STEPS = 4


# LoRA (loralib / peft): a low-rank update beside a frozen Linear, injected by name into a
# small pretrained model, trained alone, merged into the base weights and unmerged again.

def lora(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class LoRALinear(nn.Module):
        def __init__(self, base, r=4, lora_alpha=8, lora_dropout=0.0):
            super().__init__()
            self.base_layer = base
            self.r, self.scaling = r, lora_alpha / r
            self.lora_A = nn.Parameter(base.weight.new_zeros((r, base.in_features)))
            self.lora_B = nn.Parameter(base.weight.new_zeros((base.out_features, r)))
            self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0 else nn.Identity()
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B)
            self.base_layer.requires_grad_(False)
            self.merged = False

        def delta_weight(self):
            return (self.lora_B @ self.lora_A) * self.scaling

        def merge(self):
            if not self.merged:
                self.base_layer.weight.data += self.delta_weight()
                self.merged = True

        def unmerge(self):
            if self.merged:
                self.base_layer.weight.data -= self.delta_weight()
                self.merged = False

        def forward(self, x):
            result = self.base_layer(x)
            if not self.merged:
                result = result + (self.lora_dropout(x) @ self.lora_A.transpose(0, 1)
                                   @ self.lora_B.transpose(0, 1)) * self.scaling
            return result

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.q_proj, self.k_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.v_proj, self.out_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.ln = nn.LayerNorm(dim)
            self.fc = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            b, t, c = x.shape
            h = self.ln(x)
            q, k, v = (p(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.fc(x)

    class TinyLM(nn.Module):
        def __init__(self, vocab=11, dim=16, heads=2):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList([Block(dim, heads), Block(dim, heads)])
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx):
            x = self.embed(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    model = TinyLM()
    targets = ("q_proj", "v_proj")
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear) and name.split(".")[-1] in targets:
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name), child, LoRALinear(module))
    for n, p in model.named_parameters():
        if "lora_" not in n:
            p.requires_grad = False
    model.optimizer = lambda: lib.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.01)
    return model


def lora_keeps(lib, model, data):
    """The LoRA parameters' state dict (its keys, in order, as a tensor of their lengths), the
    frozen weights' gradients (none), outputs unmerged, merged and unmerged again, and the merged
    base weight."""
    lora_state = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    names = lib.tensor([len(k) for k in lora_state])
    frozen = [p.grad is None for n, p in model.named_parameters() if "lora_" not in n]
    model.eval()
    layers = [m for m in model.modules() if hasattr(m, "merge")]
    with lib.no_grad():
        before = model(data["tokens"])
        for m in layers:
            m.merge()
        merged_weight = layers[0].base_layer.weight.clone()
        merged = model(data["tokens"])
        for m in layers:
            m.unmerge()
        after = model(data["tokens"])
    return [names, lib.tensor(frozen), before, merged, after, merged_weight,
            *lora_state.values()]


# BERT masked-language-model pretraining from scratch (HuggingFace's data collator and
# run_mlm's optimizer setup): word, position and segment embeddings, a post-norm
# TransformerEncoder, a prediction head tied to the word embeddings, the 80/10/10 masking,
# AdamW without decay on biases and LayerNorm weights, linear warmup then decay by LambdaLR.

VOCAB, MASK_ID, PAD_ID, CLS_ID, SEP_ID = 20, 3, 0, 1, 2


def bert(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class BertEmbeddings(nn.Module):
        def __init__(self, vocab, hidden, max_positions=16, type_vocab=2):
            super().__init__()
            self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=PAD_ID)
            self.position_embeddings = nn.Embedding(max_positions, hidden)
            self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
            self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
            self.dropout = nn.Dropout(0.0)
            self.register_buffer("position_ids", lib.arange(max_positions).expand((1, -1)),
                                 persistent=False)

        def forward(self, input_ids, token_type_ids):
            position_ids = self.position_ids[:, :input_ids.size(1)]
            embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                          + self.token_type_embeddings(token_type_ids))
            return self.dropout(self.LayerNorm(embeddings))

    class BertForMaskedLM(nn.Module):
        def __init__(self, vocab=VOCAB, hidden=16, heads=2, layers=2):
            super().__init__()
            self.embeddings = BertEmbeddings(vocab, hidden)
            layer = nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=4 * hidden,
                                               dropout=0.0, activation="gelu",
                                               layer_norm_eps=1e-12, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.transform = nn.Linear(hidden, hidden)
            self.transform_LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
            self.decoder = nn.Linear(hidden, vocab, bias=False)
            self.bias = nn.Parameter(lib.zeros(vocab))
            self.decoder.weight = self.embeddings.word_embeddings.weight
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if module.padding_idx is not None:
                    module.weight.data[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def forward(self, input_ids, token_type_ids, attention_mask):
            h = self.embeddings(input_ids, token_type_ids)
            h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
            h = self.transform_LayerNorm(F.gelu(self.transform(h)))
            return self.decoder(h) + self.bias

    model = BertForMaskedLM()
    no_decay = ["bias", "LayerNorm.weight", "norm1.weight", "norm2.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters()
                    if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    model.optimizer = lambda: lib.optim.AdamW(groups, lr=5e-3, eps=1e-6)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.LambdaLR(
        opt, _linear_schedule_with_warmup(2, STEPS + 1))
    return model


def _linear_schedule_with_warmup(num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    return lr_lambda


def _mask_tokens(lib, inputs, draws, mlm_probability=0.15):
    """The collator's masking; each torch.bernoulli's uniforms come in `draws`, and the
    bernoulli of the probabilities they select (zeros and ones) stands for the draw."""
    labels = inputs.clone()
    probability_matrix = lib.full(labels.shape, mlm_probability, device=inputs.device)
    special_tokens_mask = (inputs == CLS_ID) | (inputs == SEP_ID) | (inputs == PAD_ID)
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = lib.bernoulli((draws[0] < probability_matrix).float()).bool()
    labels[~masked_indices] = -100
    indices_replaced = lib.bernoulli(
        (draws[1] < lib.full(labels.shape, 0.8, device=inputs.device)).to(lib.float32)
    ).bool() & masked_indices
    inputs = inputs.clone()
    inputs[indices_replaced] = MASK_ID
    indices_random = (lib.bernoulli((draws[2] < 0.5).float()).bool() & masked_indices
                      & ~indices_replaced)
    random_words = draws[3].to(lib.long)
    inputs[indices_random] = random_words[indices_random]
    return inputs, labels


def bert_step(lib, model, data):
    step = getattr(model, "global_step", 0)
    inputs, labels = _mask_tokens(lib, data["sentences"], data["mask_draws"][step])
    attention_mask = (data["sentences"] != PAD_ID).long()
    logits = model(inputs, data["segments"], attention_mask)
    loss = lib.nn.CrossEntropyLoss()(logits.view(-1, VOCAB), labels.view(-1))
    loss.backward()
    model.grad_norms = getattr(model, "grad_norms", []) + [
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)]
    model.opt.step()
    model.sched.step()
    model.opt.zero_grad()
    model.global_step = step + 1
    return loss


def bert_keeps(lib, model, data):
    model.eval()
    with lib.no_grad():
        logits = model(data["sentences"], data["segments"], (data["sentences"] != PAD_ID).long())
    return [lib.stack(model.grad_norms), lib.tensor(model.sched.get_last_lr()),
            logits.argmax(-1), logits]


# T5's relative position bias: relative positions bucketed (exact below half the buckets,
# logarithmic above, capped), bidirectional in the encoder and causal in the decoder, a learned
# bias per bucket and head added to unscaled attention scores; T5's RMS LayerNorm.

def _relative_position_bucket(lib, relative_position, bidirectional=True, num_buckets=32,
                              max_distance=128):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(lib.long) * num_buckets
        relative_position = lib.abs(relative_position)
    else:
        relative_position = -lib.min(relative_position, lib.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        lib.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(lib.long)
    relative_position_if_large = lib.min(
        relative_position_if_large, lib.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += lib.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_bias(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class T5LayerNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            variance = hidden_states.to(lib.float32).pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * lib.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states

    class T5Attention(nn.Module):
        def __init__(self, d_model, n_heads, is_decoder, num_buckets=8, max_distance=16):
            super().__init__()
            self.is_decoder, self.n_heads = is_decoder, n_heads
            self.num_buckets, self.max_distance = num_buckets, max_distance
            self.d_kv = d_model // n_heads
            self.q = nn.Linear(d_model, d_model, bias=False)
            self.k = nn.Linear(d_model, d_model, bias=False)
            self.v = nn.Linear(d_model, d_model, bias=False)
            self.o = nn.Linear(d_model, d_model, bias=False)
            self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

        def compute_bias(self, query_length, key_length, device=None):
            context_position = lib.arange(query_length, dtype=lib.long, device=device)[:, None]
            memory_position = lib.arange(key_length, dtype=lib.long, device=device)[None, :]
            relative_position = memory_position - context_position
            bucket = _relative_position_bucket(lib, relative_position,
                                               bidirectional=not self.is_decoder,
                                               num_buckets=self.num_buckets,
                                               max_distance=self.max_distance)
            values = self.relative_attention_bias(bucket)
            return values.permute([2, 0, 1]).unsqueeze(0)

        def forward(self, hidden_states, mask=None):
            batch_size, seq_length = hidden_states.shape[:2]

            def shape(states):
                return states.view(batch_size, -1, self.n_heads, self.d_kv).transpose(1, 2)

            q, k, v = (shape(p(hidden_states)) for p in (self.q, self.k, self.v))
            scores = lib.matmul(q, k.transpose(3, 2))
            position_bias = self.compute_bias(seq_length, seq_length,
                                              device=scores.device)
            if mask is not None:
                position_bias = position_bias + mask
            scores += position_bias
            attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
            out = lib.matmul(attn_weights, v).transpose(1, 2).contiguous()
            return self.o(out.view(batch_size, -1, self.n_heads * self.d_kv))

    class T5Layer(nn.Module):
        def __init__(self, d_model, n_heads, is_decoder):
            super().__init__()
            self.layer_norm = T5LayerNorm(d_model)
            self.attention = T5Attention(d_model, n_heads, is_decoder)
            self.ff_norm = T5LayerNorm(d_model)
            self.wi = nn.Linear(d_model, 2 * d_model, bias=False)
            self.wo = nn.Linear(2 * d_model, d_model, bias=False)

        def forward(self, x, mask=None):
            x = x + self.attention(self.layer_norm(x), mask)
            return x + self.wo(F.relu(self.wi(self.ff_norm(x))))

    class TinyT5(nn.Module):
        def __init__(self, vocab=11, d_model=16, n_heads=2):
            super().__init__()
            self.shared = nn.Embedding(vocab, d_model)
            self.encoder = T5Layer(d_model, n_heads, is_decoder=False)
            self.decoder = T5Layer(d_model, n_heads, is_decoder=True)
            self.final_layer_norm = T5LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            causal = lib.triu(lib.full((t, t), lib.finfo(lib.float32).min, device=idx.device),
                              diagonal=1)
            h = self.encoder(self.shared(idx))
            h = self.decoder(h, causal[None, None])
            return self.lm_head(self.final_layer_norm(h) * (16 ** -0.5))

    model = TinyT5()
    model.optimizer = lambda: lib.optim.Adafactor(model.parameters(), lr=1e-2)
    return model


def _lm_step(lib, model, data, key="long_tokens"):
    """Next-token cross entropy over the batch `data[key]`, one optimizer step."""
    inputs, targets = data[key][:, :-1], data[key][:, 1:]
    loss = lib.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
    model.opt.zero_grad(set_to_none=True)
    loss.backward()
    model.opt.step()
    return loss


def t5_bias_keeps(lib, model, data):
    relative = lib.arange(20, device=data["long_tokens"].device)[None, :] - lib.arange(
        20, device=data["long_tokens"].device)[:, None]
    return [_relative_position_bucket(lib, relative, True, 8, 16),
            _relative_position_bucket(lib, relative, False, 8, 16),
            model.encoder.attention.compute_bias(12, 12, device=data["long_tokens"].device),
            model.decoder.attention.compute_bias(5, 12, device=data["long_tokens"].device)]


# ALiBi (Press et al.): no position embeddings; each head's scores get a linear penalty of the
# query-key distance, its slope from the geometric sequence of the power-of-two rule (heads not
# a power of two interleave the next power's slopes); a causal mask of -inf above the diagonal.

def _alibi_slopes(n):
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _alibi_slopes(2 * closest)[0::2][:n - closest]


def alibi(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class AlibiAttention(nn.Module):
        def __init__(self, dim, heads, max_len=16):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.register_buffer("slopes", lib.Tensor(_alibi_slopes(heads)))
            self.register_buffer("future_mask", lib.triu(
                lib.full([max_len, max_len], float("-inf")), 1))

        def alibi(self, t, device):
            context_position = lib.arange(t, device=device)[:, None]
            memory_position = lib.arange(t, device=device)[None, :]
            relative_position = (memory_position - context_position).abs() * -1
            return self.slopes[:, None, None] * relative_position.unsqueeze(0)

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).permute(0, 2, 1, 3) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att + self.alibi(t, x.device) + self.future_mask[:t, :t]
            y = F.softmax(att, dim=-1) @ v
            return self.proj(y.permute(0, 2, 1, 3).reshape(b, t, c))

    class AlibiLM(nn.Module):
        def __init__(self, vocab=11, dim=24, heads=6):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn = AlibiAttention(dim, heads)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * dim, dim))
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx):
            x = self.tok(idx)
            x = x + self.attn(self.ln1(x))
            return self.head(x + self.mlp(self.ln2(x)))

    model = AlibiLM()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=3e-3)
    return model


def alibi_keeps(lib, model, data):
    return [model.attn.slopes, model.attn.alibi(12, data["long_tokens"].device)]


# DeepSpeech2 (deepspeech.pytorch): a convolutional front end over spectrograms with the
# padding masked after each layer (MaskConv) and the lengths pushed through the convolutions'
# arithmetic, a bidirectional GRU over packed sequences summing its directions, a per-frame
# BatchNorm and Linear to characters, CTC loss (summed, zero_infinity) divided by the batch,
# and greedy decoding.

def deepspeech(lib, device):
    nn = lib.nn

    class MaskConv(nn.Module):
        def __init__(self, seq_module):
            super().__init__()
            self.seq_module = seq_module

        def forward(self, x, lengths):
            for module in self.seq_module:
                x = module(x)
                mask = lib.BoolTensor(x.size()).fill_(0)
                if x.is_cuda:
                    mask = mask.cuda()
                for i, length in enumerate(lengths):
                    length = length.item()
                    if (mask[i].size(2) - length) > 0:
                        mask[i].narrow(2, length, mask[i].size(2) - length).fill_(1)
                x = x.masked_fill(mask, 0)
            return x, lengths

    class SequenceWise(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, x):
            t, n = x.size(0), x.size(1)
            x = x.view(t * n, -1)
            return self.module(x).view(t, n, -1)

    class BatchRNN(nn.Module):
        def __init__(self, input_size, hidden_size, batch_norm=True):
            super().__init__()
            self.hidden_size = hidden_size
            self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
            self.rnn = nn.GRU(input_size=input_size, hidden_size=hidden_size,
                              bidirectional=True, bias=True)

        def forward(self, x, output_lengths):
            if self.batch_norm is not None:
                x = self.batch_norm(x)
            x = nn.utils.rnn.pack_padded_sequence(x, output_lengths)
            x, h = self.rnn(x)
            x, _ = nn.utils.rnn.pad_packed_sequence(x)
            return x.view(x.size(0), x.size(1), 2, -1).sum(2).view(x.size(0), x.size(1), -1)

    class DeepSpeech(nn.Module):
        def __init__(self, n_freq=16, hidden=12, n_chars=6):
            super().__init__()
            self.conv = MaskConv(nn.Sequential(
                nn.Conv2d(1, 4, kernel_size=(5, 3), stride=(2, 2), padding=(2, 1)),
                nn.BatchNorm2d(4), nn.Hardtanh(0, 20, inplace=True),
                nn.Conv2d(4, 4, kernel_size=(3, 3), stride=(2, 1), padding=(1, 1)),
                nn.BatchNorm2d(4), nn.Hardtanh(0, 20, inplace=True)))
            rnn_input_size = 4 * (n_freq // 4)
            self.rnns = nn.Sequential(BatchRNN(rnn_input_size, hidden, batch_norm=False),
                                      BatchRNN(hidden, hidden))
            self.fc = nn.Sequential(SequenceWise(nn.Sequential(
                nn.BatchNorm1d(hidden), nn.Linear(hidden, n_chars, bias=False))))

        def get_seq_lens(self, input_length):
            seq_len = input_length
            for m in self.conv.modules():
                if type(m) is nn.modules.conv.Conv2d:
                    seq_len = ((seq_len + 2 * m.padding[1] - m.dilation[1]
                                * (m.kernel_size[1] - 1) - 1) // m.stride[1] + 1)
            return seq_len.int()

        def forward(self, x, lengths):
            lengths = lengths.cpu().int()
            output_lengths = self.get_seq_lens(lengths)
            x, _ = self.conv(x, output_lengths)
            sizes = x.size()
            x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])
            x = x.transpose(1, 2).transpose(0, 1).contiguous()
            for rnn in self.rnns:
                x = rnn(x, output_lengths)
            x = self.fc(x)
            return x.transpose(0, 1), output_lengths

    model = DeepSpeech()
    model.criterion = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    model.optimizer = lambda: lib.optim.SGD(model.parameters(), lr=3e-3, momentum=0.9,
                                            nesterov=True, weight_decay=1e-5)
    return model


def deepspeech_step(lib, model, data):
    out, output_sizes = model(data["spect"], data["spect_lengths"])
    out = out.log_softmax(dim=2).transpose(0, 1)
    loss = model.criterion(out.float(), data["targets"], output_sizes, data["target_lengths"])
    loss = loss / data["spect"].size(0)
    model.opt.zero_grad()
    loss.backward()
    lib.nn.utils.clip_grad_norm_(model.parameters(), 400)
    model.opt.step()
    return loss


def _greedy_decode(lib, out, sizes, blank=0, width=10):
    """Best path: the argmax per frame, repeats collapsed, blanks dropped; rows padded with -1
    to `width`."""
    max_probs = lib.argmax(out, 2)
    rows = []
    for i in range(max_probs.size(0)):
        seq = lib.unique_consecutive(max_probs[i][:sizes[i]])
        seq = seq[seq != blank]
        rows.append(lib.cat([seq, lib.full((width - seq.numel(),), -1, dtype=seq.dtype,
                                           device=seq.device)]))
    return lib.stack(rows)


def deepspeech_keeps(lib, model, data):
    model.eval()
    with lib.no_grad():
        out, sizes = model(data["spect"], data["spect_lengths"])
        probs = lib.nn.functional.softmax(out, dim=-1)
    per_sample = lib.nn.functional.ctc_loss(
        out.log_softmax(2).transpose(0, 1), data["targets"], sizes, data["target_lengths"],
        reduction="none", zero_infinity=True)
    return [sizes, probs, _greedy_decode(lib, probs, sizes), per_sample]


# Tacotron 2 (NVIDIA's): characters through an Embedding with a padding index, padded by
# pad_sequence, a convolution and a packed bidirectional LSTM; a decoder loop with teacher
# forcing over LSTMCells and location-sensitive attention (a Conv1d over the previous and
# cumulative attention weights, additive tanh energies, padding masked with -inf through
# .data, softmax), mel frames masked past each target's length, MSE and gate BCE losses.

def tacotron(lib, device, n_chars=9, emb=8, n_mel=4, attn_dim=6, rnn_dim=10):
    nn, F = lib.nn, lib.nn.functional

    class LinearNorm(nn.Module):
        def __init__(self, in_dim, out_dim, bias=True, w_init_gain="linear"):
            super().__init__()
            self.linear_layer = nn.Linear(in_dim, out_dim, bias=bias)
            nn.init.xavier_uniform_(self.linear_layer.weight,
                                    gain=nn.init.calculate_gain(w_init_gain))

        def forward(self, x):
            return self.linear_layer(x)

    class LocationLayer(nn.Module):
        def __init__(self, n_filters=3, kernel_size=5):
            super().__init__()
            self.location_conv = nn.Conv1d(2, n_filters, kernel_size=kernel_size,
                                           padding=int((kernel_size - 1) / 2), bias=False)
            nn.init.xavier_uniform_(self.location_conv.weight)
            self.location_dense = LinearNorm(n_filters, attn_dim, bias=False, w_init_gain="tanh")

        def forward(self, attention_weights_cat):
            return self.location_dense(self.location_conv(attention_weights_cat).transpose(1, 2))

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query_layer = LinearNorm(rnn_dim, attn_dim, bias=False, w_init_gain="tanh")
            self.memory_layer = LinearNorm(emb, attn_dim, bias=False, w_init_gain="tanh")
            self.v = LinearNorm(attn_dim, 1, bias=False)
            self.location_layer = LocationLayer()
            self.score_mask_value = -float("inf")

        def forward(self, query, memory, processed_memory, attention_weights_cat, mask):
            energies = self.v(lib.tanh(self.query_layer(query.unsqueeze(1))
                                       + self.location_layer(attention_weights_cat)
                                       + processed_memory)).squeeze(-1)
            if mask is not None:
                energies.data.masked_fill_(mask, self.score_mask_value)
            attention_weights = F.softmax(energies, dim=1)
            return lib.bmm(attention_weights.unsqueeze(1), memory).squeeze(1), attention_weights

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(n_chars, emb, padding_idx=0)
            self.conv = nn.Sequential(nn.Conv1d(emb, emb, 3, padding=1), nn.BatchNorm1d(emb))
            self.lstm = nn.LSTM(emb, emb // 2, 1, batch_first=True, bidirectional=True)

        def forward(self, text, input_lengths):
            x = F.relu(self.conv(self.embedding(text).transpose(1, 2))).transpose(1, 2)
            x = nn.utils.rnn.pack_padded_sequence(x, input_lengths.cpu().numpy(),
                                                  batch_first=True)
            outputs, _ = self.lstm(x)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
            return outputs

    class Tacotron(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()
            self.prenet = nn.Sequential(LinearNorm(n_mel, 8, bias=False), nn.ReLU())
            self.attention_rnn = nn.LSTMCell(8 + emb, rnn_dim)
            self.attention_layer = Attention()
            self.decoder_rnn = nn.LSTMCell(rnn_dim + emb, rnn_dim, 1)
            self.linear_projection = LinearNorm(rnn_dim + emb, n_mel)
            self.gate_layer = LinearNorm(rnn_dim + emb, 1, bias=True, w_init_gain="sigmoid")

        def decode(self, memory, decoder_inputs, mask):
            b, t_in = memory.size(0), memory.size(1)
            h = [memory.new_zeros(b, rnn_dim) for _ in range(4)]
            weights, weights_cum = memory.new_zeros(b, t_in), memory.new_zeros(b, t_in)
            context = memory.new_zeros(b, emb)
            processed_memory = self.attention_layer.memory_layer(memory)
            mels, gates, alignments = [], [], []
            for x in self.prenet(decoder_inputs):
                h[0], h[1] = self.attention_rnn(lib.cat((x, context), -1), (h[0], h[1]))
                weights_cat = lib.cat((weights.unsqueeze(1), weights_cum.unsqueeze(1)), dim=1)
                context, weights = self.attention_layer(h[0], memory, processed_memory,
                                                        weights_cat, mask)
                weights_cum = weights_cum + weights
                h[2], h[3] = self.decoder_rnn(lib.cat((h[0], context), -1), (h[2], h[3]))
                hidden_context = lib.cat((h[2], context), dim=1)
                mels.append(self.linear_projection(hidden_context))
                gates.append(self.gate_layer(hidden_context))
                alignments.append(weights)
            return (lib.stack(mels).transpose(0, 1).contiguous(),
                    lib.stack(gates).transpose(0, 1).squeeze(-1).contiguous(),
                    lib.stack(alignments).transpose(0, 1))

        def forward(self, text, text_lengths, mels, output_lengths):
            memory = self.encoder(text, text_lengths)
            go = memory.new_zeros(1, mels.size(0), n_mel)
            decoder_inputs = lib.cat((go, mels.transpose(0, 1)[:-1]), dim=0)
            mel_out, gate_out, alignments = self.decode(
                memory, decoder_inputs, ~_mask_from_lengths(lib, text_lengths))
            out_mask = ~_mask_from_lengths(lib, output_lengths)
            mel_out.data.masked_fill_(out_mask.unsqueeze(-1).expand_as(mel_out), 0.0)
            gate_out.data.masked_fill_(out_mask, 1e3)
            return mel_out, gate_out, alignments

    model = Tacotron()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-6)
    return model


def _mask_from_lengths(lib, lengths):
    max_len = lib.max(lengths).item()
    ids = lib.arange(0, max_len, device=lengths.device)
    return (ids < lengths.unsqueeze(1)).bool()


def _text_batch(lib, data):
    """The characters of each sentence (no padding) batched by pad_sequence."""
    lengths = data["text_lengths"]
    seqs = [data["chars"][i, :length] for i, length in enumerate(lengths.tolist())]
    return lib.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=0), lengths


def tacotron_step(lib, model, data):
    text, text_lengths = _text_batch(lib, data)
    mel_out, gate_out, model.alignments = model(text, text_lengths, data["mels"],
                                                data["mel_lengths"])
    gate_target = data["gates"].view(-1, 1)
    loss = (lib.nn.MSELoss()(mel_out, data["mels"])
            + lib.nn.BCEWithLogitsLoss()(gate_out.view(-1, 1), gate_target))
    model.opt.zero_grad()
    loss.backward()
    lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    model.opt.step()
    return loss


def tacotron_keeps(lib, model, data):
    return [model.alignments, model.encoder.embedding.weight[0]]


# A character-level seq2seq (the PyTorch translation tutorial's shape, batched): source and
# target strings padded by pad_sequence, Embeddings with padding_idx, a GRU encoder over packed
# sources, a GRU-cell decoder with dot attention masked at padding, teacher forcing where the
# reference's random.random() fell below the ratio (draws with the data), cross entropy
# ignoring padding, and greedy decoding by topk.

SOS, EOS, PAD = 1, 2, 0


def char_seq2seq(lib, device, n_chars=10, emb=8, hidden=12):
    nn, F = lib.nn, lib.nn.functional

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(n_chars, emb, padding_idx=PAD)
            self.gru = nn.GRU(emb, hidden, batch_first=True)

        def forward(self, src, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(self.embedding(src), lengths.cpu(),
                                                       batch_first=True, enforce_sorted=False)
            outputs, hidden_state = self.gru(packed)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True,
                                                          total_length=src.size(1))
            return outputs, hidden_state.squeeze(0)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(n_chars, emb, padding_idx=PAD)
            self.cell = nn.GRUCell(emb + hidden, hidden)
            self.out = nn.Linear(2 * hidden, n_chars)

        def forward(self, token, hidden_state, context, enc_outputs, src_mask):
            hidden_state = self.cell(lib.cat([self.embedding(token), context], 1), hidden_state)
            scores = lib.bmm(enc_outputs, hidden_state.unsqueeze(2)).squeeze(2)
            weights = F.softmax(scores.masked_fill(~src_mask, float("-inf")), dim=1)
            context = lib.bmm(weights.unsqueeze(1), enc_outputs).squeeze(1)
            return self.out(lib.cat([hidden_state, context], 1)), hidden_state, context

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()

        def forward(self, src, lengths, tgt, teacher_forcing):
            enc_outputs, hidden_state = self.encoder(src, lengths)
            src_mask = src != PAD
            context = lib.zeros(src.size(0), hidden, device=src.device)
            token = lib.full((src.size(0),), SOS, dtype=lib.long, device=src.device)
            logits = []
            for t in range(tgt.size(1)):
                step_logits, hidden_state, context = self.decoder(
                    token, hidden_state, context, enc_outputs, src_mask)
                logits.append(step_logits)
                token = tgt[:, t] if teacher_forcing[t] else step_logits.topk(1)[1].squeeze(1)
            return lib.stack(logits, 1)

    model = Seq2Seq()
    model.criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-2)
    return model


def _string_batch(lib, rows, lengths, eos=False):
    """Each row's first `length` characters (then EOS when `eos`), batched by pad_sequence."""
    seqs = [rows[i, :length] for i, length in enumerate(lengths.tolist())]
    if eos:
        seqs = [lib.cat([s, s.new_full((1,), EOS)]) for s in seqs]
    return lib.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=PAD)


def char_seq2seq_step(lib, model, data):
    step = getattr(model, "global_step", 0)
    src = _string_batch(lib, data["src"], data["src_lengths"])
    tgt = _string_batch(lib, data["src"].flip(1), data["src_lengths"], eos=True)  # row's tail
    logits = model(src, data["src_lengths"], tgt, (data["forcing"][step] < 0.5).tolist())
    loss = model.criterion(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    model.global_step = step + 1
    return loss


def char_seq2seq_keeps(lib, model, data):
    src = _string_batch(lib, data["src"], data["src_lengths"])
    tgt = _string_batch(lib, data["src"].flip(1), data["src_lengths"], eos=True)
    with lib.no_grad():
        logits = model(src, data["src_lengths"], tgt, [False] * tgt.size(1))
    return [logits.argmax(-1), logits]


CASES = {
    "lora": (lora, lambda lib, model, data: _lm_step(lib, model, data, "tokens"), lora_keeps),
    "bert_mlm": (bert, bert_step, bert_keeps),
    "t5_relative_bias": (t5_bias, _lm_step, t5_bias_keeps),
    "alibi": (alibi, _lm_step, alibi_keeps),
    "deepspeech2_ctc": (deepspeech, deepspeech_step, deepspeech_keeps),
    "tacotron2_attention": (tacotron, tacotron_step, tacotron_keeps),
    "char_seq2seq": (char_seq2seq, char_seq2seq_step, char_seq2seq_keeps),
}


def _sentences(rng, n=4, t=10):
    """[CLS] tokens [SEP] then padding, of lengths from 6 to t."""
    ids = rng.integers(4, VOCAB, (n, t))
    lengths = [t, t - 1, 8, 6]
    for i, length in enumerate(lengths):
        ids[i, 0], ids[i, length - 1], ids[i, length:] = CLS_ID, SEP_ID, PAD_ID
    segments = np.zeros((n, t), dtype=np.int64)
    for i, length in enumerate(lengths):
        segments[i, length // 2:length] = 1
    return ids, segments


def _data(rng):
    """The synthetic inputs and random draws every case reads from, as numpy arrays."""
    sentences, segments = _sentences(rng)
    mask_draws = rng.random((STEPS, 3, 4, 10)).astype(np.float32)
    mask_draws[:, 0] *= 0.5  # more masked tokens than 15% of so few
    random_words = rng.integers(0, VOCAB, (STEPS, 1, 4, 10)).astype(np.float32)
    spect_lengths = np.array([20, 17, 13, 5])
    spect = rng.standard_normal((4, 1, 16, 20)).astype(np.float32)
    for i, length in enumerate(spect_lengths):
        spect[i, ..., length:] = 0
    # the last utterance's 3 output frames cannot hold its 4 characters: an infinite loss
    target_lengths = np.array([4, 3, 3, 4])
    text_lengths, mel_lengths = np.array([7, 6, 4]), np.array([6, 5, 3])
    chars = rng.integers(1, 9, (3, 7))
    chars[np.arange(7) >= text_lengths[:, None]] = 7  # not padding: pad_sequence pads
    mels = rng.standard_normal((3, 6, 4)).astype(np.float32)
    mels[np.arange(6) >= mel_lengths[:, None]] = 0
    gates = (np.arange(6) >= mel_lengths[:, None] - 1).astype(np.float32)
    return {
        "src": rng.integers(3, 10, (4, 6)), "src_lengths": np.array([4, 6, 3, 5]),
        "forcing": rng.random((STEPS, 7)),
        "chars": chars, "text_lengths": text_lengths, "mels": mels, "mel_lengths": mel_lengths,
        "gates": gates,
        "tokens": rng.integers(0, 11, (3, 9)),
        "long_tokens": rng.integers(0, 11, (3, 13)),
        "sentences": sentences, "segments": segments,
        "mask_draws": np.concatenate([mask_draws, random_words], 1),
        "spect": spect, "spect_lengths": spect_lengths,
        "targets": rng.integers(1, 6, target_lengths.sum()), "target_lengths": target_lengths,
    }


@pytest.mark.parametrize("name", list(CASES))
def test_ported_nlp_speech_model_trains_as_torch(name, rng, device):
    assert_case_trains_as_torch(*CASES[name], _data(rng), device, STEPS)
