"""genesis.profiler on a real GPU: each op's CUDA time is the device time of the kernels it
launched, kernels are rows of their own, and the trace ties each kernel to its op."""

import json

import numpy as np
import pytest

import genesis
import genesis.profiler as gp
from helpers import assert_close, skip_no_cuda

pytestmark = skip_no_cuda

ACTIVITIES = [gp.ProfilerActivity.CPU, gp.ProfilerActivity.CUDA]


@pytest.fixture
def inputs(rng):
    def make(*shape):
        return genesis.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda")
    return make(300, 1000), make(300, 1000), make(1000, 256)


def _run(x, y, w):
    with gp.record_function("model_inference"):
        s = genesis.softmax(x + y, -1)
        return s @ w


def test_ops_carry_their_kernels_device_time(inputs):
    x, y, w = inputs
    _run(x, y, w)  # compile and tune outside the profile
    with gp.profile(activities=ACTIVITIES, record_shapes=True) as prof:
        out = _run(x, y, w)
    genesis.cuda.synchronize()
    avg = {e.key: e for e in prof.key_averages()}
    for name in ("aten::add", "aten::softmax", "aten::matmul"):
        assert avg[name].count == 1 and avg[name].cuda_time_total > 0, name
    kernels = [e for e in prof.events() if e.device_type is gp.DeviceType.CUDA]
    assert kernels and all(k.device_time_total > 0 and k.cpu_time_total == 0 for k in kernels)
    total = sum(k.device_time_total for k in kernels)
    assert avg["model_inference"].cuda_time_total == pytest.approx(total)
    host = [e for e in prof.events() if e.device_type is gp.DeviceType.CPU]
    assert sum(e.self_device_time_total for e in host) == pytest.approx(total)
    assert all(k.args.get("External id") for k in kernels)  # each launched under an op
    expected = np.exp((x + y).cpu().numpy())
    expected /= expected.sum(-1, keepdims=True)
    assert_close(out, expected @ w.cpu().numpy(), rtol=2e-3, atol=2e-3)


def test_table_and_trace(inputs, tmp_path):
    x, y, w = inputs
    _run(x, y, w)
    sched = gp.schedule(wait=1, warmup=1, active=2, repeat=1)
    handler = gp.tensorboard_trace_handler(str(tmp_path), "gpu")
    with gp.profile(activities=ACTIVITIES, schedule=sched, on_trace_ready=handler) as prof:
        for _ in range(5):
            _run(x, y, w)
            prof.step()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    print(table)
    lines = table.splitlines()
    assert "Self CUDA" in lines[1] and "CUDA total" in lines[1]
    assert lines[-1].startswith("Self CUDA time total: ")
    assert lines[3].split()[0] in ("ProfilerStep*", "model_inference")
    (path,) = tmp_path.iterdir()
    events = json.loads(path.read_text())["traceEvents"]
    op_ids = {e["args"]["External id"] for e in events if e.get("cat") == "cpu_op"}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all(k["args"]["External id"] in op_ids for k in kernels)
    assert sum(e["name"] == "aten::add" for e in events if e.get("cat") == "cpu_op") == 2
