"""Text generation with a static key/value cache, as transformers' `generate`.

The prompt runs once (prefill) and fills the cache; each new token then runs alone (decode)
against it, as a `DecodeStep`: fixed shapes, static buffers, positions counted on the device,
sampling on the device (models/sampling.py), nothing read back to the host. The host looks at
the tokens only every `CHECK_EVERY` steps (or at each step when streaming) to stop once every
sequence has produced a stop token.
"""

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.compare import isin
from ..ops.creation import empty, full, tensor
from ..ops.elementwise import where
from ..ops.shape_copies import cat, stack
from .attention_mask import position_ids as positions_from_mask
from .cache import StaticCache
from .sampling import History, Sampling, next_tokens

CHECK_EVERY = 16
"""Decode steps between two host reads of the stop flags (each read waits for the device)."""


class DecodeStep:
    """One decode step of a causal language model on static buffers.

    Buffers, allocated once and updated in place by each call:
        input_ids      (batch, 1) int64   the tokens this step feeds; it writes the next ones
        position_ids   (batch, 1) int64   their positions (rotary or learned)
        cache          StaticCache        keys/values; `cache.position` (1,) int64, the slot
                                          written, and its device mask of the visible keys
        logits         (batch, vocab)     this step's last-position logits
        finished       (batch,) bool      which sequences produced a stop token
        history        sampling.History   the settings, and the tokens seen and made (None:
                                          greedy, no processors)
    A call runs the model on `input_ids`, writes `logits`, samples the next tokens on the
    device (stopped sequences get `pad`), marks `finished`, and advances the positions. It
    reads nothing back to the host and its shapes never change, so it can be captured once as
    a CUDA graph and replayed:

        step = DecodeStep(model, cache, first_tokens, positions, ...)
        step()            # eagerly first: kernels compile and their launch plans are cached
        g = genesis.cuda.CUDAGraph()
        with genesis.cuda.graph(g):
            step()        # recorded, not run: the buffers still hold the eager step's state
        g.replay()        # one more token: read step.input_ids / step.finished after it

    `GenerationMixin.decode_runner` is where generate asks for the callable that runs a step:
    the step itself, or a graph replaying it.

    Sampling draws from `generator` (or the device's default one) on each call; under a
    captured graph the generator's state must be graph-safe for replays to draw fresh numbers.
    """

    def __init__(self, model, cache, tokens, position_ids, finished, eos_ids, pad,
                 history=None, generator=None):
        self.model, self.cache = model, cache
        self.input_ids = tokens.reshape(-1, 1).to(dtypes.int64).clone()
        self.position_ids = position_ids.clone()
        self.finished = finished.clone()
        self.eos_ids, self.pad = eos_ids, pad
        self.history, self.generator = history, generator
        self.logits = empty((tokens.shape[0], model.lm_head.out_features), dtype=model.dtype,
                            device=tokens.device)

    def restart(self, tokens, position_ids, finished):
        """Begin another generation on the same buffers (so a captured graph of this step
        stays valid): the first tokens, their positions and the stop flags are copied in."""
        self.input_ids.copy_(tokens.reshape(-1, 1))
        self.position_ids.copy_(position_ids)
        self.finished.copy_(finished)

    @no_grad()
    def __call__(self):
        logits = self.model(self.input_ids, position_ids=self.position_ids, cache=self.cache)
        self.logits.copy_(logits[:, -1])
        history = self.history
        sampling = Sampling() if history is None else history.sampling
        token = next_tokens(self.logits, sampling, history, self.generator)
        token = mark_stops(token, self.finished, self.eos_ids, self.pad)
        if history is not None:
            history.record(token)
        self.input_ids.copy_(token.unsqueeze(1))
        self.position_ids.add_(1)


def mark_stops(token, finished, eos_ids, pad):
    """`token` with `pad` where a sequence had already stopped; `finished` (in place) also
    marks the sequences that stop at this token."""
    if eos_ids is None:
        return token
    token = where(finished, pad, token)
    finished.logical_or_(isin(token, eos_ids))
    return token


def _stop_length(tokens, eos):
    """The number of new tokens transformers keeps: up to the step at which every sequence had
    produced a stop token (all of them if one never did). `tokens` (batch, steps) on the host."""
    hits = np.isin(tokens, eos)
    if not eos or not hits.any(axis=1).all():
        return tokens.shape[1]
    return int(hits.argmax(axis=1).max()) + 1


class _DecodeSession:
    """What a generate call leaves for the next one with the same `key`: its cache, stop ids,
    token history, and (once made) its DecodeStep and the runner replaying it."""

    def __init__(self, key, cache, eos_ids, history):
        self.key, self.cache, self.eos_ids, self.history = key, cache, eos_ids, history
        self.step = self.run = None


