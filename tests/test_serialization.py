"""genesis.save / genesis.load: round trips, safetensors interop both ways, atomic writes and
clear errors for missing, truncated and corrupt files."""

import dataclasses
import io
import json
import math
import os
import pickle

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

import genesis
from genesis import _safetensors
from genesis.serialization import CheckpointError

from helpers import ALL_DTYPES, TORCH_DTYPES, assert_close, from_torch, make_pair, skip_no_cuda


def _values_equal(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, genesis.Tensor):
        assert a.dtype is b.dtype and a.device == b.device and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _values_equal(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _values_equal(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 3), (4, 5)], ids=str)
def test_tensor_round_trip(dtype, shape, tmp_path, rng):
    t, _ = make_pair(shape, dtype, rng=rng)
    genesis.save(t, tmp_path / "t.st")
    _values_equal(genesis.load(tmp_path / "t.st"), t)


def test_nested_structure_round_trip(tmp_path, rng):
    w, _ = make_pair((3, 4), genesis.float32, rng=rng)
    obj = {
        "model": {"layer.weight": w, "layer.bias": genesis.zeros(4, dtype=genesis.bfloat16)},
        "optimizer": {"state": {0: {"step": genesis.tensor(3.0), "exp_avg": w * 2}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0],
                                        "foreach": None, "amsgrad": False}]},
        "epoch": 7, "best": float("inf"), "worst": float("-inf"), "nan": float("nan"),
        "name": "run-1", "nothing": None, "tuple_keys": {(1, "a"): "x", 2.5: [1, [2, 3]]},
        "numpy": np.arange(6, dtype=np.int16).reshape(2, 3), "np_scalar": np.float64(2.5),
        "dtype": genesis.bfloat16, "device": genesis.device("cpu"), "empty": {}, "list": [],
        "grad": genesis.ones(2, requires_grad=True),
    }
    genesis.save(obj, tmp_path / "ckpt")
    loaded = genesis.load(tmp_path / "ckpt")
    expected = dict(obj, np_scalar=2.5)
    _values_equal(loaded, expected)


def test_non_contiguous_and_shared_tensors(tmp_path, rng):
    base, _ = make_pair((4, 6), genesis.float64, rng=rng)
    view = base.t()
    genesis.save({"a": base, "tied": base, "view": view}, tmp_path / "x")
    loaded = genesis.load(tmp_path / "x")
    assert loaded["a"] is loaded["tied"]
    _values_equal(loaded["view"], view.contiguous())
    assert loaded["view"].is_contiguous()


