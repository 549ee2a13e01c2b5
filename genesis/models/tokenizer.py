"""A model directory's tokenizer (`tokenizer.json`) through Hugging Face's `tokenizers` library,
with the special tokens its configs name."""

import json
import os

from ..ops.creation import tensor


class Tokenizer:
    """`encode`/`decode` text, and batch prompts into left-padded ids with their mask."""

    def __init__(self, backend, eos_token_id=None, pad_token_id=None):
        self.backend = backend
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id if pad_token_id is not None else eos_token_id

    @classmethod
    def from_pretrained(cls, path):
        file = os.path.join(path, "tokenizer.json")
        if not os.path.isfile(file):
            raise FileNotFoundError(f"Tokenizer.from_pretrained: {path!r} has no tokenizer.json")
        from tokenizers import Tokenizer as Backend
        settings = {}
        for name in ("config.json", "generation_config.json"):
            config = os.path.join(path, name)
            if os.path.isfile(config):
                with open(config, encoding="utf-8") as f:
                    settings.update({k: v for k, v in json.load(f).items() if v is not None})
        eos = settings.get("eos_token_id")
        return cls(Backend.from_file(file), eos[0] if isinstance(eos, list) else eos,
                   settings.get("pad_token_id"))

    def encode(self, text):
        return self.backend.encode(text).ids

    def decode(self, ids, skip_special_tokens=True):
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def __call__(self, texts, device=None):
        """(input_ids, attention_mask) of a batch of texts, left-padded to the longest."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        encoded = [self.encode(t) for t in texts]
        width = max(len(e) for e in encoded)
        pad = self.pad_token_id if self.pad_token_id is not None else 0
        ids = [[pad] * (width - len(e)) + e for e in encoded]
        mask = [[0] * (width - len(e)) + [1] * len(e) for e in encoded]
        return tensor(ids, device=device), tensor(mask, device=device)
