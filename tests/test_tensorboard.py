"""genesis.utils.tensorboard against torch.utils.tensorboard: the same calls, with the same
values as torch tensors and as genesis tensors, write the same events (read back with
TensorBoard's own loader, compared field for field but the wall time) and the same projector
files; bad arguments raise torch's errors."""

import pathlib
import re
import socket
import subprocess
import sys
import types

import numpy as np
import pytest
import torch
import torch.utils.tensorboard as torch_tb
import torch.utils.tensorboard._onnx_graph as torch_onnx_graph
import torch.utils.tensorboard._pytorch_graph as torch_pytorch_graph
import torch.utils.tensorboard.summary as torch_summary
from google.protobuf import text_format
from helpers import ALL_DTYPES, TORCH_DTYPES
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
from tensorboard.compat.proto import event_pb2, graph_pb2

import genesis
import genesis.utils.tensorboard as genesis_tb
from genesis.utils.tensorboard import _onnx_graph
from genesis.utils.tensorboard import summary as genesis_summary


def _events(root):
    """{directory relative to root: [events, wall times zeroed]} of every event file under
    root, files in the order they were opened. Events compare as their text form (every field,
    floats to the last bit, bytes escaped), which shows where they differ."""
    runs = {}
    for path in sorted(pathlib.Path(root).rglob("events.out.tfevents.*"), key=_opened):
        events = runs.setdefault(str(path.parent.relative_to(root)), [])
        for event in LegacyEventFileLoader(str(path)).Load():
            event.wall_time = 0
            events.append(str(event))
    return runs


def _opened(path):
    """(directory, second, counter) of an event file named events.out.tfevents.<second>.<host>.
    <pid>.<counter><suffix> by tensorboard's writer: its counter, process-wide, orders files
    opened in one second (as numbers: 10 after 9)."""
    match = re.fullmatch(r"events\.out\.tfevents\.(\d+)\..+\.\d+\.(\d+)(.*)", path.name)
    return str(path.parent), int(match.group(1)), int(match.group(2))


class Lib:
    """One side of a comparison: its writer, its summary module and its tensors."""

    def __init__(self, module, summary, tensor):
        self.SummaryWriter = module.SummaryWriter
        self.summary = summary
        self.tensor = tensor


def _torch_tensor(a, dtype=None):
    t = torch.from_numpy(np.array(a))
    return t if dtype is None else t.to(TORCH_DTYPES[dtype])


TORCH = Lib(torch_tb, torch_summary, _torch_tensor)


def _genesis(device="cpu"):
    def tensor(a, dtype=None):
        t = genesis.tensor(np.array(a), device=device)
        return t if dtype is None else t.to(dtype)

    return Lib(genesis_tb, genesis_summary, tensor)


def _write_both(tmp_path, calls, device="cpu", **kwargs):
    """`calls(writer, lib)` run with torch's writer and genesis's, into two log dirs; both logs'
    events, asserted equal, are returned."""
    logs = {}
    for name, lib in (("torch", TORCH), ("genesis", _genesis(device))):
        with lib.SummaryWriter(tmp_path / name, **kwargs) as writer:
            calls(writer, lib)
        logs[name] = _events(tmp_path / name)
    assert logs["genesis"] == logs["torch"]
    return logs["genesis"]


def _parsed(log, run="."):
    return [text_format.Parse(text, event_pb2.Event()) for text in log[run]]


def _values(log, run="."):
    return [v for event in _parsed(log, run) for v in event.summary.value]


def _same_error(call):
    """`call(lib)` raises the same error type, with the same words, for torch and genesis (but
    the library's name in the types it names: torch.Size, genesis.Size)."""
    errors = []
    for lib in (TORCH, _genesis()):
        with pytest.raises(Exception) as info:
            call(lib)
        message = " ".join(str(info.value).split()).replace("genesis.", "torch.")
        errors.append((type(info.value), message))
    assert errors[1] == errors[0]
    return errors[1]