class GenerationMixin:
    """`generate` for a causal language model whose forward takes
    (input_ids, attention_mask, position_ids, cache, logits_to_keep) and returns logits."""

    @no_grad()
    def generate(self, input_ids, max_new_tokens=20, do_sample=None, temperature=None,
                 top_k=None, top_p=None, eos_token_id=None, pad_token_id=None,
                 attention_mask=None, streamer=None, generator=None, *, min_p=None,
                 repetition_penalty=None, min_new_tokens=None):
        """The prompt followed by up to `max_new_tokens` new tokens, (batch, length).

        Prompts of different lengths are left-padded, with `attention_mask` marking the real
        tokens. A sequence that produced an `eos_token_id` (an int or a list) continues with
        `pad_token_id`; generation stops once every sequence has. These and the sampling
        settings (models/sampling.py) default to the model's generation config, as in
        transformers. `streamer.put(tokens)` gets each step's (batch,) tokens as they are
        produced, and `streamer.end()` the end.
        """
        if input_ids.ndim != 2:
            raise ValueError(f"generate: input_ids must be (batch, length), got shape "
                             f"{list(input_ids.shape)}")
        batch, length = input_ids.shape
        device = input_ids.device
        defaults = self.generation_defaults()
        given = dict(do_sample=do_sample, temperature=temperature, top_k=top_k, top_p=top_p,
                     min_p=min_p, repetition_penalty=repetition_penalty,
                     min_new_tokens=min_new_tokens)
        sampling = Sampling.resolve(given, defaults)
        eos = self._eos_ids(eos_token_id if eos_token_id is not None
                            else defaults.get("eos_token_id"))
        if pad_token_id is None:
            pad_token_id = defaults.get("pad_token_id")
        pad = pad_token_id if pad_token_id is not None else (eos[0] if eos else 0)
        if max_new_tokens <= 0:
            return input_ids
        padded = attention_mask is not None and not bool(attention_mask.all())
        mask = attention_mask if padded else None
        max_length = length + max_new_tokens
        key = (batch, max_length, padded, str(device), sampling, tuple(eos), pad, generator,
               self.training, self._state_addresses())
        session = self._decode_session(key, batch, max_length, eos, device, sampling)
        positions = positions_from_mask(mask) if padded else None
        logits = self(input_ids, attention_mask=mask, position_ids=positions,
                      cache=session.cache, logits_to_keep=1)
        history = session.history
        history.start(input_ids, mask)
        finished = full((batch,), False, dtype=dtypes.bool_, device=device)
        token = mark_stops(next_tokens(logits[:, -1], sampling, history, generator), finished,
                           session.eos_ids, pad)
        history.record(token)
        generated = self._decode(session, token, mask, positions, finished, pad, generator,
                                 max_new_tokens, streamer)
        new = stack(generated, dim=1)
        keep = _stop_length(new.cpu().numpy(), eos) if eos else new.shape[1]
        return cat([input_ids, new[:, :keep].to(input_ids.dtype)], dim=1)

    def _state_addresses(self):
        """Where each parameter and buffer lies (address, shape, dtype): a captured decode
        step reads them there, so it may be replayed only while none has moved."""
        return tuple((t.data_ptr(), t.shape, t.dtype)
                     for t in (*self.parameters(), *self.buffers()))

    def _decode_session(self, key, batch, max_length, eos, device, sampling):
        """The cache, stop ids, token history and decode step of the last generate call when
        `key` (shapes, sampling, stop tokens, generator, where the weights lie) is the same,
        emptied for a new prompt: a repeated call replays the decode graph the first one
        captured. A different key replaces them."""
        session = getattr(self, "_last_decode", None)
        if session is not None and session.key == key:
            session.cache.reset()
            return session
        self._last_decode = None  # free the old cache and graph before allocating new ones
        eos_ids = tensor(eos, dtype=dtypes.int64, device=device) if eos else None
        history = History(sampling, batch, self.lm_head.out_features, eos_ids, device)
        self._last_decode = _DecodeSession(key, self.make_cache(batch, max_length, device),
                                           eos_ids, history)
        return self._last_decode

    def _decode(self, session, token, mask, positions, finished, pad, generator,
                max_new_tokens, streamer):
        """The new tokens, (batch,) each: `token`, then DecodeSteps until `max_new_tokens` or
        until the stop flags, read every CHECK_EVERY steps (each step when streaming), show
        that every sequence has stopped."""
        cache = session.cache
        batch, length = token.shape[0], cache.length
        cache.start_decoding(mask)
        start = positions[:, -1:] + 1 if positions is not None else full(
            (batch, 1), length, dtype=dtypes.int64, device=token.device)
        if session.step is None:
            session.step = DecodeStep(self, cache, token, start, finished, session.eos_ids,
                                      pad, session.history, generator)
            session.run = self.decode_runner(session.step)
        else:
            session.step.restart(token, start, finished)
        step, run = session.step, session.run
        generated = [token]
        if streamer is not None:
            streamer.put(token)
        every = 1 if streamer is not None else CHECK_EVERY
        eos_ids = session.eos_ids
        for made in range(1, max_new_tokens):
            if eos_ids is not None and made % every == 0 and bool(step.finished.all()):
                break
            run()
            generated.append(step.input_ids[:, 0].clone())
            if streamer is not None:
                streamer.put(generated[-1])
        if streamer is not None:
            streamer.end()
        return generated

    decode_with_cuda_graphs = True

    def decode_runner(self, step):
        """The callable generate calls once per new token to run the DecodeStep `step`. On
        CUDA (unless `decode_with_cuda_graphs` is False) the first call runs it eagerly, which
        compiles its kernels, then captures it in a CUDA graph that every later call replays:
        one launch per token instead of hundreds. Elsewhere, the step itself."""
        if step.input_ids.device.type != "cuda" or not self.decode_with_cuda_graphs:
            return step
        from .. import cuda
        graph = None

        def run():
            nonlocal graph
            if graph is None:
                step()
                graph = cuda.CUDAGraph()
                if step.generator is not None:
                    graph.register_generator_state(step.generator)
                with cuda.graph(graph):
                    step()
            else:
                graph.replay()
        return run

    def _eos_ids(self, eos_token_id):
        if eos_token_id is None:
            return []
        return list(eos_token_id) if isinstance(eos_token_id, (list, tuple)) else [eos_token_id]

    def generation_defaults(self):
        """{"eos_token_id", "pad_token_id", and the sampling settings generation_config.json
        gives}: generation_config.json's, else config.json's token ids."""
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
