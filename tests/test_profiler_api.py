"""genesis.profiler against torch.profiler: the same program profiled by both on the CPU gives the
same op counts, ranges, schedule actions and table layout; CUDA attribution over fake kernels."""

import gzip
import json
import pathlib
import re
import warnings

import numpy as np
import pytest
import torch
import torch.profiler as tp

import genesis
import genesis.profiler as gp
from genesis import dispatch
from genesis.backends.cuda import profiling
from genesis.profiler import recording
from helpers import run_checks_worker
from test_profiler import fake, fake_kernel  # noqa: F401  (fake: the fake CUDA event source)


def _program(lib, x, y, steps=3, prof=None):
    """add, mul and sum `steps` times, each step in a "step_body" range with an "inner" one."""
    for _ in range(steps):
        with lib.profiler.record_function("step_body"):
            z = x + y
            with lib.profiler.record_function("inner"):
                w = z * y
            w.sum()
        if prof is not None:
            prof.step()


def _inputs(lib, rng, shape=(4, 5)):
    return [lib.tensor(rng.standard_normal(shape).astype(np.float32)) for _ in range(2)]


def _profiled(lib, rng, **kwargs):
    activities = [lib.profiler.ProfilerActivity.CPU]
    inputs = _inputs(lib, rng)
    with lib.profiler.profile(activities=activities, **kwargs) as prof:
        _program(lib, *inputs)
    return prof


def _counts(prof, names):
    return {e.key: e.count for e in prof.key_averages() if e.key in names}


def test_op_counts_match_torch(rng):
    names = {"aten::add", "aten::mul", "aten::sum", "step_body", "inner"}
    ours, theirs = _counts(_profiled(genesis, rng), names), _counts(_profiled(torch, rng), names)
    assert ours == theirs == {name: 3 for name in names}


def test_ops_named_as_aten_or_genesis(rng):
    for e in _profiled(genesis, rng).events():
        assert e.name in ("step_body", "inner") or re.fullmatch(r"(aten|genesis)::\w+", e.name)


def test_record_function_nesting(rng):
    events = _profiled(genesis, rng).events()
    by_id = {}
    for e in events:
        by_id.setdefault(e.name, []).append(e)
    for body, inner, mul in zip(by_id["step_body"], by_id["inner"], by_id["aten::mul"]):
        assert body.cpu_parent is None and inner.cpu_parent is body and mul.cpu_parent is inner
        assert body.time_range.start <= inner.time_range.start <= mul.time_range.start
        assert mul.time_range.end <= inner.time_range.end <= body.time_range.end
    for add in by_id["aten::add"]:
        assert add.cpu_parent.name == "step_body"


def test_self_time_within_total(rng):
    prof = _profiled(genesis, rng)
    for e in list(prof.events()) + list(prof.key_averages()):
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        assert e.cpu_time == pytest.approx(e.cpu_time_total / e.count)
    for e in prof.events():
        assert sum(c.cpu_time_total for c in e.cpu_children) <= e.cpu_time_total


def _backward_structure(lib, rng):
    a, b = (lib.tensor(rng.standard_normal(4), requires_grad=True) for _ in range(2))
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]) as prof:
        (a * b).sum().backward()
    events = prof.events()
    nodes = [(e.name, [c.name for c in e.cpu_children]) for e in events
             if e.name.startswith("autograd::engine::evaluate_function: ")]
    muls = [e.cpu_parent.name if e.cpu_parent else None for e in events if e.name == "aten::mul"]
    return nodes, muls


def test_backward_nodes_as_torch(rng):
    assert _backward_structure(genesis, rng) == _backward_structure(torch, rng)


def test_record_function_decorator_and_idle(rng):
    x, y = _inputs(genesis, rng)

    @gp.record_function("decorated")
    def f(a):
        return a + a

    f(x)  # no profile: nothing recorded, nothing fails
    with gp.profile(activities=[gp.ProfilerActivity.CPU]) as prof:
        f(x)
        f(y)
    (avg,) = [e for e in prof.key_averages() if e.key == "decorated"]
    assert avg.count == 2
    add = [e for e in prof.events() if e.name == "aten::add"]
    assert [e.cpu_parent.name for e in add] == ["decorated", "decorated"]