def test_scalars(tmp_path, rng, device):
    x = rng.standard_normal(5).astype(np.float32)

    def calls(w, lib):
        w.add_scalar("loss", lib.tensor(x[0]), 0)
        w.add_scalar("loss", lib.tensor(x[1:2]), 1, walltime=12.5)
        w.add_scalar("loss/bf16", lib.tensor(x[2], genesis.bfloat16), 2)
        w.add_scalar("loss/half", lib.tensor(x[3], genesis.float16), np.int64(3))
        w.add_scalar("py", float(x[4]), 4)
        w.add_scalar("py", 7, 5)
        w.add_scalar("np", np.float32(x[4]), 6)
        w.add_scalar("np", x[:1], 7)
        w.add_scalar("new", lib.tensor(x[0]), 8, new_style=True)
        w.add_scalar("double", lib.tensor(x[0].astype(np.float64)), 9, new_style=True,
                     double_precision=True)
        w.add_scalar("nostep", 1.0)
        w.add_scalar("grad", lib.tensor(x[:1]).requires_grad_() * 2, 10)

    values = _values(_write_both(tmp_path, calls, device))
    assert [v.tag for v in values][:2] == ["loss", "loss"]
    assert values[0].simple_value == x[0]


def test_add_scalars_writes_a_run_per_tag(tmp_path, rng):
    x = rng.standard_normal((3, 2))

    def calls(w, lib):
        for step, row in enumerate(x):
            w.add_scalars("run/loss", {"train": lib.tensor(row[0]), "valid": row[1]}, step)
        w.add_scalar("main", 1.0, 0)

    log = _write_both(tmp_path, calls)
    assert sorted(log) == [".", "run_loss_train", "run_loss_valid"]
    assert [v.simple_value for v in _values(log, "run_loss_valid")] == \
        pytest.approx(x[:, 1], rel=1e-7)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_add_tensor(tmp_path, rng, dtype):
    x = rng.standard_normal((2, 3)) * 50

    def calls(w, lib):
        w.add_tensor("t", lib.tensor(x, dtype), 3)

    assert _values(_write_both(tmp_path, calls))[0].tensor.tensor_shape.dim[1].size == 3


@pytest.mark.filterwarnings("ignore:The number of bins estimated may be suboptimal")
@pytest.mark.parametrize("bins", ["tensorflow", "auto", "fd", "doane", "scott", "stone", "rice",
                                  "sturges", "sqrt", 7, "edges"])
def test_add_histogram(tmp_path, rng, device, bins):
    x = rng.standard_normal(500).astype(np.float32) * 3
    edges = np.linspace(-4, 4, 9)
    ints = rng.integers(-5, 5, 60)

    def calls(w, lib):
        chosen = edges if bins == "edges" else bins
        w.add_histogram("h", lib.tensor(x), 0, bins=chosen)
        w.add_histogram("h", lib.tensor(x.reshape(20, 25)), 1, bins=chosen, max_bins=5)
        w.add_histogram("ints", lib.tensor(ints), 2, bins=chosen)
        w.add_histogram("np", x[:10].astype(np.float64), 3, bins=chosen)

    assert _values(_write_both(tmp_path, calls, device))[0].histo.num == 500


def test_training_loop_logs_as_torchs(tmp_path, rng):
    """A tutorial's logging: parameters (which require grad) as histograms each step, the
    loss as a scalar, weights as an image."""
    weight = rng.standard_normal((4, 3)).astype(np.float32)
    losses = rng.random(3)

    def calls(w, lib):
        model = (torch.nn if lib is TORCH else genesis.nn).Linear(3, 4)
        with (torch if lib is TORCH else genesis).no_grad():
            model.weight.copy_(lib.tensor(weight))
            model.bias.zero_()
        for step, loss in enumerate(losses):
            w.add_scalar("Loss/train", loss, step)
            for name, parameter in model.named_parameters():
                w.add_histogram(name, parameter, step)
        w.add_image("weight", model.weight, dataformats="HW")

    assert [v.tag for v in _values(_write_both(tmp_path, calls))][:3] == \
        ["Loss/train", "weight", "bias"]


