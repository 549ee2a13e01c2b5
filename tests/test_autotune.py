"""The autotuner's logic without a GPU: a fake timer and launcher stand in for CUDA events and
kernels. Winners by key, the JSON cache on disk (shared with a second tuner, as a second process
would), configs that fail being skipped with a warning, and corrupt caches being ignored."""

import json
import warnings

import pytest

from genesis.backends.cuda import autotune, timing
from genesis.backends.cuda.autotune import AutoTuner

SPACE = [{"BM": 64, "num_warps": 4}, {"BM": 128, "num_warps": 8}, {"BM": 256, "num_warps": 8}]


class FakeKernel:
    """Records its launches; a config's 'time' is given by `costs`, BM in `broken` raises."""

    def __init__(self, costs, broken=()):
        self.costs, self.broken, self.calls = costs, set(broken), []

    def __call__(self, x, y, **config):
        if config["BM"] in self.broken:
            raise RuntimeError("out of resources: shared memory")
        self.calls.append((x, y, config["BM"]))
        self.last = config["BM"]


def fake_timer(kernel):
    def timer(run):
        run()
        return kernel.costs[kernel.last]
    return timer


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    return tmp_path / "autotune" / "mm.json"


def test_picks_fastest_and_runs_fn_with_inputs(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    best = tuner.tune_kernel(kernel, ("x", "y"), SPACE)
    assert best == SPACE[1]
    assert [c[:2] for c in kernel.calls] == [("x", "y")] * 3
    assert not cache.exists()  # no key: nothing stored


def test_ties_keep_the_first_config(cache):
    kernel = FakeKernel({64: 1.0, 128: 1.0, 256: 1.0})
    assert AutoTuner("mm", timer=fake_timer(kernel)).tune_kernel(kernel, (1, 2), SPACE) == SPACE[0]


def test_winner_stored_on_disk_and_reused_by_a_second_tuner(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    key = ("H200", "bfloat16", "rr", 4096, 4096, 4096)
    AutoTuner("mm", timer=fake_timer(kernel)).tune_kernel(kernel, (1, 2), SPACE, key)
    data = json.loads(cache.read_text())
    assert data["version"] == autotune.FORMAT_VERSION
    assert data["entries"] == {autotune.key_string(key): {"config": SPACE[1], "ms": 1.0}}
    other = FakeKernel({64: 0.1, 128: 9.0, 256: 9.0})
    second = AutoTuner("mm", timer=fake_timer(other))  # a second process: reads the file
    assert second.tune_kernel(other, (1, 2), SPACE, key) == SPACE[1]
    assert other.calls == []  # not re-tuned


def test_keys_are_distinct(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    tuner.tune_kernel(kernel, (1, 2), SPACE, ("a", 1))
    kernel.costs = {64: 0.5, 128: 1.0, 256: 2.0}
    assert tuner.tune_kernel(kernel, (1, 2), SPACE, ("a", 2)) == SPACE[0]
    assert tuner.lookup(("a", 1)) == SPACE[1]
    assert tuner.lookup(("a", 2)) == SPACE[0]
    assert tuner.lookup(("a", 3)) is None


def test_stored_config_outside_the_space_is_retuned(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    tuner.store(("k",), {"BM": 32, "num_warps": 2}, 0.1)
    assert tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",)) == SPACE[1]
    assert len(kernel.calls) == 3


def test_concurrent_writers_merge(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    first = AutoTuner("mm", timer=fake_timer(kernel))
    second = AutoTuner("mm", timer=fake_timer(kernel))
    first.entries(), second.entries()  # both loaded the (empty) file before either wrote
    first.tune_kernel(kernel, (1, 2), SPACE, ("one",))
    second.tune_kernel(kernel, (1, 2), SPACE, ("two",))
    stored = json.loads(cache.read_text())["entries"]
    assert set(stored) == {autotune.key_string(("one",)), autotune.key_string(("two",))}
    assert not list(cache.parent.glob(".tmp-*"))  # the temporary file was renamed away


def test_failing_config_is_skipped_with_a_warning(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0}, broken={128})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    with pytest.warns(RuntimeWarning, match="skipping config .*'BM': 128.*shared memory"):
        best = tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",))
    assert best == SPACE[2]
    assert tuner.lookup(("k",)) == SPACE[2]


def test_every_config_failing_raises(cache):
    kernel = FakeKernel({}, broken={64, 128, 256})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    with pytest.warns(RuntimeWarning), pytest.raises(RuntimeError, match="every configuration"):
        tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",))
    assert tuner.lookup(("k",)) is None
    assert not cache.exists()


@pytest.mark.parametrize("content", ["{not json", '{"version": 1, "entries": {"k": 3}}',
                                     '{"version": 999, "entries": {}}', "[1, 2]"])
def test_corrupt_cache_is_ignored_with_a_warning_and_replaced(cache, content):
    cache.parent.mkdir(parents=True)
    cache.write_text(content)
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    with pytest.warns(RuntimeWarning, match="autotune: ignoring"):
        assert tuner.lookup(("k",)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",)) == SPACE[1]
    assert json.loads(cache.read_text())["entries"][autotune.key_string(("k",))]["ms"] == 1.0


def test_forget_drops_the_entry_in_memory(cache):
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",))
    tuner.forget(("k",))
    assert tuner.lookup(("k",)) is None


@pytest.mark.filterwarnings("ignore:autotune. ignoring unreadable cache")
def test_unwritable_cache_dir_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(blocker))
    kernel = FakeKernel({64: 3.0, 128: 1.0, 256: 2.0})
    tuner = AutoTuner("mm", timer=fake_timer(kernel))
    with pytest.warns(RuntimeWarning, match="could not write"):
        assert tuner.tune_kernel(kernel, (1, 2), SPACE, ("k",)) == SPACE[1]
    assert tuner.lookup(("k",)) == SPACE[1]


def test_cache_dir_defaults_under_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("GENESIS_KERNEL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert autotune.cache_dir() == str(tmp_path / "genesis" / "autotune")


@pytest.mark.parametrize("queue_us, flush_us, passes", [(45, 20, 5), (1, 20, 1), (35, 20, 4),
                                                        (1e6, 20, 16), (45, 0, 16)])
def test_flush_passes_cover_twice_the_hosts_queueing(queue_us, flush_us, passes):
    """Enough zeroings to keep the GPU busy for twice the host's time to queue a call (at
    least one, at most MAX_FLUSH_PASSES; a device whose events read 0 gets the most)."""
    assert timing.flush_passes(queue_us * 1e-6, flush_us * 1e-6) == passes


def test_time_calls_queues_its_flush_passes_before_each_call(monkeypatch):
    """One zeroing timed against one call's queueing (45 us against 20: five passes), then
    five zeroings before each of the timed calls, each between its pair of events."""
    queue = []

    class FakeEvent:
        def __init__(self, enable_timing):
            pass

        def record(self):
            queue.append("event")

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return 0.02

    clock = iter([0.0, 45e-6])
    storage = type("Storage", (), {"nbytes": timing.L2_FLUSH_BYTES, "ptr": 0})()
    monkeypatch.setattr(timing, "Event", FakeEvent)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(timing, "current_device", lambda: 0)
    monkeypatch.setattr(timing, "current_stream_handle", lambda device: 0)
    monkeypatch.setattr(timing.CUDAArray, "empty", lambda *args: type(
        "Array", (), {"storage": storage})())
    monkeypatch.setattr(timing.driver, "memset_d8", lambda *args: queue.append("flush"))
    times = timing.time_calls(lambda: queue.append("call"), 2)
    assert times == [0.02, 0.02]
    probe = ["event", "flush", "event", "call"]
    timed = ["flush"] * 5 + ["event", "call", "event"]
    assert queue == probe + timed + timed