@pytest.mark.parametrize("kwargs", [
    dict(wait=1, warmup=1, active=3, repeat=1),
    dict(wait=2, warmup=1, active=2),
    dict(wait=0, warmup=2, active=1, repeat=3),
    dict(wait=1, warmup=1, active=2, skip_first=3),
    dict(wait=3, warmup=1, active=2, skip_first=2, skip_first_wait=1, repeat=2),
])
def test_schedule_matches_torch(kwargs):
    ours, theirs = gp.schedule(**kwargs), tp.schedule(**kwargs)
    assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)]


def _scheduled(lib, rng, sched, steps):
    traces = []

    def ready(prof):
        traces.append(_counts(prof, {"ProfilerStep*", "aten::add", "inner"}))

    inputs = _inputs(lib, rng)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], schedule=sched,
                              on_trace_ready=ready) as prof:
        _program(lib, *inputs, steps=steps, prof=prof)
    return traces, prof.step_num


@pytest.mark.parametrize("kwargs,steps", [
    (dict(wait=1, warmup=1, active=2, repeat=2), 10),
    (dict(wait=1, warmup=1, active=3, repeat=1), 6),
    (dict(wait=0, warmup=1, active=2), 7),
])
def test_schedule_steps_match_torch(rng, kwargs, steps):
    ours = _scheduled(genesis, rng, gp.schedule(**kwargs), steps)
    theirs = _scheduled(torch, rng, tp.schedule(**kwargs), steps)
    assert ours == theirs


def test_malformed_schedule_warns_as_torch(rng):
    actions = ["RECORD", "RECORD", "NONE", "WARMUP", "NONE", "NONE"]
    messages = []
    for lib in (genesis, torch):
        Action = lib.profiler.ProfilerAction
        with pytest.warns(UserWarning) as caught:
            _scheduled(lib, rng, lambda step: getattr(Action, actions[min(step, 5)]), 5)
        messages.append([str(w.message) for w in caught if "Incorrect" in str(w.message)])
    assert messages[0] == messages[1] == ["Incorrect schedule: RECORD followed by NONE",
                                          "Incorrect schedule: WARMUP followed by NONE"]


def test_step_names_in_trace(rng, tmp_path):
    sched = gp.schedule(wait=1, warmup=1, active=2, repeat=1)
    with gp.profile(schedule=sched, activities=[gp.ProfilerActivity.CPU]) as prof:
        _program(genesis, *_inputs(genesis, rng), steps=5, prof=prof)
    prof.export_chrome_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    steps = [e["name"] for e in events if e["name"].startswith("ProfilerStep")]
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]


@pytest.mark.parametrize("acc_events", [False, True])
def test_events_of_last_or_every_cycle(rng, acc_events):
    counts = []
    for lib in (genesis, torch):
        sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
        inputs = _inputs(lib, rng)
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], schedule=sched,
                                  acc_events=acc_events) as prof:
            _program(lib, *inputs, steps=9, prof=prof)
        counts.append(_counts(prof, {"ProfilerStep*", "aten::mul"}))
    assert counts[0] == counts[1] == {"ProfilerStep*": 2 + 2 * acc_events,
                                      "aten::mul": 2 + 2 * acc_events}


def _table_shape(text):
    """(header names, column widths, footer labels) of a profiler table."""
    lines = text.splitlines()
    widths = [len(dash) for dash in lines[0].split()]
    headers = re.split(r"\s{2,}", lines[1].strip())
    footer = [line.split(":")[0] for line in lines if line.startswith("Self ")]
    return headers, widths[1:], footer, lines[0] == lines[2] == lines[-2]


@pytest.mark.parametrize("group", [False, True])
@pytest.mark.parametrize("sort_by", ["cpu_time_total", "self_cpu_time_total", None])
def test_table_layout_matches_torch(rng, group, sort_by):
    tables = [_profiled(lib, rng, record_shapes=True).key_averages(group_by_input_shape=group)
              .table(sort_by=sort_by, row_limit=4) for lib in (genesis, torch)]
    ours, theirs = (_table_shape(t) for t in tables)
    assert ours[0] == theirs[0] and ours[2] == theirs[2] and ours[3] and theirs[3]
    if not group:
        assert ours[1] == theirs[1]  # the shapes column's width follows the shapes themselves
    assert len(tables[0].splitlines()) == len(tables[1].splitlines())


def _memory_program(lib, rng):
    a, b = _inputs(lib, rng, (64, 64))
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                              profile_memory=True) as prof:
        with lib.profiler.record_function("block"):
            c = a + b
            c.view(-1).exp()
            c.add_(b)
    return prof


