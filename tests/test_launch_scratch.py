"""launch.bind for kernels that need Triton's global scratch (device-side TMA descriptors: the
Hopper matmul's): they get the direct C launcher with a piece of the stream's workspace, sized by
the grid and aligned as the kernel asks, and the profiler records them as any other; kernels
without scratch pass none. Checked with a stand-in for Triton's compiled kernel (no GPU)."""

from types import SimpleNamespace

import pytest

pytest.importorskip("triton")

from genesis.backends.cuda import launch  # noqa: E402


def compiled(scratch, align=128, calls=None):
    """A compiled kernel as triton 3.6 makes it: its launcher records each direct launch."""
    run = SimpleNamespace(launch=lambda *args: calls.append(args), global_scratch_size=scratch,
                          global_scratch_align=align, num_ctas=1, profile_scratch_size=0,
                          launch_cooperative_grid=False, launch_pdl=False)
    return SimpleNamespace(_init_handles=lambda: None, name="k", run=run, function="fn",
                           packed_metadata="meta")


SIGNATURE = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def test_kernels_with_scratch_get_the_stream_workspace(monkeypatch):
    calls, asked = [], []

    def workspace(device, stream, nbytes):
        asked.append((device, stream, nbytes))
        return SimpleNamespace(ptr=1000)

    monkeypatch.setattr(launch, "stream_workspace", workspace)
    bound = launch.bind(compiled(384, 128, calls), SIGNATURE, {"BLOCK": 64}, device=1)
    assert isinstance(bound, launch.ScratchKernel)
    assert type(bound).__call__ is launch.BoundKernel.__call__  # what profiling swaps
    bound((132,), 7, 0xA0, 10)
    assert asked == [(1, 7, 132 * 384 + 128)]
    assert calls == [(132, 1, 1, 7, "fn", False, False, 1024, None, "meta", None, None, None,
                      0xA0, 10, 64)]


def test_kernels_without_scratch_pass_none(monkeypatch):
    calls = []
    monkeypatch.setattr(launch, "stream_workspace", lambda *a: pytest.fail("no scratch needed"))
    bound = launch.bind(compiled(0, 1, calls), SIGNATURE, {"BLOCK": 64}, device=0)
    assert type(bound) is launch.BoundKernel
    bound((4, 2), 7, 0xA0, 10)
    assert calls == [(4, 2, 1, 7, "fn", False, False, None, None, "meta", None, None, None,
                      0xA0, 10, 64)]


def test_profiling_sees_kernels_with_scratch(monkeypatch):
    from test_profiler import FakeTimer

    from genesis.backends.cuda import profiling
    from genesis.cuda.profiler import GPUProfiler
    monkeypatch.setattr(profiling, "timer", FakeTimer())
    monkeypatch.setattr(launch, "stream_workspace", lambda *args: SimpleNamespace(ptr=1024))
    calls = []
    bound = launch.bind(compiled(384, 128, calls), SIGNATURE, {"BLOCK": 64}, device=0)
    with GPUProfiler() as prof:
        bound((2,), 0, 0xA0, 10)
    assert [call[7] for call in calls] == [1024]
    assert prof.get_stats("k")["calls"] == 1
