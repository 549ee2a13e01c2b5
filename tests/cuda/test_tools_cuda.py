"""The profiler, bandwidth analysis, kernel warm-up and GPU op dispatch on a real GPU."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import genesis
from genesis.backends.cuda import launch, profiling
from helpers import assert_close, skip_no_cuda

pytestmark = skip_no_cuda


@pytest.fixture
def pair(rng):
    x = genesis.tensor(rng.standard_normal((300, 1000)).astype(np.float32), device="cuda")
    y = genesis.tensor(rng.standard_normal((300, 1000)).astype(np.float32), device="cuda")
    return x, y


def test_profiler_records_real_kernels(pair):
    x, y = pair
    original = launch.BoundKernel.__call__
    with genesis.cuda.GPUProfiler() as prof:
        z = x + y
        with profiling.region("softmax+sum", rows=300):
            s = genesis.softmax(z, -1).sum(-1)
    assert launch.BoundKernel.__call__ is original and not profiling.is_enabled()
    assert_close(s, np.ones(300, np.float32))
    assert_close(z, x.cpu().numpy() + y.cpu().numpy())
    stats = prof.get_stats()
    kernels = {n: s for n, s in stats.items() if s["kind"] == "kernel"}
    assert len(kernels) >= 3  # add, softmax, sum
    assert all("[" in n and "fp32" in n for n in kernels)
    for s in stats.values():
        assert s["calls"] >= 1 and 0 < s["min_us"] <= s["mean_us"] <= s["max_us"]
        assert s["host_mean_us"] > 0
    region = stats["softmax+sum"]
    inner = [r for r in prof.records if r.parent == "softmax+sum"]
    assert len(inner) >= 2
    assert region["total_us"] >= sum(r.device_us for r in inner) * 0.99
    assert "softmax+sum" in prof.summary()


def test_chrome_trace_file(pair, tmp_path):
    x, y = pair
    side = genesis.cuda.Stream()
    with genesis.cuda.GPUProfiler() as prof:
        a = x * y
        with genesis.cuda.stream(side):
            side.wait_stream(genesis.cuda.default_stream())
            b = x - y
    genesis.cuda.synchronize()
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with open(path) as f:
        trace = json.load(f)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == 2 * len(prof.records) >= 4
    for e in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["ts"] >= 0 and e["dur"] >= 0
    device = [e for e in complete if e["cat"] == "kernel"]
    assert all(e["pid"] == genesis.cuda.current_device() + 1 and "grid" in e["args"]
               for e in device)
    assert len({e["tid"] for e in device}) == 2  # default stream and the side stream
    assert_close(a, x.cpu().numpy() * y.cpu().numpy())
    assert_close(b, x.cpu().numpy() - y.cpu().numpy())


def test_profile_operation_and_printing(pair):
    x, y = pair
    prof = genesis.cuda.GPUProfiler()
    stats = prof.profile_operation("add", genesis.add, x, y, warmup=2, iters=7)
    assert stats["calls"] == 7 and stats["mean_us"] > 0
    add_kernels = [s for s in prof.get_stats().values() if s["kind"] == "kernel"]
    assert [s["calls"] for s in add_kernels] == [7]
    out = io.StringIO()
    genesis.cuda.enable_profiling(True, file=out)
    try:
        genesis.mul(x, y)
        assert out.getvalue().count("\n") == 1 and " ms (host " in out.getvalue()
    finally:
        genesis.cuda.enable_profiling(False)
    genesis.mul(x, y)
    assert out.getvalue().count("\n") == 1


def test_measured_peak_is_cached_and_plausible():
    peak = genesis.cuda.measured_peak_bandwidth()
    assert 100e9 < peak < 20e12
    assert genesis.cuda.measured_peak_bandwidth() == peak


@pytest.mark.parametrize("op,inputs", [(genesis.add, 2), (genesis.neg, 1)])
def test_analyze_memory_bandwidth(op, inputs):
    out = io.StringIO()
    results = genesis.cuda.analyze_memory_bandwidth(op, [1 << 24, (2048, 4096)],
                                                    num_inputs=inputs, file=out)
    assert len(results) == 2
    for r in results:
        assert r["bytes"] == (inputs + 1) * r["elements"] * 4
        assert r["bandwidth_gb_s"] > 0 and 0 < r["fraction"] < 1.2
        assert r["efficiency_percent"] == pytest.approx(100 * r["fraction"])
    assert results[1]["elements"] == 2048 * 4096
    assert "GB/s" in out.getvalue() and len(out.getvalue().splitlines()) == 5


def test_warm_up_kernels_compiles_once():
    """In a fresh process (this one has compiled kernels already): the first call compiles some
    specializations, a second call none."""
    code = ("import json, genesis\n"
            "a = genesis.cuda.warm_up_kernels(dtypes=(genesis.float32,))\n"
            "b = genesis.cuda.warm_up_kernels(dtypes=(genesis.float32,))\n"
            "print(json.dumps([a, b]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=500, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    first, second = json.loads(proc.stdout.strip().splitlines()[-1])
    assert first["compiled"] > 0 and first["seconds"] > 0
    assert second["compiled"] == 0 and second["total"] == first["total"]


def test_dispatch_gpu_op(pair):
    x, y = pair
    out = genesis.cuda.dispatch_gpu_op("mul", x, y)
    assert isinstance(out, genesis.Tensor) and out.device.type == "cuda"
    assert_close(out, x.cpu().numpy() * y.cpu().numpy())
    raw = genesis.cuda.dispatch_gpu_op("mul", x._data, y._data)
    assert not isinstance(raw, genesis.Tensor) and raw.shape == (300, 1000)
    assert "mul" in genesis.cuda.list_gpu_ops()


def test_missing_cuda_kernel_names_op_device_dtype(monkeypatch):
    from genesis import dispatch
    monkeypatch.delitem(dispatch._KERNELS, ("unique", "cuda"), raising=False)
    t = genesis.ones(4, dtype=genesis.float16, device="cuda")
    with pytest.raises(NotImplementedError, match=r"^genesis: 'unique' is not implemented for "
                                                  r"device 'cuda' \(dtype float16\)$"):
        genesis.unique(t)
