"""Weights in Hugging Face's layout: `PreTrainedModel`, the base of the model families, reads
them into a model shard by shard and writes them back, config.json beside them.

A directory holds `config.json` and the weights as `model.safetensors`, or as shards listed by
`model.safetensors.index.json`. Weights stream shard by shard into a model built on the target
device, so host memory holds one shard at a time. Every problem names the file and tensor.
"""

import json
import os

from .. import nn
from .._safetensors import DTYPE_CODES, CheckpointError
from .._safetensors import write as write_safetensors
from ..autograd.grad_mode import no_grad
from ..serialization import _atomic_write, load
from .generation import GenerationMixin

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


class PreTrainedModel(nn.Module, GenerationMixin):
    """A language model read from and written to a Hugging Face directory. Subclasses give
    `tied_weights()` and may rename checkpoint tensors in `checkpoint_name`."""

    @property
    def dtype(self):
        return self.lm_head.weight.dtype

    def tied_weights(self):
        """{checkpoint name: the weight it shares storage with} of weights a checkpoint may
        omit."""
        return {}

    @staticmethod
    def checkpoint_name(name):
        """The parameter a checkpoint tensor fills (None for tensors the model recomputes)."""
        return name

    @staticmethod
    def saved_name(name):
        """The checkpoint name `save_pretrained` writes the state dict's `name` under (the
        inverse of `checkpoint_name` where that renames)."""
        return name

    def save_pretrained(self, path, max_shard_size="5GB"):
        save_pretrained(self, path, max_shard_size)


def checkpoint_files(path):
    """The safetensors files of the directory, in the order their index lists them."""
    index = os.path.join(path, INDEX_FILE)
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            weight_map = json.load(f).get("weight_map", {})
        return list(dict.fromkeys(weight_map.values()))
    if os.path.isfile(os.path.join(path, SINGLE_FILE)):
        return [SINGLE_FILE]
    raise FileNotFoundError(f"from_pretrained: {path!r} holds neither {SINGLE_FILE} nor "
                            f"{INDEX_FILE}")


def load_weights(model, path):
    """Copy every tensor of the directory's checkpoint into `model`, shard by shard."""
    tied = model.tied_weights()
    filled = set()
    with no_grad():
        params = model.state_dict(keep_vars=True)
        for name in checkpoint_files(path):
            file = os.path.join(path, name)
            for key, tensor in load(file).items():
                target = model.checkpoint_name(key)
                if target is None:
                    continue
                if target not in params:
                    raise ValueError(f"{file}: tensor {key!r} is not a weight of "
                                     f"{type(model).__name__}")
                _copy_into(params[target], tensor, file, key)
                filled.add(target)
    missing = sorted(set(params) - filled - set(tied) - {tied.get(n) for n in filled})
    if missing:
        raise ValueError(f"from_pretrained: {path} lacks {len(missing)} weight(s) of "
                         f"{type(model).__name__}: {', '.join(missing[:8])}")


def _copy_into(param, tensor, file, key):
    if tuple(tensor.shape) != tuple(param.shape):
        raise ValueError(f"{file}: tensor {key!r} has shape {list(tensor.shape)}, the model "
                         f"expects {list(param.shape)}")
    if tensor.dtype.is_floating_point != param.dtype.is_floating_point:
        raise ValueError(f"{file}: tensor {key!r} is {tensor.dtype.name}, the model expects a "
                         f"{param.dtype.name} weight")
    param.copy_(tensor.to(device=param.device, dtype=param.dtype))


def _parse_size(size):
    """Bytes of "5GB", "200MB", "10KB" or an int."""
    if isinstance(size, int):
        return size
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    text = size.strip().upper()
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * units[unit])
    return int(text)


def _shards(arrays, limit):
    """Lists of names, in order, each list's arrays together at most `limit` bytes (a larger
    array alone)."""
    shards, current, size = [], [], 0
    for name, arr in arrays.items():
        if current and size + arr.nbytes > limit:
            shards.append(current)
            current, size = [], 0
        current.append(name)
        size += arr.nbytes
    return shards + [current] if current else shards


def save_pretrained(model, path, max_shard_size="5GB"):
    """Write `model` as a Hugging Face directory: config.json and safetensors weights (tied
    weights once), sharded with an index above `max_shard_size`."""
    os.makedirs(path, exist_ok=True)
    tied = model.tied_weights()
    arrays = {model.saved_name(name): t.detach().contiguous().cpu().numpy()
              for name, t in model.state_dict().items() if name not in tied}
    for name, arr in arrays.items():
        if arr.dtype not in DTYPE_CODES.values():
            raise CheckpointError(f"save_pretrained: {name} has dtype {arr.dtype}, which "
                                  "safetensors cannot hold")
    shards = _shards(arrays, _parse_size(max_shard_size))
    names = ([SINGLE_FILE] if len(shards) == 1 else
             [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
    metadata = {"format": "pt"}
    for file, shard in zip(names, shards):
        _atomic_write(os.path.join(path, file),
                      lambda out, s=shard: write_safetensors(out, {n: arrays[n] for n in s},
                                                             metadata))
    if len(shards) > 1:
        index = {"metadata": {"total_size": sum(a.nbytes for a in arrays.values())},
                 "weight_map": {n: f for f, s in zip(names, shards) for n in s}}
        _write_json(os.path.join(path, INDEX_FILE), index)
    config = dict(model.config.to_dict(), dtype=model.dtype.name)
    _write_json(os.path.join(path, "config.json"), config)


def _write_json(path, value):
    text = json.dumps(value, indent=2, sort_keys=True) + "\n"
    _atomic_write(path, lambda out: out.write(text.encode("utf-8")))
