"""genesis.load on the files torch.save writes (zip archive and the pre-1.6 pickle stream):
values, dtypes, views and shared storage, containers, map_location, byte order, and the
refusals that keep code in the file from running."""

import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

import genesis
from genesis.serialization import CheckpointError

from helpers import ALL_DTYPES, TORCH_DTYPES, make_pair

FORMATS = {"zip": True, "legacy": False}


def _save(obj, path, fmt):
    torch.save(obj, path, _use_new_zipfile_serialization=FORMATS[fmt])
    return path


def _numpy(t):
    return t.detach().float().numpy() if t.dtype is torch.bfloat16 else t.detach().numpy()


def _assert_same(g, t):
    assert g.dtype is genesis.dtypes.as_dtype(str(t.dtype).removeprefix("torch."))
    assert tuple(g.shape) == tuple(t.shape) and g.requires_grad == t.requires_grad
    g_values = g.detach().float() if g.dtype is genesis.bfloat16 else g.detach()
    np.testing.assert_array_equal(g_values.numpy(), _numpy(t))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_every_dtype_loads(fmt, dtype, tmp_path, rng):
    _, t = make_pair((3, 4), dtype, rng=rng)
    _assert_same(genesis.load(_save(t, tmp_path / "t.pt", fmt)), t)


@pytest.mark.parametrize("fmt", FORMATS)
def test_state_dict_loads_into_a_genesis_model(fmt, tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    sd = genesis.load(_save(net.state_dict(), tmp_path / "sd.pt", fmt))
    assert type(sd) is collections.OrderedDict and list(sd) == list(net.state_dict())
    assert sd._metadata == net.state_dict()._metadata
    model = genesis.nn.Sequential(genesis.nn.Linear(4, 8), genesis.nn.ReLU(),
                                  genesis.nn.Linear(8, 2))
    model.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(model(genesis.tensor(x)).detach().numpy(),
                               net(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_share_their_storage_as_in_torch(fmt, tmp_path):
    base = torch.arange(12.0)
    obj = {"base": base, "slice": base[2:10:3], "t": base.view(3, 4).t(),
           "expanded": torch.ones(1, 3).expand(2, 3), "empty": torch.zeros(0, 5)}
    loaded = genesis.load(_save(obj, tmp_path / "v.pt", fmt))
    for key, t in obj.items():
        _assert_same(loaded[key], t)
    assert loaded["t"].stride() == obj["t"].stride()
    loaded["base"][2] = -1.0  # one storage, as torch.load gives
    assert loaded["slice"][0].item() == -1.0 and loaded["t"][2, 0].item() == -1.0


@pytest.mark.parametrize("fmt", FORMATS)
def test_containers_parameters_and_torch_values(fmt, tmp_path):
    p = torch.nn.Parameter(torch.randn(2, 2))
    obj = {"param": p, "grad": torch.ones(3, requires_grad=True), "frozen":
           torch.nn.Parameter(torch.zeros(2), requires_grad=False),
           "nested": [(1, 2.5, "s", None, True), {3: b"raw"}], "set": {1, 2},
           "frozenset": frozenset({"a"}), "dtype": torch.bfloat16,
           "device": torch.device("cuda", 1), "size": torch.Size([2, 3]), "epoch": 7}
    loaded = genesis.load(_save(obj, tmp_path / "c.pt", fmt))
    assert type(loaded["param"]) is genesis.nn.Parameter and loaded["param"].requires_grad
    _assert_same(loaded["param"], p)
    assert not loaded["frozen"].requires_grad and loaded["grad"].requires_grad
    assert loaded["nested"] == [(1, 2.5, "s", None, True), {3: b"raw"}]
    assert loaded["set"] == {1, 2} and loaded["frozenset"] == frozenset({"a"})
    assert loaded["dtype"] is genesis.bfloat16 and loaded["device"] == genesis.device("cuda:1")
    assert loaded["size"] == genesis.Size([2, 3]) and isinstance(loaded["size"], genesis.Size)
    assert loaded["epoch"] == 7


def test_tensors_saved_on_another_device_follow_map_location(tmp_path):
    path = _save({"w": torch.ones(2)}, tmp_path / "m.pt", "zip")
    seen = []
    loaded = genesis.load(path, map_location=lambda t, where: seen.append(where))
    assert seen == ["cpu"] and loaded["w"].device == genesis.device("cpu")
    assert genesis.load(path, map_location={"cpu": "cpu"})["w"].device.type == "cpu"
    doubled = genesis.load(path, map_location=lambda t, where: t * 2)
    assert doubled["w"].tolist() == [2.0, 2.0]


def test_file_objects_and_big_endian_archives(tmp_path):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    path = _save({"t": t}, tmp_path / "le.pt", "zip")
    _assert_same(genesis.load(io.BytesIO(path.read_bytes()))["t"], t)
    big = tmp_path / "be.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(big, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                data = np.frombuffer(data, np.float32).byteswap().tobytes()
            dst.writestr(info, data)
    _assert_same(genesis.load(big)["t"], t)


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _SetsState:
    def __reduce__(self):
        return (set, ([],), {"attribute": 1})


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("weights_only", [True, False])
def test_code_in_the_file_never_runs(fmt, weights_only, tmp_path):
    marker = tmp_path / "ran"
    path = _save({"w": torch.ones(1), "evil": _RunsCode(marker)}, tmp_path / "e.pt", fmt)
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed: .* holds "
                                                     r"posix\.system"):
        genesis.load(path, weights_only=weights_only)
    assert not marker.exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_whole_torch_modules_and_foreign_objects_are_refused(fmt, tmp_path):
    with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.linear\.Linear"):
        genesis.load(_save(torch.nn.Linear(2, 2), tmp_path / "m.pt", fmt), weights_only=False)
    with pytest.raises(pickle.UnpicklingError, match="sets the state of a set"):
        genesis.load(_save(_SetsState(), tmp_path / "s.pt", fmt))


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_torchscript_archives_are_refused(tmp_path):
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "ts.pt")
    with pytest.raises(CheckpointError, match="TorchScript archive"):
        genesis.load(tmp_path / "ts.pt")


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_files_raise_checkpoint_error(fmt, tmp_path):
    data = _save({"w": torch.ones(1000)}, tmp_path / "t.pt", fmt).read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[:len(data) - 100])
    with pytest.raises(CheckpointError, match=r"cut\.pt"):
        genesis.load(tmp_path / "cut.pt")


def test_a_storage_shorter_than_its_tensor_is_corrupt(tmp_path):
    path = _save({"w": torch.ones(8)}, tmp_path / "ok.pt", "zip")
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data[:8] if info.filename.endswith("/data/0") else data)
    with pytest.raises(CheckpointError, match=r"data/0 does not hold 8 float32 values"):
        genesis.load(bad)


def test_genesis_files_still_load_as_safetensors(tmp_path):
    genesis.save({"w": genesis.ones(2)}, tmp_path / "g.pt")
    assert genesis.load(tmp_path / "g.pt")["w"].tolist() == [1.0, 1.0]