def test_profile_memory_as_torch(rng):
    ours, theirs = (_memory_program(lib, rng) for lib in (genesis, torch))
    tables = [p.key_averages().table(sort_by="self_cpu_memory_usage") for p in (ours, theirs)]
    assert _table_shape(tables[0])[0] == _table_shape(tables[1])[0]
    for prof in (ours, theirs):
        first = {}
        for e in prof.events():
            first.setdefault(e.name, e)
        assert first["aten::add"].self_cpu_memory_usage == 64 * 64 * 4
        assert first["aten::exp"].self_cpu_memory_usage == 64 * 64 * 4
    block = next(e for e in ours.events() if e.name == "block")  # torch also counts frees
    assert block.self_cpu_memory_usage == 0
    assert block.cpu_memory_usage == sum(c.cpu_memory_usage for c in block.cpu_children)
    assert _counts(ours, {"aten::add_"}) == _counts(theirs, {"aten::add_"}) == {"aten::add_": 1}
    inplace = next(e for e in ours.events() if e.name == "aten::add_")
    assert inplace.self_cpu_memory_usage == 0  # its child computes a temporary, then copies
    assert "32.00 KB" in tables[0].splitlines()[3]  # aten::add, also under add_


def test_table_sorted_and_limited(rng):
    averages = _profiled(genesis, rng).key_averages()
    rows = averages.table(sort_by="self_cpu_time_total", row_limit=3).splitlines()[3:6]
    expected = sorted(averages, key=lambda e: -e.self_cpu_time_total)[:3]
    assert [r.split()[0] for r in rows] == [e.key for e in expected]
    assert "CUDA" not in averages.table()


def test_group_by_input_shape(rng):
    a, b = _inputs(genesis, rng, (3,))
    c, d = _inputs(genesis, rng, (2, 2))
    with gp.profile(activities=[gp.ProfilerActivity.CPU], record_shapes=True) as prof:
        a + b
        c + d
        c + d
    adds = {str(e.input_shapes): e.count for e in prof.key_averages(group_by_input_shape=True)
            if e.key == "aten::add"}
    assert adds == {"[[3], [3]]": 1, "[[2, 2], [2, 2]]": 2}
    (add,) = [e for e in prof.key_averages() if e.key == "aten::add"]
    assert add.count == 3


def test_with_stack_names_the_caller(rng):
    x, _ = _inputs(genesis, rng)
    with gp.profile(activities=[gp.ProfilerActivity.CPU], with_stack=True) as prof:
        x.exp()
    (exp,) = [e for e in prof.events() if e.name == "aten::exp"]
    assert "test_profiler_api.py" in exp.stack[0] and "test_with_stack" in exp.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=5).table()
    assert "Source Location" not in prof.key_averages().table()


def test_chrome_trace_valid(rng, tmp_path):
    prof = _profiled(genesis, rng, record_shapes=True)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads(open(path).read())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(prof.events())
    assert {e["name"] for e in spans} == {e.name for e in prof.events()}
    for e in spans:
        assert e["dur"] >= 0 and isinstance(e["ts"], float)
        assert e["cat"] == ("user_annotation" if e["name"] in ("step_body", "inner") else "cpu_op")
    add = next(e for e in spans if e["name"] == "aten::add")
    assert add["args"]["Input Dims"] == [[4, 5], [4, 5]]


def test_tensorboard_trace_handler(rng, tmp_path):
    for use_gzip in (False, True):
        handler = gp.tensorboard_trace_handler(str(tmp_path / "log"), "worker0", use_gzip)
        with gp.profile(activities=[gp.ProfilerActivity.CPU], on_trace_ready=handler):
            _program(genesis, *_inputs(genesis, rng), steps=1)
    files = sorted(p.name for p in (tmp_path / "log").iterdir())
    assert len(files) == 2
    assert re.fullmatch(r"worker0\.\d+\.pt\.trace\.json", files[0])
    assert re.fullmatch(r"worker0\.\d+\.pt\.trace\.json\.gz", files[1])
    with gzip.open(tmp_path / "log" / files[1], "rt") as f:
        assert any(e["name"] == "aten::mul" for e in json.load(f)["traceEvents"])


