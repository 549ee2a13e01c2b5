"""Text generation with a static key/value cache, as transformers' `generate`.

The prompt runs once (prefill) and fills the cache; each new token then runs alone (decode)
against it. Greedy decoding takes the most likely token; sampling draws from the softmax of
the logits after temperature, top-k and top-p filtering, in transformers' order.
"""

import math

from ..autograd.grad_mode import no_grad
from ..ops.compare import isin
from ..ops.creation import ones, tensor
from ..ops.random import multinomial
from ..ops.index import masked_fill
from ..ops.reduce import argmax, cumsum, softmax
from ..ops.shape import cat, stack
from .attention_mask import position_ids as positions_from_mask
from .cache import StaticCache


def _filter_top_k(logits, top_k):
    """Logits outside the `top_k` largest of each row set to -inf."""
    top_k = min(top_k, logits.shape[-1])
    kth = logits.topk(top_k, dim=-1).values[..., -1:]
    return masked_fill(logits, logits < kth, -math.inf)


def _filter_top_p(logits, top_p):
    """Logits outside the smallest set whose probabilities reach `top_p` set to -inf (the most
    likely token always stays)."""
    ascending, order = logits.sort(dim=-1)
    cumulative = cumsum(softmax(ascending, -1), -1)
    drop = cumulative <= 1 - top_p
    drop[..., -1] = False
    return masked_fill(logits, drop.scatter(-1, order, drop), -math.inf)


def next_tokens(logits, do_sample, temperature, top_k, top_p, generator=None):
    """The (batch,) next tokens from (batch, vocab) logits."""
    if not do_sample:
        return argmax(logits, -1)
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    if top_k:
        logits = _filter_top_k(logits, top_k)
    if top_p < 1.0:
        logits = _filter_top_p(logits, top_p)
    return multinomial(softmax(logits, -1), 1, generator=generator).squeeze(-1)


class GenerationMixin:
    """`generate` for a causal language model whose forward takes
    (input_ids, attention_mask, position_ids, cache) and returns logits."""

    @no_grad()
    def generate(self, input_ids, max_new_tokens=20, do_sample=False, temperature=1.0,
                 top_k=50, top_p=1.0, eos_token_id=None, pad_token_id=None,
                 attention_mask=None, streamer=None, generator=None):
        """The prompt followed by up to `max_new_tokens` new tokens, (batch, length).

        Prompts of different lengths are left-padded, with `attention_mask` marking the real
        tokens. A sequence that produced an `eos_token_id` (an int or a list) continues with
        `pad_token_id`; generation stops once every sequence has. Both default to the model's
        generation config, as in transformers. `streamer.put(tokens)` gets
        each step's (batch,) tokens as they are produced, and `streamer.end()` the end.
        """
        if input_ids.ndim != 2:
            raise ValueError(f"generate: input_ids must be (batch, length), got shape "
                             f"{list(input_ids.shape)}")
        batch, length = input_ids.shape
        device = input_ids.device
        defaults = self.generation_defaults()
        eos = self._eos_ids(eos_token_id if eos_token_id is not None
                            else defaults.get("eos_token_id"))
        if pad_token_id is None:
            pad_token_id = defaults.get("pad_token_id")
        pad = pad_token_id if pad_token_id is not None else (eos[0] if eos else 0)
        padded = attention_mask is not None and not bool(attention_mask.all())
        mask = attention_mask if padded else None
        cache = self.make_cache(batch, length + max_new_tokens, device)
        positions = positions_from_mask(mask) if padded else None
        logits = self(input_ids, attention_mask=mask, position_ids=positions, cache=cache)
        finished = None
        eos_ids = tensor(eos, dtype=input_ids.dtype, device=device) if eos else None
        generated = []
        for step in range(max_new_tokens):
            token = next_tokens(logits[:, -1], do_sample, temperature, top_k, top_p, generator)
            if eos:
                if finished is not None:
                    token = token.masked_fill(finished, pad)
                done = isin(token, eos_ids)
                finished = done if finished is None else finished | done
            generated.append(token)
            if streamer is not None:
                streamer.put(token)
            if step + 1 == max_new_tokens or (eos and bool(finished.all())):
                break
            if padded:
                mask = cat([mask, ones((batch, 1), dtype=mask.dtype, device=device)], dim=1)
                positions = positions[:, -1:] + 1
            logits = self(token.unsqueeze(1), attention_mask=mask, position_ids=positions,
                          cache=cache)
        if streamer is not None:
            streamer.end()
        if not generated:
            return input_ids
        return cat([input_ids, stack(generated, dim=1).to(input_ids.dtype)], dim=1)

    def _eos_ids(self, eos_token_id):
        if eos_token_id is None:
            return []
        return list(eos_token_id) if isinstance(eos_token_id, (list, tuple)) else [eos_token_id]

    def generation_defaults(self):
        """{"eos_token_id", "pad_token_id"}: generation_config.json's, else config.json's."""
        config = self.config
        return {"eos_token_id": config.get("eos_token_id"),
                "pad_token_id": config.get("pad_token_id"),
                **getattr(self, "generation_config", {})}

    def make_cache(self, batch, max_length, device):
        """A StaticCache sized for this model, `batch` sequences of up to `max_length`."""
        layers, kv_heads, head_dim = self.cache_geometry()
        return StaticCache(layers, batch, kv_heads, max_length, head_dim, self.dtype, device)


class TextStreamer:
    """Prints each new token's text as it is generated (the first sequence of the batch)."""

    def __init__(self, tokenizer, file=None):
        self.tokenizer, self.file = tokenizer, file
        self.tokens, self.printed = [], 0

    def put(self, tokens):
        self.tokens.append(int(tokens.reshape(-1)[0]))
        text = self.tokenizer.decode(self.tokens)
        print(text[self.printed:], end="", flush=True, file=self.file)
        self.printed = len(text)

    def end(self):
        print(file=self.file, flush=True)