def test_add_histogram_raw(tmp_path, rng):
    counts = rng.integers(0, 9, 6).tolist()
    limits = np.cumsum(rng.random(6)).tolist()

    def calls(w, lib):
        w.add_histogram_raw("raw", -1.0, 2.5, sum(counts), 3.25, 9.5, limits, counts, 4)

    assert list(_values(_write_both(tmp_path, calls))[0].histo.bucket) == counts


@pytest.mark.parametrize("shape,dataformats", [((3, 6, 5), "CHW"), ((6, 5, 3), "HWC"),
                                               ((6, 5), "HW"), ((5, 6), "WH"),
                                               ((1, 6, 5), "CHW"), ((6, 5, 4), "HWC"),
                                               ((3, 5, 6), "cwh")])
def test_add_image(tmp_path, rng, device, shape, dataformats):
    x = rng.random(shape).astype(np.float32) * 1.2 - 0.1  # clipped beyond [0, 1]
    x8 = rng.integers(0, 256, shape).astype(np.uint8)

    def calls(w, lib):
        w.add_image("float", lib.tensor(x), 0, dataformats=dataformats)
        w.add_image("uint8", lib.tensor(x8), 1, dataformats=dataformats)
        w.add_image("numpy", x, 2, dataformats=dataformats)
        w.add_image("bf16", lib.tensor(x, genesis.bfloat16), 3, dataformats=dataformats)

    picture = _values(_write_both(tmp_path, calls, device))[0].image
    assert picture.encoded_image_string.startswith(b"\x89PNG")


@pytest.mark.parametrize("shape,dataformats", [((5, 3, 4, 6), "NCHW"), ((2, 4, 6, 3), "NHWC"),
                                               ((9, 1, 4, 6), "NCHW"), ((4, 6, 3, 1), "HWCN")])
def test_add_images(tmp_path, rng, shape, dataformats):
    x = rng.random(shape).astype(np.float32)

    def calls(w, lib):
        w.add_images("batch", lib.tensor(x), 0, dataformats=dataformats)

    _write_both(tmp_path, calls)


def test_add_image_with_boxes(tmp_path, rng):
    x = rng.random((3, 40, 50)).astype(np.float32)
    boxes = np.array([[2, 3, 30, 20], [10, 12, 45, 38]], dtype=np.float32)

    def calls(w, lib):
        w.add_image_with_boxes("boxes", lib.tensor(x), lib.tensor(boxes), 0)
        w.add_image_with_boxes("labelled", lib.tensor(x), lib.tensor(boxes), 1,
                               labels=["cat", "dog"])
        w.add_image_with_boxes("scaled", lib.tensor(x), boxes, 2, rescale=2, labels="one")

    _write_both(tmp_path, calls)


def test_add_figure(tmp_path, rng):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = rng.standard_normal(20)

    def calls(w, lib):
        figures = []
        for _ in range(3):
            figure = plt.figure(figsize=(2, 1.5), dpi=50)
            plt.plot(y)
            figures.append(figure)
        w.add_figure("one", figures[0], 0)
        w.add_figure("many", figures[1:], 1)
        assert not plt.get_fignums()

    picture = _values(_write_both(tmp_path, calls))[0].image
    assert (picture.width, picture.height) == (100, 75)


def test_text_custom_scalars_and_audio(tmp_path, rng):
    sound = rng.uniform(-1.3, 1.3, 300).astype(np.float32)

    def calls(w, lib):
        w.add_text("notes", "lr **3e-4**, é", 0)
        w.add_custom_scalars_multilinechart(["loss/train", "loss/valid"], "losses", "both")
        w.add_custom_scalars_marginchart(["acc", "acc_lo", "acc_hi"])
        w.add_custom_scalars({"a": {"x": ["Multiline", ["t1", "t2"]],
                                    "y": ["Margin", ["v", "lo", "hi"]]}, "b": {}})
        w.add_audio("sound", lib.tensor(sound), 1, sample_rate=8000)
        w.add_audio("quiet", sound * 0.5, 2)

    values = _values(_write_both(tmp_path, calls))
    assert values[0].tag == "notes/text_summary"
    assert values[0].tensor.string_val == ["lr **3e-4**, é".encode()]