def test_off_costs_nothing(rng):
    raw = dispatch.kernel("add", "cpu")
    assert dispatch._observer is None and recording.current_session() is None
    prof = gp.profile(activities=[gp.ProfilerActivity.CPU])
    prof.start()
    try:
        assert isinstance(dispatch.kernel("add", "cpu"), recording._TimedKernel)
        with pytest.raises(RuntimeError, match="another one is recording"):
            gp.profile(activities=[gp.ProfilerActivity.CPU]).start()
    finally:
        prof.stop()
    assert dispatch.kernel("add", "cpu") is raw and dispatch._observer is None


def test_op_names():
    assert recording.op_name("add") == "aten::add"
    assert recording.op_name("cast") == "aten::_to_copy"
    assert recording.op_name("adam_step") == "genesis::adam_step"


def _fake_op(monkeypatch, kernels):
    """A CPU "op" whose kernel launches the fake CUDA `kernels`, one after the other."""
    def run(x):
        for k in kernels:
            k((4,), 0, 1, 2, 3, 100)
        return x
    monkeypatch.setitem(dispatch._KERNELS, ("fake_op", "cpu"), run)
    return lambda x: dispatch.kernel("fake_op", "cpu")(x)


CUDA_HEADERS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls"]


def test_cuda_time_attributed_to_op(fake, monkeypatch):  # noqa: F811
    add = fake_kernel(monkeypatch, fake, cost_ns=2_000)
    slow = fake_kernel(monkeypatch, fake, name="_slow", cost_ns=7_000, consts=())
    op = _fake_op(monkeypatch, [add, slow])
    activities = [gp.ProfilerActivity.CPU, gp.ProfilerActivity.CUDA]
    with gp.profile(activities=activities) as prof:
        with gp.record_function("outer"):
            op(np.zeros(3))
            op(np.zeros(3))
        add((1,), 0, 1, 2, 3, 5)  # launched outside any op
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::fake_op"].count == 2
    assert avg["aten::fake_op"].cuda_time_total == pytest.approx(18.0)
    assert avg["aten::fake_op"].self_device_time_total == pytest.approx(18.0)
    assert avg["outer"].device_time_total == pytest.approx(18.0)
    assert avg["outer"].self_device_time_total == pytest.approx(0.0)
    kernel = avg["_add_kernel[fp32 BLOCK=1024 aligned w4]"]
    assert (kernel.count, kernel.device_time_total, kernel.cpu_time_total) == (3, 6.0, 0)
    assert kernel.device_type is gp.DeviceType.CUDA
    assert avg["_slow[fp32 aligned w4]"].device_time_total == pytest.approx(14.0)
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert re.split(r"\s{2,}", table.splitlines()[1].strip()) == CUDA_HEADERS
    assert table.splitlines()[3].split()[0] in ("outer", "aten::fake_op")
    assert table.splitlines()[-1] == "Self CUDA time total: 20.000us"


def test_cuda_trace_and_regions(fake, monkeypatch, tmp_path):  # noqa: F811
    add = fake_kernel(monkeypatch, fake, cost_ns=2_000)

    def library_call():
        with profiling.region("cublaslt.matmul", m=4):
            fake.gpu_ns += 5_000

    def wrapped_kernel():
        with profiling.region("softmax+sum"):
            add((4,), 0, 1, 2, 3, 100)

    monkeypatch.setitem(dispatch._KERNELS, ("lib_op", "cpu"), library_call)
    monkeypatch.setitem(dispatch._KERNELS, ("region_op", "cpu"), wrapped_kernel)
    activities = [gp.ProfilerActivity.CPU, gp.ProfilerActivity.CUDA]
    with gp.profile(activities=activities) as prof:
        dispatch.kernel("lib_op", "cpu")()
        dispatch.kernel("region_op", "cpu")()
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::lib_op"].cuda_time_total == pytest.approx(5.0)
    assert avg["aten::region_op"].cuda_time_total == pytest.approx(2.0)  # the region isn't added
    assert "softmax+sum" not in avg and avg["cublaslt.matmul"].count == 1
    trace = json.loads(open(prof.export_chrome_trace(str(tmp_path / "t.json"))).read())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    ops = {e["name"]: e["args"]["External id"] for e in trace["traceEvents"]
           if e.get("cat") == "cpu_op"}
    assert [(k["name"], k["args"]["External id"]) for k in kernels] == [
        ("cublaslt.matmul", ops["aten::lib_op"]),
        ("_add_kernel[fp32 BLOCK=1024 aligned w4]", ops["aten::region_op"])]
    assert kernels[0]["args"]["m"] == 4 and kernels[1]["args"]["grid"] == [4, 1, 1]


