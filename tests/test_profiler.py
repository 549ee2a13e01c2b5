"""The profiler without a GPU: a fake event source and fake BoundKernels stand in for the device."""

import io
import json

import numpy as np
import pytest

import genesis
from genesis import dispatch
from genesis.backends.cuda import launch, profiling
from genesis.cuda.profiler import GPUProfiler, enable_profiling


class FakeEvent:
    t = None


class FakeTimer(profiling.CudaTimer):
    """Events stamped with a fake GPU clock; the host clock advances 1 us per reading."""

    def __init__(self):
        super().__init__()
        self.gpu_ns = 5_000
        self.host_ns = 1_000_000
        self.stream_handle = 0

    def device(self):
        return 0

    def stream(self, device):
        return self.stream_handle

    def event(self, device):
        return FakeEvent()

    def release(self, device, event):
        pass

    def record(self, event, stream):
        event.t = self.gpu_ns

    def synchronize(self, event):
        assert event.t is not None, "synchronize on an event never recorded"

    def elapsed_ms(self, start, end):
        return (end.t - start.t) / 1e6

    def clock_ns(self):
        self.host_ns += 1_000
        return self.host_ns


@pytest.fixture
def fake(monkeypatch):
    timer = FakeTimer()
    monkeypatch.setattr(profiling, "timer", timer)
    yield timer
    assert not profiling._recorders, "a test left a recorder attached"
    assert not profiling.is_enabled()


def fake_kernel(monkeypatch, timer, name="_add_kernel", cost_ns=2_000, consts=(("BLOCK", 1024),)):
    """A BoundKernel whose launcher advances the fake GPU clock by `cost_ns`, registered in the
    launch cache under a specialization key so the profiler can label it."""
    bound = object.__new__(launch.BoundKernel)
    for slot in launch.BoundKernel.__slots__:
        setattr(bound, slot, None)
    bound.name = name
    bound._head = ()
    bound._tail = tuple(v for _, v in consts)

    def run(*args):
        timer.gpu_ns += cost_ns

    bound._run = run
    signature = (("x", "*fp32"), ("y", "*fp32"), ("out", "*fp32"), ("n", "i32"))
    signature += tuple((k, "constexpr") for k, _ in consts)
    key = (run, signature, tuple(consts), ("x",), 4, 1, 0)
    monkeypatch.setitem(launch._cache, key, bound)
    return bound


def test_off_costs_nothing(fake):
    original = launch.BoundKernel.__call__
    assert profiling.region("x") is profiling.region("y")
    with profiling.region("x"):
        pass
    assert launch.BoundKernel.__call__ is original


def test_kernel_stats_aggregate(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake, cost_ns=2_000)
    slow = fake_kernel(monkeypatch, fake, name="_slow", cost_ns=7_000, consts=())
    original = launch.BoundKernel.__call__
    with GPUProfiler() as prof:
        assert launch.BoundKernel.__call__ is not original
        for _ in range(3):
            k((4,), 0, 1, 2, 3, 100)
        slow((1, 2), 0, 1, 2, 3, 5)
    assert launch.BoundKernel.__call__ is original
    stats = prof.get_stats()
    assert set(stats) == {"_add_kernel[fp32 BLOCK=1024 aligned w4]", "_slow[fp32 aligned w4]"}
    s = stats["_add_kernel[fp32 BLOCK=1024 aligned w4]"]
    assert (s["calls"], s["count"], s["kind"]) == (3, 3, "kernel")
    assert s["total_us"] == pytest.approx(6.0)
    assert s["mean_us"] == s["min_us"] == s["max_us"] == pytest.approx(2.0)
    assert s["mean"] == pytest.approx(2e-6)
    assert s["host_mean_us"] == pytest.approx(1.0)
    assert prof.get_stats("_slow[fp32 aligned w4]")["total_us"] == pytest.approx(7.0)
    assert prof.get_stats("missing") is None
    text = prof.summary()
    assert text.splitlines()[2].startswith("_slow")  # largest total first
    assert "Calls" in text and "_add_kernel" in text