def test_add_hparams(tmp_path, rng, device):
    lr = float(rng.random())

    def calls(w, lib):
        w.add_hparams({"lr": lr, "layers": 4, "act": "gelu", "tied": True, "none": None,
                       "t": lib.tensor(np.array([lr]))},
                      {"hparam/loss": lib.tensor(np.float32(lr * 2)), "hparam/acc": 0.5},
                      hparam_domain_discrete={"layers": [2, 4, 8], "act": ["gelu", "relu"],
                                              "tied": [True, False]},
                      run_name="trial")
        w.add_hparams({"lr": lr}, {"m": 1.0}, run_name="stepped", global_step=7)

    log = _write_both(tmp_path, calls, device)
    assert sorted(log) == [".", "stepped", "trial"]
    tags = [v.tag for v in _values(log, "trial")]
    assert tags == ["_hparams_/experiment", "_hparams_/session_start_info",
                    "_hparams_/session_end_info", "hparam/loss", "hparam/acc"]


def test_hparams_summaries(rng):
    hp = {"lr": float(rng.random()), "name": "x"}
    ours = genesis_summary.hparams(hp, {"m": 0.0}, {"name": ["x", "y"]})
    assert ours == torch_summary.hparams(hp, {"m": 0.0}, {"name": ["x", "y"]})


def test_add_hparams_default_run_name_is_the_time(tmp_path):
    with genesis_tb.SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1}, {"m": 1.0})
    runs = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert len(runs) == 1 and re.fullmatch(r"\d+\.\d+", runs[0])


def test_pr_curves(tmp_path, rng, device):
    labels = rng.integers(0, 2, 200)
    predictions = rng.random(200).astype(np.float32)
    weights = rng.random(200)
    rows = rng.random((6, 9)).astype(np.float32)

    def calls(w, lib):
        w.add_pr_curve("pr", lib.tensor(labels), lib.tensor(predictions), 0)
        w.add_pr_curve("pr", labels.astype(bool), predictions, 1, num_thresholds=20,
                       weights=weights)
        w.add_pr_curve("capped", lib.tensor(labels), lib.tensor(predictions), 2,
                       num_thresholds=300)
        w.add_pr_curve_raw("raw", *(lib.tensor(r) for r in rows), 3, num_thresholds=9)

    tensor = _values(_write_both(tmp_path, calls, device))[0].tensor
    assert [d.size for d in tensor.tensor_shape.dim] == [6, 127]


def test_add_mesh(tmp_path, rng, device):
    vertices = rng.standard_normal((1, 8, 3)).astype(np.float32)
    colors = rng.integers(0, 256, (1, 8, 3)).astype(np.uint8)
    faces = rng.integers(0, 8, (1, 4, 3)).astype(np.int32)
    config = {"camera": {"cls": "PerspectiveCamera", "fov": 75}}

    def calls(w, lib):
        w.add_mesh("cloud", lib.tensor(vertices), global_step=0)
        w.add_mesh("mesh", lib.tensor(vertices), lib.tensor(colors), lib.tensor(faces), config, 1)
        w.add_mesh("lists", vertices.tolist(), faces=faces, global_step=2)

    assert [v.tag for v in _values(_write_both(tmp_path, calls, device))][:4] == \
        ["cloud_VERTEX", "mesh_VERTEX", "mesh_FACE", "mesh_COLOR"]


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "tfevents" not in p.name}


def test_add_embedding(tmp_path, rng, capsys):
    mat = rng.standard_normal((6, 4)).astype(np.float32)
    labels = [f"w{i}" for i in range(6)]
    table = [[f"w{i}", i % 2] for i in range(6)]
    images = rng.random((6, 3, 5, 5)).astype(np.float32)

    def calls(w, lib):
        w.add_embedding(lib.tensor(mat), labels, lib.tensor(images))
        w.add_embedding(mat, table, global_step=3, tag="a/b%c", metadata_header=["word", "odd"])
        w.add_embedding(lib.tensor(mat[:, :2]), tag="a/b%c", global_step=3)

    _write_both(tmp_path, calls)
    ours, theirs = _files(tmp_path / "genesis"), _files(tmp_path / "torch")
    assert ours == theirs
    assert {"projector_config.pbtxt", "00000/default/sprite.png",
            "00003/a%2fb%25c/metadata.tsv"} < set(ours)
    assert capsys.readouterr().out.count("Embedding dir exists") == 2


