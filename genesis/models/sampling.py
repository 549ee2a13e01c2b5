"""How `generate` picks each next token, as transformers' logits processors do, in their order:

    repetition_penalty   a seen token's logit divided by the penalty (multiplied where < 0)
    min_new_tokens       stop tokens impossible until that many new tokens exist
    then, when sampling: temperature, top_k, top_p, min_p filters, and a draw from the softmax;
    else the most likely token.

Everything runs on the logits' device and reads nothing back to the host, so a decode step that
calls it can be captured in a CUDA graph: what the processors remember of a generation (the
tokens each sequence has seen, the number of tokens made) lives in device buffers (`History`).
"""

import math
from typing import NamedTuple, Optional

from .. import dtypes
from ..ops.compare import isin
from ..ops.creation import empty_like, zeros
from ..ops.elementwise import where
from ..ops.index import masked_fill
from ..ops.ranges import arange
from ..ops.reduce import argmax, cumsum, softmax

SETTINGS = ("do_sample", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
            "min_new_tokens")
"""generate's arguments that default to the model's generation_config.json."""


class Sampling(NamedTuple):
    """The settings of a generation, with transformers' defaults."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    min_p: Optional[float] = None
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0

    @classmethod
    def resolve(cls, given, defaults):
        """The settings `given` (None: not given), else the `defaults` of the model's
        generation config, else transformers'; checked as transformers checks them."""
        values = {name: given[name] if given.get(name) is not None else defaults.get(name)
                  for name in SETTINGS}
        sampling = cls(**{k: v for k, v in values.items() if v is not None})
        sampling.check()
        return sampling

    def check(self):
        if not self.repetition_penalty > 0:
            raise ValueError(f"`penalty` has to be a strictly positive float, but is "
                             f"{self.repetition_penalty}")
        if self.do_sample and not self.temperature > 0:
            raise ValueError(f"`temperature` (={self.temperature}) has to be a strictly positive "
                             "float, otherwise your next token scores will be invalid.")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise ValueError(f"`min_p` has to be a float in the [0, 1] interval, but is "
                             f"{self.min_p}")


class History:
    """What the processors remember of one generation, in device buffers made only for the
    processors in use: `seen` (batch, vocab) marks each sequence's tokens, prompt and new (for
    the repetition penalty), `made` counts the new tokens (for min_new_tokens). `start`
    refills them for a new prompt in place, so a captured decode step that reads them stays
    valid."""

    def __init__(self, sampling, batch, vocab, eos_ids, device):
        self.sampling = sampling
        self.penalized = sampling.repetition_penalty != 1.0
        self.held = sampling.min_new_tokens > 0 and eos_ids is not None
        if self.penalized or self.held:
            self.columns = arange(vocab, device=device)
        if self.penalized:
            # One column past the vocabulary takes the prompt's padding, then is dropped.
            self.seen_or_pad = zeros((batch, vocab + 1), dtype=dtypes.bool_, device=device)
            self.seen = self.seen_or_pad[:, :vocab]
        if self.held:
            self.made = zeros((1,), dtype=dtypes.int64, device=device)
            self.stops = isin(self.columns, eos_ids)

    def start(self, prompt, attention_mask=None):
        """Forget the last generation: `seen` holds the (batch, length) prompt's tokens (not
        its padding, where `attention_mask` is 0), `made` is 0."""
        if self.held:
            self.made.zero_()
        if not self.penalized:
            return
        vocab = self.seen.shape[1]
        ids = prompt.clamp(max=vocab)
        if attention_mask is not None:
            ids = masked_fill(ids, attention_mask == 0, vocab)
        self.seen_or_pad.fill_(False)
        self.seen_or_pad.scatter_(1, ids, True)

    def record(self, token):
        """Count a step's (batch,) new tokens as seen and made."""
        if self.penalized:
            self.seen.logical_or_(self.columns == token.unsqueeze(1))
        if self.held:
            self.made.add_(1)


def next_tokens(logits, sampling, history=None, generator=None):
    """The (batch,) next tokens from (batch, vocab) logits after the processors; a sample is
    the argmax of the probabilities over Exponential(1) noise, which picks token i with
    probability p_i (torch's multinomial draws one sample so on the GPU)."""
    if history is not None and (history.penalized or history.held):
        logits = _penalize(logits.float(), sampling, history)
    if not sampling.do_sample:
        return argmax(logits, -1)
    probs = softmax(_warp(logits.float(), sampling), -1)
    noise = empty_like(probs).exponential_(generator=generator)
    return argmax(probs / noise, -1)


def _penalize(logits, sampling, history):
    """The repetition penalty on seen tokens, and stop tokens held back before
    min_new_tokens."""
    if history.penalized:
        penalty = sampling.repetition_penalty
        penalized = where(logits < 0, logits * penalty, logits / penalty)
        logits = where(history.seen, penalized, logits)
    if history.held:
        early = history.made < sampling.min_new_tokens
        logits = masked_fill(logits, history.stops & early, -math.inf)
    return logits


def _warp(logits, sampling):
    """Temperature, then the top-k, top-p and min-p filters (filtered logits are -inf)."""
    if sampling.temperature != 1.0:
        logits = logits / sampling.temperature
    if sampling.top_k:
        logits = filter_top_k(logits, sampling.top_k)
    if sampling.top_p < 1.0:
        logits = filter_top_p(logits, sampling.top_p)
    if sampling.min_p is not None:
        logits = filter_min_p(logits, sampling.min_p)
    return logits


def filter_top_k(logits, top_k):
    """Logits outside the `top_k` largest of each row set to -inf."""
    top_k = min(top_k, logits.shape[-1])
    kth = logits.topk(top_k, dim=-1).values[..., -1:]
    return masked_fill(logits, logits < kth, -math.inf)


def filter_top_p(logits, top_p):
    """Logits outside the smallest set whose probabilities reach `top_p` set to -inf (the most
    likely token always stays). The kept set is every logit at or above the smallest kept one
    of the sorted row: no scatter back through the sort's order (whose index check reads the
    device)."""
    ascending = logits.sort(dim=-1).values
    cumulative = cumsum(softmax(ascending, -1), -1)
    drop = cumulative <= 1 - top_p
    drop[..., -1] = False
    threshold = masked_fill(ascending, drop, math.inf).amin(-1, keepdim=True)
    return masked_fill(logits, logits < threshold, -math.inf)


def filter_min_p(logits, min_p):
    """Logits of probability below `min_p` times the row's largest set to -inf (the most
    likely token always stays)."""
    probs = softmax(logits, -1)
    return masked_fill(logits, probs < min_p * probs.amax(-1, keepdim=True), -math.inf)