def test_region_nesting(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake)
    with GPUProfiler() as prof:
        with profiling.region("outer", m=4) as outer:
            fake.gpu_ns += 1_000
            with profiling.region("inner") as inner:
                k((1,), 0, 1, 2, 3, 8)
            fake.gpu_ns += 1_000
        with profiling.region("lib", 0x55, k=3) as lib:
            pass
    assert (lib.stream, lib.args, lib.depth) == (0x55, {"k": 3}, 0)
    recs = {r.name: r for r in prof.records}
    kname = "_add_kernel[fp32 BLOCK=1024 aligned w4]"
    assert (outer.depth, inner.depth, recs[kname].depth) == (0, 1, 2)
    assert (outer.parent, inner.parent, recs[kname].parent) == (None, "outer", "inner")
    assert outer.device_us == pytest.approx(4.0)
    assert inner.device_us == pytest.approx(2.0)
    assert outer.start_us <= inner.start_us <= recs[kname].start_us
    assert inner.start_us + inner.device_us <= outer.start_us + outer.device_us
    assert outer.args == {"m": 4}
    assert [r.name for r in prof.records] == [kname, "inner", "outer", "lib"]


def test_chrome_trace_schema(fake, monkeypatch, tmp_path):
    k = fake_kernel(monkeypatch, fake)
    step_args = {"dtype": np.dtype("f2"), "alpha": np.float32(2)}
    with GPUProfiler() as prof, profiling.region("step", **step_args):
        k((3, 2), 0, 1, 2, 3, 77)
        fake.stream_handle = 0x7F00
        k((1,), 0x7F00, 1, 2, 3, 5)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == 6  # 3 records, each on its device track and on the host track
    for e in complete:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    kernels = [e for e in complete if e["cat"] == "kernel"]
    assert kernels[0]["args"] == {"n": 77, "grid": [3, 2, 1]}
    assert kernels[0]["pid"] == 1 and kernels[0]["tid"] != kernels[1]["tid"]
    step = next(e for e in complete if e["name"] == "step")
    assert step["args"] == {"dtype": "float16", "alpha": 2.0}
    meta = [e for e in events if e["ph"] == "M"]
    names = {e["args"]["name"] for e in meta}
    assert {"cuda:0", "default stream", "stream 0x7f00"} <= names


def test_enable_profiling_prints_each_record(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake, cost_ns=150_000)
    out = io.StringIO()
    original = launch.BoundKernel.__call__
    enable_profiling(True, file=out)
    try:
        assert genesis.cuda.is_profiling_enabled()
        k((2,), 0, 1, 2, 3, 9)
        first = out.getvalue()
        with profiling.region("block"):
            k((2,), 0, 1, 2, 3, 9)
    finally:
        enable_profiling(False)
    assert launch.BoundKernel.__call__ is original
    assert first == "_add_kernel[fp32 BLOCK=1024 aligned w4]: 0.1500 ms (host 1.0 us grid=2x1x1)\n"
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("  _add_kernel") and lines[2].startswith("block: 0.1500 ms")
    k((2,), 0, 1, 2, 3, 9)
    assert len(out.getvalue().splitlines()) == 3


def test_recorders_stack(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake)
    out = io.StringIO()
    prof = GPUProfiler().start()
    enable_profiling(True, file=out)
    prof.stop()
    assert profiling.is_enabled()
    k((1,), 0, 1, 2, 3, 1)
    enable_profiling(False)
    assert prof.records == [] and out.getvalue().count("\n") == 1


def test_profile_operation(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake, cost_ns=3_000)
    calls = []

    def op(n):
        calls.append(n)
        k((1,), 0, 1, 2, 3, n)

    prof = GPUProfiler()
    stats = prof.profile_operation("my_op", op, 16, warmup=2, iters=5)
    assert len(calls) == 7
    assert stats["calls"] == 5 and stats["kind"] == "region"
    assert stats["mean_us"] == pytest.approx(3.0)
    assert prof.get_stats("_add_kernel[fp32 BLOCK=1024 aligned w4]")["calls"] == 5
    assert not prof.active
    with prof.profile_operation("seed_form"):
        op(3)
    assert prof.get_stats("seed_form")["calls"] == 1
    prof.clear()
    assert prof.get_stats() == {}


