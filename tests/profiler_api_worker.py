"""genesis.profiler over Genesis's real CUDA op path on the simulated device
(benchmarks/simulated_cuda.py), run by test_profiler_api.py in a process of its own (the
simulation replaces the driver layer).

Each kernel launch advances a fake GPU clock by 1 us (the fake event source of test_profiler.py),
so every op's CUDA time must be 1 us per kernel it launched, every kernel must belong to an op,
and a genesis.cuda.GPUProfiler recording at the same time must see the same launches. Prints the
table, then "all checks passed".
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

import simulated_cuda  # noqa: E402

simulated_cuda.install()

import genesis  # noqa: E402
import genesis.profiler as gp  # noqa: E402
from genesis.backends.cuda import profiling  # noqa: E402
from test_profiler import FakeTimer  # noqa: E402

KERNEL_NS = 1_000
timer = FakeTimer()


def _launch(*args):
    timer.gpu_ns += KERNEL_NS


def _step(x, y, w):
    with gp.record_function("model_inference"):
        h = genesis.softmax(x + y, -1) @ w
        loss = (h * h).sum()
    loss.backward()


def main():
    simulated_cuda._launcher = _launch
    profiling.timer = timer
    x, y = (genesis.randn(64, 128, device="cuda") for _ in range(2))
    w = genesis.randn(128, 32, device="cuda", requires_grad=True)
    _step(x, y, w)  # compile outside the profile
    activities = [gp.ProfilerActivity.CPU, gp.ProfilerActivity.CUDA]
    with gp.profile(activities=activities) as prof, genesis.cuda.GPUProfiler() as kernels_only:
        _step(x, y, w)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))

    events = prof.events()
    kernels = [e for e in events if e.device_type is gp.DeviceType.CUDA]
    ops = [e for e in events if e.device_type is gp.DeviceType.CPU]
    assert len(kernels) == len(kernels_only.records) >= 5, (len(kernels), kernels_only.records)
    assert all(k.device_time_total == KERNEL_NS / 1e3 for k in kernels)
    attributed = sum(len(e.kernels) for e in ops)
    assert attributed == len(kernels), "a kernel was launched outside every op"
    for e in ops:
        own = len(e.kernels) * KERNEL_NS / 1e3
        assert abs(e.self_device_time_total - own) < 1e-9, e
        assert e.device_time_total >= e.self_device_time_total
    (inference,) = [e for e in ops if e.name == "model_inference"]
    names = {e.name for e in ops}
    assert {"aten::add", "aten::softmax", "aten::matmul", "aten::sum"} <= names, names
    assert inference.device_time_total < sum(k.device_time_total for k in kernels)  # backward
    table = prof.key_averages().table()
    assert "Self CUDA %" in table.splitlines()[1]
    assert table.splitlines()[-1] == f"Self CUDA time total: {len(kernels):.3f}us"
    assert not profiling.is_enabled()
    print("all checks passed")


if __name__ == "__main__":
    main()