def test_flat_dict_is_read_by_safetensors(tmp_path, rng):
    tensors = {f"t{i}": make_pair((3, i + 1), d, rng=rng)[0] for i, d in enumerate(ALL_DTYPES)}
    genesis.save(tensors, tmp_path / "g.safetensors")
    loaded = safetensors.torch.load_file(tmp_path / "g.safetensors")
    assert list(loaded) == sorted(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype is TORCH_DTYPES[t.dtype]
        assert_close(t, loaded[name])


def test_safetensors_file_loads_into_genesis(tmp_path):
    tensors = {"w": torch.randn(3, 4, dtype=torch.bfloat16), "b": torch.randn(4).double(),
               "i": torch.randint(-5, 5, (2, 2), dtype=torch.int32), "m": torch.rand(5) > 0.5,
               "scalar": torch.tensor(1.5, dtype=torch.float16), "empty": torch.zeros(0, 3)}
    safetensors.torch.save_file(tensors, tmp_path / "t.safetensors", metadata={"k": "v"})
    loaded = genesis.load(tmp_path / "t.safetensors")
    assert set(loaded) == set(tensors)
    for name, t in tensors.items():
        assert_close(loaded[name], t)


def test_torch_model_to_genesis_model_and_back(tmp_path):
    nn = pytest.importorskip("genesis.nn")
    torch_model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    safetensors.torch.save_model(torch_model, tmp_path / "torch.safetensors")
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    model.load_state_dict(genesis.load(tmp_path / "torch.safetensors"))
    x = torch.randn(2, 4)
    assert_close(model(from_torch(x)), torch_model(x))
    genesis.save(model.state_dict(), tmp_path / "genesis.safetensors")
    back = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    back.load_state_dict(safetensors.torch.load_file(tmp_path / "genesis.safetensors"))
    for a, b in zip(back.state_dict().values(), torch_model.state_dict().values()):
        assert torch.equal(a, b)


def test_file_layout(tmp_path):
    genesis.save({"x": genesis.arange(3)}, tmp_path / "f")
    raw = (tmp_path / "f").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["x"] == {"dtype": "I64", "shape": [3], "data_offsets": [0, 24]}
    assert header["__metadata__"]["format"] == "pt"
    assert np.frombuffer(raw[8 + n:], "<i8").tolist() == [0, 1, 2]
    metadata = safetensors.safe_open(tmp_path / "f", "np").metadata()
    assert json.loads(metadata["genesis.structure"])


def test_file_objects_and_map_location(tmp_path):
    buf = io.BytesIO()
    genesis.save({"a": genesis.ones(2)}, buf)
    buf.seek(0)
    assert genesis.load(buf, map_location="cpu")["a"].tolist() == [1.0, 1.0]
    genesis.save([genesis.ones(2)], tmp_path / "m")
    seen = []
    out = genesis.load(tmp_path / "m", map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu"] and out[0].device == genesis.device("cpu")
    assert genesis.load(tmp_path / "m", map_location={"cuda:0": "cpu"})[0].tolist() == [1.0, 1.0]


def test_mmap_maps_the_file_copy_on_write(tmp_path, rng):
    """load(mmap=True) gives the saved values, taken from the file, whose bytes stay as saved
    when a loaded tensor is written to; an open file cannot be mapped, as in torch."""
    saved = {"w": genesis.tensor(rng.standard_normal((3, 4)).astype(np.float32)),
             "b": genesis.tensor(np.arange(5)), "e": genesis.zeros(0)}
    genesis.save(saved, tmp_path / "m.pt")
    loaded = genesis.load(tmp_path / "m.pt", mmap=True)
    for key, t in saved.items():
        _values_equal(loaded[key], t)
    loaded["w"].add_(1.0)
    _values_equal(genesis.load(tmp_path / "m.pt", mmap=True)["w"], saved["w"])
    torch.save({"w": torch.ones(2)}, tmp_path / "t.pt")
    with open(tmp_path / "m.pt", "rb") as f, pytest.raises(ValueError) as got:
        genesis.load(f, mmap=True)
    with open(tmp_path / "t.pt", "rb") as f, pytest.raises(ValueError) as expected:
        torch.load(f, mmap=True)
    assert str(got.value) == str(expected.value)


@skip_no_cuda
def test_cuda_tensors_saved_from_host_and_mapped(tmp_path):
    t = genesis.arange(6, dtype=genesis.float32).reshape(2, 3).cuda()
    genesis.save({"t": t}, tmp_path / "c")
    assert genesis.load(tmp_path / "c")["t"].device.type == "cuda"
    cpu = genesis.load(tmp_path / "c", map_location="cpu")["t"]
    assert cpu.device.type == "cpu" and cpu.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert safetensors.numpy.load_file(tmp_path / "c")["t"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_pickle_round_trip():
    t = genesis.tensor([[1.0, 2.0]], dtype=genesis.bfloat16, requires_grad=True)
    back = pickle.loads(pickle.dumps(t))
    _values_equal(back, t)


def test_failed_save_leaves_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    genesis.save({"a": genesis.zeros(1000), "b": genesis.zeros(10)}, path)
    before = path.read_bytes()
    written = []

    def failing(arr):
        if written:
            raise OSError("disk full")
        written.append(arr)
        return np.ascontiguousarray(arr)

    monkeypatch.setattr(_safetensors, "_little_endian", failing)
    with pytest.raises(OSError, match="disk full"):
        genesis.save({"a": genesis.ones(1000), "b": genesis.ones(10)}, path)
    assert written and path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_unsupported_object_writes_nothing(tmp_path):
    with pytest.raises(TypeError, match=r"cannot store an object of type object at 'a\.b'"):
        genesis.save({"a": {"b": object()}}, tmp_path / "x")
    with pytest.raises(TypeError, match="dict keys must be"):
        genesis.save({genesis.device("cpu"): 1}, tmp_path / "x")
    assert os.listdir(tmp_path) == []


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        genesis.load("/nonexistent/dir/ckpt.safetensors")


def _valid_file(tmp_path):
    path = tmp_path / "good"
    genesis.save({"w": genesis.arange(12, dtype=genesis.float32).reshape(3, 4)}, path)
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    return raw, n, json.loads(raw[8:8 + n])


def _with_header(header, data):
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def _corruptions(raw, n, header):
    data = raw[8 + n:]
    bad_dtype = dict(header, w=dict(header["w"], dtype="F8"))
    bad_offsets = dict(header, w=dict(header["w"], data_offsets=[0, 4096]))
    bad_shape = dict(header, w=dict(header["w"], shape=[3, 5]))
    bad_structure = dict(header, __metadata__={"genesis.structure": '{"dict": [["w", '
                                                                    '{"tensor": "zz"}]]}'})
    bad_tag = dict(header, __metadata__={"genesis.structure": '{"pickle": "x"}'})
    too_deep = dict(header, __metadata__={"genesis.structure": "[" * 10 ** 5 + "]" * 10 ** 5})
    return {
        "empty": (b"", "shorter than the 8-byte header length"),
        "short": (raw[:5], "shorter than the 8-byte header length"),
        "huge header length": ((10 ** 12).to_bytes(8, "little") + raw[8:], "header length"),
        "truncated header": (raw[:8 + n // 2], "header length"),
        "truncated data": (raw[:-10], "truncated checkpoint: tensor 'w'"),
        "invalid json": (raw[:8] + b"{" * n + data, "not valid JSON"),
        "not an object": (_with_header([1, 2], b""), "not a JSON object"),
        "unknown dtype": (_with_header(bad_dtype, data), "unknown dtype 'F8'"),
        "offsets out of range": (_with_header(bad_offsets, data), "truncated checkpoint"),
        "offsets/shape mismatch": (_with_header(bad_shape, data), "needs 60 bytes"),
        "missing tensor": (_with_header(bad_structure, data), "does not hold"),
        "unknown node": (_with_header(bad_tag, data), "unknown node type 'pickle'"),
        "too deep": (_with_header(too_deep, data), "structure stored in its header is invalid"),
    }


@pytest.mark.parametrize("case", ["empty", "short", "huge header length", "truncated header",
                                  "truncated data", "invalid json", "not an object",
                                  "unknown dtype", "offsets out of range",
                                  "offsets/shape mismatch", "missing tensor", "unknown node",
                                  "too deep"])
def test_corrupt_files_raise_clear_errors(case, tmp_path):
    content, message = _corruptions(*_valid_file(tmp_path))[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message) as info:
        genesis.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, RuntimeError)


class _Tied(genesis.nn.Module):
    """A model with what whole-model saves meet: a shared submodule, a tied weight, a buffer,
    a function and a class in attributes, an LSTM, a Transformer layer, sets and dicts."""

    def __init__(self):
        super().__init__()
        self.embed = genesis.nn.Embedding(11, 8)
        self.block = genesis.nn.Sequential(genesis.nn.Linear(8, 8), genesis.nn.GELU())
        self.again = self.block
        self.rnn = genesis.nn.LSTM(8, 8, num_layers=2)
        self.layer = genesis.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        self.head = genesis.nn.Linear(8, 11)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", genesis.tensor(0.5))
        self.act, self.norm_type, self.tags = genesis.tanh, genesis.nn.LayerNorm, {"a", 3}

    def forward(self, ids):
        x = self.again(self.block(self.embed(ids))) * self.scale
        x = self.layer(self.act(self.rnn(x)[0]))
        return self.head(x)


def test_whole_module_round_trip(tmp_path):
    genesis.manual_seed(0)
    model = _Tied().eval()
    genesis.save(model, tmp_path / "model.pt")
    back = genesis.load(tmp_path / "model.pt", weights_only=False)
    ids = genesis.randint(0, 11, (5, 3))
    assert type(back) is _Tied and not back.training
    assert genesis.equal(back(ids), model(ids))
    assert back.again is back.block and back.head.weight is back.embed.weight
    assert isinstance(back.head.weight, genesis.nn.Parameter) and back.head.weight.requires_grad
    assert back.act is genesis.tanh and back.norm_type is genesis.nn.LayerNorm
    assert back.tags == {"a", 3} and back.layer.activation is model.layer.activation
    assert list(back.state_dict()) == list(model.state_dict())
    back.head.weight.sum().backward()
    assert back.embed.weight.grad is not None


def test_whole_module_needs_weights_only_false(tmp_path):
    genesis.save({"model": genesis.nn.Linear(2, 3)}, tmp_path / "m")
    with pytest.raises(pickle.UnpicklingError, match=r"holds genesis\.nn\..*Linear, saved whole"):
        genesis.load(tmp_path / "m")
    assert isinstance(genesis.load(tmp_path / "m", weights_only=False)["model"],
                      genesis.nn.Linear)


def test_parameters_sets_and_ordered_dicts_load_weights_only(tmp_path):
    from collections import OrderedDict
    p = genesis.nn.Parameter(genesis.ones(2), requires_grad=False)
    obj = {"ps": [p, p], "s": {1, "x"}, "od": OrderedDict(b=1, a=2)}
    genesis.save(obj, tmp_path / "x")
    back = genesis.load(tmp_path / "x")
    assert type(back["ps"][0]) is genesis.nn.Parameter and back["ps"][0] is back["ps"][1]
    assert not back["ps"][0].requires_grad
    assert back["s"] == {1, "x"} and back["od"] == obj["od"] and type(back["od"]) is OrderedDict


def test_unnamed_functions_are_refused(tmp_path):
    model = genesis.nn.Linear(2, 2)
    model.act = lambda x: x
    with pytest.raises(TypeError, match=r"at 'act'.*not reachable by its name"):
        genesis.save(model, tmp_path / "m")
    assert os.listdir(tmp_path) == []


def test_only_modules_are_made_whole(tmp_path):
    genesis.save(genesis.nn.Identity(), tmp_path / "m")
    raw = (tmp_path / "m").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    structure = json.loads(header["__metadata__"]["genesis.structure"])
    structure["object"]["class"] = ["collections", "OrderedDict"]
    header["__metadata__"]["genesis.structure"] = json.dumps(structure)
    (tmp_path / "m").write_bytes(_with_header(header, raw[8 + n:]))
    with pytest.raises(CheckpointError, match="is not a genesis.nn.Module class"):
        genesis.load(tmp_path / "m", weights_only=False)


@dataclasses.dataclass
class _Config:
    """A config as scripts keep next to the weights in a checkpoint (build-nanogpt's GPTConfig)."""
    width: int = 8
    name: str = "gpt"


@dataclasses.dataclass(frozen=True)
class _FrozenConfig:
    depth: int = 2


class _Custom:
    def __reduce__(self):
        return (_Custom, ())


def test_plain_objects_round_trip_with_weights_only_false(tmp_path):
    config = _Config(width=32)
    obj = {"model": {"w": genesis.ones(2)}, "config": config, "again": config,
           "frozen": _FrozenConfig(3)}
    genesis.save(obj, tmp_path / "ckpt")
    with pytest.raises(pickle.UnpicklingError, match=r"holds \S*_Config, saved whole"):
        genesis.load(tmp_path / "ckpt")
    back = genesis.load(tmp_path / "ckpt", weights_only=False)
    assert back["config"] == config and type(back["config"]) is _Config
    assert back["again"] is back["config"] and back["frozen"] == _FrozenConfig(3)


@pytest.mark.parametrize("value", [_Custom(), range(3), object()],
                         ids=["reduce", "range", "object"])
def test_objects_with_their_own_pickling_are_refused(value, tmp_path):
    with pytest.raises(TypeError, match="cannot store an object of type"):
        genesis.save({"x": value}, tmp_path / "x")
    assert os.listdir(tmp_path) == []