def test_profile_operation_keeps_active_state(fake, monkeypatch):
    k = fake_kernel(monkeypatch, fake)
    with GPUProfiler() as prof:
        prof.profile_operation("op", k, (1,), 0, 1, 2, 3, 4, warmup=1, iters=2)
        assert prof.active
        k((1,), 0, 1, 2, 3, 4)
    assert prof.get_stats("_add_kernel[fp32 BLOCK=1024 aligned w4]")["calls"] == 3


def test_missing_kernel_message_from_dispatch():
    fn = dispatch.kernel("no_such_op", "cpu")
    assert not dispatch.has_kernel("no_such_op", "cpu")
    with pytest.raises(NotImplementedError) as e:
        fn(np.zeros(3, np.float16), [np.zeros(2, np.int64), np.zeros(1, np.float16)], 1)
    assert str(e.value) == \
        "genesis: 'no_such_op' is not implemented for device 'cpu' (dtypes float16, int64)"
    with pytest.raises(NotImplementedError, match=r"^genesis: 'x' is not implemented for "
                                                  r"device 'cpu'$"):
        dispatch.kernel("x", "cpu")()


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.int32])
def test_missing_kernel_message_from_public_op(monkeypatch, dtype):
    monkeypatch.delitem(dispatch._KERNELS, ("sort", "cpu"))
    t = genesis.ones(5, dtype=dtype)
    with pytest.raises(NotImplementedError, match=rf"^genesis: 'sort' is not implemented for "
                                                  rf"device 'cpu' \(dtype {dtype.name}\)$"):
        genesis.sort(t)


def test_gpu_registry_view():
    ops = genesis.cuda.list_gpu_ops()
    assert "add" in ops and ops == sorted(ops)
    assert set(dispatch.GPU_OPS_REGISTRY) == set(ops)
    assert len(dispatch.GPU_OPS_REGISTRY) == len(ops)
    assert dispatch.GPU_OPS_REGISTRY["add"] is dispatch.kernel("add", "cuda")
    with pytest.raises(KeyError):
        dispatch.GPU_OPS_REGISTRY["no_such_op"]
    with pytest.raises(NotImplementedError, match="'no_such_op' is not implemented for device "
                                                  "'cuda'"):
        genesis.cuda.dispatch_gpu_op("no_such_op", np.zeros(2, np.float32))


def test_bandwidth_accounting(monkeypatch):
    from genesis.utils.benchmark import bandwidth as tools
    monkeypatch.setattr(tools, "measured_peak_bandwidth", lambda device=None: 2e12)
    monkeypatch.setattr(tools, "time_device_us", lambda fn, warmup, reps: (fn(), 100.0)[1])
    monkeypatch.setattr(tools, "_inputs", lambda size, dtype, count: [
        genesis.ones(size, dtype=dtype) for _ in range(count)])
    out = io.StringIO()
    results = genesis.cuda.analyze_memory_bandwidth(genesis.add, [1000, (50, 40)],
                                                    dtype=genesis.float16, file=out)
    assert [r["bytes"] for r in results] == [6000, 12000]
    assert [r["elements"] for r in results] == [1000, 2000]
    r = results[1]
    assert r["elapsed_ms"] == pytest.approx(0.1)
    assert r["bandwidth_gb_s"] == pytest.approx(0.12)
    assert r["fraction"] == pytest.approx(6e-5) and r["peak_gb_s"] == pytest.approx(2000)
    assert r["efficiency_percent"] == pytest.approx(6e-3)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("add: bandwidth") and len(lines) == 5
    maxes = genesis.cuda.analyze_memory_bandwidth(lambda x: x.max(-1), [(10, 8)], num_inputs=1,
                                                  verbose=False)
    assert maxes[0]["bytes"] == 320 + 40 + 80  # input, values, int64 indices