def test_add_video(tmp_path, rng, capsys):
    """With moviepy.editor (moviepy 1) a GIF; without it (no moviepy, or moviepy 2) torch
    prints why and writes the tag alone, and so does genesis."""
    video = rng.random((3, 2, 3, 4, 5)).astype(np.float32)

    def calls(w, lib):
        w.add_video("clip", lib.tensor(video), 0, fps=2)

    value = _values(_write_both(tmp_path, calls))[0]
    out = capsys.readouterr().out.splitlines()
    assert value.tag == "clip" and out[:len(out) // 2] == out[len(out) // 2:]


def test_purge_step_suffix_reopen_and_flush(tmp_path, rng):
    x = rng.standard_normal(4)

    def calls(w, lib):
        w.add_scalar("a", x[0], 0)
        w.flush()
        w.close()
        w.close()
        w.add_scalar("a", x[1], 1)  # opens the log again, without the purge events

    log = _write_both(tmp_path, calls, purge_step=5, filename_suffix=".run", max_queue=2,
                      flush_secs=1)
    restarts = [e for e in _parsed(log) if e.HasField("session_log")]
    assert [(e.step, e.session_log.status) for e in restarts] == [(5, event_pb2.SessionLog.START)]
    assert all(p.name.endswith(".run") for p in (tmp_path / "genesis").iterdir())


def test_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for lib in (TORCH, _genesis()):
        writer = lib.SummaryWriter(comment="_lr0.1")
        writer.close()
    host = re.escape(socket.gethostname())
    name = re.compile(rf"[A-Z][a-z]{{2}}\d\d_\d\d-\d\d-\d\d_{host}_lr0\.1")
    assert name.fullmatch(pathlib.Path(writer.get_logdir()).name)
    assert writer.get_logdir().startswith("runs")
    assert all(name.fullmatch(p.name) for p in (tmp_path / "runs").iterdir())


def test_onnx_graph_parse():
    def value(name, dims):
        shape = types.SimpleNamespace(dim=[types.SimpleNamespace(dim_value=d) for d in dims])
        return types.SimpleNamespace(name=name, type=types.SimpleNamespace(
            tensor_type=types.SimpleNamespace(elem_type=1, shape=shape)))

    attribute = types.SimpleNamespace(ListFields=lambda: [("name", "alpha"), ("f", 0.5)])
    graph = types.SimpleNamespace(
        input=[value("x", [1, 3])], output=[value("y", [1, 2])],
        node=[types.SimpleNamespace(output=["y"], op_type="Gemm", input=["x", "w"],
                                    attribute=[attribute])])
    assert _onnx_graph.parse(graph) == torch_onnx_graph.parse(graph)


def test_api_names_are_torchs():
    def public(cls):
        return {n for n in dir(cls) if not n.startswith("_")}

    assert public(genesis_tb.SummaryWriter) == public(torch_tb.SummaryWriter)
    assert public(genesis_tb.FileWriter) == public(torch_tb.FileWriter)
    assert genesis_tb.__all__ == torch_tb.__all__
    assert genesis_tb.RecordWriter is torch_tb.RecordWriter
    assert genesis_summary.__all__ == torch_summary.__all__


@pytest.mark.parametrize("call", [
    lambda lib: lib.summary.image("i", np.zeros((3, 4, 4)), dataformats="CCW"),
    lambda lib: lib.summary.image("i", np.zeros((3, 4, 4)), dataformats="NCHW"),
    lambda lib: lib.summary.scalar("s", lib.tensor(np.zeros(2))),
    lambda lib: lib.summary.histogram("h", lib.tensor(np.zeros(0)), bins="auto"),
    lambda lib: lib.summary.histogram("h", [1.0, 2.0], bins="auto"),
    lambda lib: lib.summary.hparams([1], {}),
    lambda lib: lib.summary.hparams({}, None),
    lambda lib: lib.summary.hparams({"a": 1}, {}, {"a": [1.5]}),
    lambda lib: lib.summary.hparams({"a": [1]}, {}),
    lambda lib: lib.summary.custom_scalars({"c": {"t": ["Margin", ["a", "b"]]}}),
    lambda lib: lib.summary.audio("a", np.zeros((2, 3))),
    lambda lib: lib.summary.mesh("m", np.zeros((4, 3)), None, None, None),
], ids=["repeated-dim", "format-length", "scalar-size", "empty-histogram",
        "list-values", "hparams-not-dict", "metrics-not-dict", "domain-type", "hparam-type",
        "margin-tags", "audio-dims", "mesh-dims"])
def test_summary_errors(call):
    _same_error(call)


@pytest.mark.parametrize("call", [
    lambda w, lib: w.add_histogram_raw("r", 0, 1, 2, 1, 1, [1.0, 2.0], [2]),
    lambda w, lib: w.add_custom_scalars_marginchart(["a", "b"]),
    lambda w, lib: w.add_hparams({"a": 1}, [("m", 1)]),
    lambda w, lib: w.add_embedding(lib.tensor(np.zeros((3, 2))), ["a", "b"]),
    lambda w, lib: w.add_embedding(lib.tensor(np.zeros((3, 2))), label_img=lib.tensor(
        np.zeros((2, 3, 4, 4)))),
    lambda w, lib: w.add_embedding(lib.tensor(np.zeros((3, 2, 1)))),
    lambda w, lib: w.add_embedding(np.zeros((2, 2)), [["a", 1], ["b", 2]],
                                   metadata_header=["only"]),
    lambda w, lib: w.add_image("i", lib.tensor(np.zeros((3, 4, 4))), dataformats="HW"),
], ids=["raw-lengths", "margin-tags", "metrics-list", "metadata-count", "image-count",
        "mat-dims", "header-width", "image-format"])
def test_writer_errors(tmp_path, call):
    def in_writer(lib):
        with lib.SummaryWriter(tmp_path / lib.SummaryWriter.__module__) as w:
            call(w, lib)

    _same_error(in_writer)


def test_embedding_path_that_is_a_file(tmp_path):
    (tmp_path / "00000").mkdir()
    (tmp_path / "00000" / "default").write_text("")

    def call(lib):
        with lib.SummaryWriter(tmp_path) as w:
            w.add_embedding(np.zeros((2, 2)))

    kind, _ = _same_error(call)
    assert kind is NotADirectoryError


MISSING = """
import sys, types
sys.modules["tensorboard"] = {module}
for name in ("torch.utils.tensorboard", "genesis.utils.tensorboard"):
    try:
        __import__(name)
    except ImportError as e:
        print(type(e).__name__, e)
"""


@pytest.mark.parametrize("module", ["None", "types.ModuleType('tensorboard')",
                                    "types.SimpleNamespace(__version__='1.14.0')"],
                         ids=["missing", "no-version", "old"])
def test_import_error_without_tensorboard_is_torchs(module):
    out = subprocess.run([sys.executable, "-c", MISSING.format(module=module)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == 2 and out[0] == out[1]
    assert "ImportError" in out[0] or "ModuleNotFoundError" in out[0]


def test_import_loads_no_torch():
    code = ("import sys, genesis.utils.tensorboard; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def _cnn(nn, F):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3)
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc(F.max_pool2d(F.relu(self.conv1(x)), 2).flatten(1))

    return Net()


def _nested(nn, F):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Sequential(nn.Tanh()))
            self.fc = nn.Linear(32, 3)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    return Net()


def _mlp(nn, F):
    return nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))


def _graph_summary(graph_def):
    """(inputs, parameters, op scopes with repeats merged, outputs) of a model's GraphDef,
    the `.N` suffixes of input and parameter names dropped (torch's vary from trace to trace)."""
    ops = [n for n in graph_def.node if n.op not in ("IO Node", "prim::GetAttr", "prim::Constant",
                                                     "prim::ListConstruct")]
    scopes = [n.name.rpartition("/")[0] for n in ops]
    merged = [s for i, s in enumerate(scopes) if i == 0 or s != scopes[i - 1]]
    return ([re.sub(r"\.\d+$", "", n.name) for n in graph_def.node
             if n.name.startswith("input/")],
            sorted(re.sub(r"\.\d+$", "", n.name) for n in graph_def.node
                   if n.op == "prim::GetAttr"),
            merged,
            [n.name for n in graph_def.node if n.name.startswith("output/")])


@pytest.mark.parametrize("make, shape", [(_cnn, (1, 1, 6, 6)), (_mlp, (3, 4)),
                                         (_nested, (1, 1, 6, 6))])
def test_add_graph_matches_torchs_scopes_and_nodes(tmp_path, rng, make, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    with genesis_tb.SummaryWriter(tmp_path) as writer:
        writer.add_graph(make(genesis.nn, genesis.nn.functional), genesis.tensor(x))
    events = [text_format.Parse(t, event_pb2.Event()) for t in _events(tmp_path)["."]]
    graph_def = graph_pb2.GraphDef.FromString(events[1].graph_def)
    assert events[2].tagged_run_metadata.tag == "step1"
    torch_graph, _ = torch_pytorch_graph.graph(make(torch.nn, torch.nn.functional),
                                               torch.from_numpy(x))
    assert _graph_summary(graph_def) == _graph_summary(torch_graph)
    names = {n.name for n in graph_def.node}
    assert all(i in names for n in graph_def.node for i in n.input)


def test_add_graph_edges_follow_the_data_flow():
    graph_def, stepstats = genesis_tb._pytorch_graph.graph(
        _cnn(genesis.nn, genesis.nn.functional), genesis.randn(1, 1, 6, 6))
    nodes = {n.name: n for n in graph_def.node}
    conv = next(n for n in graph_def.node if n.op == "Convolution")
    assert conv.name.startswith("Net/Conv2d[conv1]/")
    assert list(conv.input) == ["input/x.1", "Net/Conv2d[conv1]/weight/weight",
                                "Net/Conv2d[conv1]/bias/bias"]
    relu = next(n for n in graph_def.node if n.op == "Relu")
    assert relu.name.startswith("Net/") and list(relu.input) == [conv.name]
    assert nodes["output/output.1"].input[0].startswith("Net/Linear[fc]/")
    shape = nodes["input/x.1"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [1, 1, 6, 6]
    assert stepstats.step_stats.dev_stats[0].device == "/device:CPU:0"


def test_add_graph_leaves_the_model_as_it_was():
    model = _mlp(genesis.nn, genesis.nn.functional)
    model[0].weight.requires_grad_(False)
    x = genesis.randn(3, 4)
    genesis_tb._pytorch_graph.graph(model, (x,))
    assert model.training and not model[0].weight.requires_grad and model[2].weight.requires_grad
    assert not x.requires_grad and not any(p.grad is not None for p in model.parameters())


def test_tutorial_add_graph_then_add_scalar(tmp_path):
    model = _cnn(genesis.nn, genesis.nn.functional)
    with genesis_tb.SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, genesis.randn(4, 1, 6, 6), verbose=False, use_strict_trace=True)
        writer.add_scalar("training loss", 0.5, 0)
    events = [text_format.Parse(t, event_pb2.Event()) for t in _events(tmp_path)["."]]
    assert [e.WhichOneof("what") for e in events] == ["file_version", "graph_def",
                                                      "tagged_run_metadata", "summary"]


@pytest.mark.parametrize("model, args, error", [
    ("linear", None, RuntimeError), ("linear", "abc", RuntimeError),
    ("linear", (3, 5), RuntimeError), ("function", (2, 4), AttributeError)])
def test_add_graph_errors_as_torchs(tmp_path, model, args, error, capsys):
    for name, lib, nn in (("torch", TORCH, torch.nn), ("genesis", _genesis(), genesis.nn)):
        net = nn.Linear(4, 2) if model == "linear" else (lambda x: x)
        x = lib.tensor(np.zeros(args, np.float32)) if isinstance(args, tuple) else args
        with lib.SummaryWriter(tmp_path / name) as writer, pytest.raises(error):
            writer.add_graph(net, x)
