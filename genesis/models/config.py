"""A model's `config.json`, read as Hugging Face writes it, with each family's defaults.

The file's dict is kept whole, so `save_pretrained` writes back what was read (plus changes);
attributes read the dict first, then the family's defaults.
"""

import json
import os

from .sampling import SETTINGS


class ModelConfig:
    """The settings of one model: `config.hidden_size`, `config.to_dict()`, ..."""

    DEFAULTS = {}

    def __init__(self, values=None, **overrides):
        object.__setattr__(self, "_values", {**(values or {}), **overrides})

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        if name in type(self).DEFAULTS:
            return type(self).DEFAULTS[name]
        raise AttributeError(f"{type(self).__name__} has no setting {name!r}")

    def __setattr__(self, name, value):
        self._values[name] = value

    def get(self, name, default=None):
        try:
            return getattr(self, name)
        except AttributeError:
            return default

    def to_dict(self):
        return dict(self._values)

    def __repr__(self):
        return f"{type(self).__name__}({json.dumps(self._values, sort_keys=True)})"


def read_config_file(directory):
    """The dict in `directory`/config.json, with clear errors for a missing or bad file."""
    path = os.path.join(directory, "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"from_pretrained: {directory!r} has no config.json")
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"from_pretrained: {path} is not valid JSON ({e})") from None
    if not isinstance(values, dict) or "model_type" not in values:
        raise ValueError(f"from_pretrained: {path} names no model_type")
    return values


def read_generation_config(directory):
    """The token and sampling settings of `directory`/generation_config.json ({} when
    absent)."""
    path = os.path.join(directory, "generation_config.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        values = json.load(f)
    return {k: values[k] for k in ("eos_token_id", "pad_token_id", "bos_token_id", *SETTINGS)
            if values.get(k) is not None}