def test_cuda_only_activity(fake, monkeypatch):  # noqa: F811
    add = fake_kernel(monkeypatch, fake, cost_ns=3_000)
    op = _fake_op(monkeypatch, [add])
    with gp.profile(activities=[gp.ProfilerActivity.CUDA]) as prof:
        op(np.zeros(2))
    assert [e.name for e in prof.events()] == ["_add_kernel[fp32 BLOCK=1024 aligned w4]"]
    assert prof.events()[0].device_time_total == pytest.approx(3.0)


def test_cuda_ops_on_the_simulated_device():
    run_checks_worker(pathlib.Path(__file__).with_name("profiler_api_worker.py"))


def _legacy_profiled(lib, rng, **kwargs):
    """_program under torch.autograd.profiler's profile (the legacy API)."""
    inputs = _inputs(lib, rng)
    with lib.autograd.profiler.profile(**kwargs) as prof:
        _program(lib, *inputs)
    return prof


def test_autograd_profiler_as_torch(rng):
    """torch.autograd.profiler.profile: the same op counts through function_events and
    key_averages, the same table columns, printing as the table, and nothing before its block
    has run."""
    names = {"aten::add", "aten::mul", "aten::sum", "step_body", "inner"}
    profs = [_legacy_profiled(lib, rng, record_shapes=True) for lib in (genesis, torch)]
    assert [_counts(p, names) for p in profs] == [{name: 3 for name in names}] * 2
    for p in profs:
        assert isinstance(p.function_events, list) and str(p) == p.table()
        assert p.self_cpu_time_total == pytest.approx(p.total_average().self_cpu_time_total)
    headers = [p.key_averages().table().splitlines()[1].split() for p in profs]
    assert headers[0] == headers[1]
    for lib in (genesis, torch):
        unused = lib.autograd.profiler.profile()
        assert str(unused.key_averages()) == "" and unused.table() == ""
        with lib.autograd.profiler.profile(enabled=False) as disabled:
            assert disabled is None


@pytest.mark.parametrize("acc_events", [False, True])
def test_second_cycle_warns_events_cleared_as_torch(rng, monkeypatch, acc_events):
    """A second recording cycle warns (once a process) that the first one's events are gone,
    unless acc_events keeps them."""
    monkeypatch.setattr(tp.profiler, "_WARNINGS_SHOWN", set())
    monkeypatch.setattr(genesis._warnings, "_warned", set())
    messages = []
    for lib in (genesis, torch):
        sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=3)
        inputs = _inputs(lib, rng)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                      schedule=sched, acc_events=acc_events) as prof:
                _program(lib, *inputs, steps=13, prof=prof)
        messages.append([str(w.message) for w in caught if "clears" in str(w.message)])
    assert messages[0] == messages[1]
    assert len(messages[0]) == (0 if acc_events else 1)


@pytest.mark.filterwarnings("ignore:emit_itt:UserWarning")
@pytest.mark.parametrize("name", ["emit_itt", "emit_nvtx"])
def test_annotation_blocks_as_torch(name):
    """Disabled, both blocks run their body; enabled, emit_itt runs it and an instance enters
    once; emit_nvtx needs CUDA, as torch's does (genesis annotates no ranges)."""
    outcomes = []
    for lib in (genesis, torch):
        block = getattr(lib.autograd.profiler, name)
        with block(enabled=False) as entered:
            row = [entered, (lib.ones(2) + 1).tolist()]
        annotator = block(record_shapes=True)
        try:
            with annotator:
                row.append((lib.ones(2) * 3).tolist())
            with annotator:
                pass
        except Exception as e:  # noqa: BLE001  (which kind of error, compared with torch's)
            row.append((isinstance(e, RuntimeError) and "reentrant" in str(e))
                       or not lib.cuda.is_available())
        outcomes.append(row)
    assert outcomes[0] == outcomes[1]


def test_annotation_blocks_say_they_emit_nothing():
    """Genesis annotates no ITT ranges, and says so when a block is entered."""
    with pytest.warns(UserWarning, match="emits no ITT ranges"):
        genesis.set_warn_always(True)
        try:
            with genesis.autograd.profiler.emit_itt():
                pass
        finally:
            genesis.set_warn_always(False)
