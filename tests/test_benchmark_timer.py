"""genesis.utils.benchmark.Timer against torch.utils.benchmark.Timer: with the same clock, the
same block sizes, measurements and printing; and real timings of a genesis statement."""

import itertools

import pytest
import torch.utils.benchmark as torch_benchmark

import genesis
from genesis.utils import benchmark


def _clock(step):
    """A clock advancing `step` seconds per read: every timed block then takes `step`."""
    ticks = itertools.count()
    return lambda: next(ticks) * step


def _both(method, step, **labels):
    reprs = []
    for module in (benchmark, torch_benchmark):
        t = module.Timer("x = 1", timer=_clock(step), **labels)
        reprs.append(repr(method(t)).split("\n", 1)[1])  # past the object's address line
    return reprs


@pytest.mark.parametrize("labels", [{}, {"label": "assign", "sub_label": "int",
                                         "description": "n=1"}, {"num_threads": 2}])
@pytest.mark.parametrize("method", [lambda t: t.timeit(100),
                                    lambda t: t.blocked_autorange(min_run_time=0.0005),
                                    lambda t: t.adaptive_autorange(min_run_time=0.0005)],
                         ids=["timeit", "blocked", "adaptive"])
def test_measurements_print_as_torch(method, labels):
    """Each block takes 0.1 s of the fake clock: more than the block-size search's target, so
    blocks are of one run and the search runs nothing for real."""
    ours, theirs = _both(method, step=0.1, **labels)
    assert ours == theirs


def test_statistics_and_errors_as_torch():
    times = [1.0, 2.0, 3.0, 4.0, 10.0]
    measured = [module.Measurement(2, times, module.Timer("pass")._task_spec)
                for module in (benchmark, torch_benchmark)]
    for name in ("median", "mean", "iqr", "times", "number_per_run"):
        assert getattr(measured[0], name) == pytest.approx(getattr(measured[1], name))
    assert measured[0].meets_confidence() == measured[1].meets_confidence()
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        benchmark.Timer().repeat()
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        benchmark.Timer(lambda: None)


def test_times_a_genesis_statement():
    t = benchmark.Timer("torch.add(x, y)", globals={"x": genesis.ones(8), "y": genesis.ones(8)})
    m = t.blocked_autorange(min_run_time=0.02)
    assert m.median > 0 and m.number_per_run >= 1 and "torch.add(x, y)" in repr(m)


def test_language_as_torch():
    """Language.PYTHON (or its names) times Python; an unknown language fails as torch's;
    C++ statements, which torch compiles, are refused."""
    plain = _both(lambda t: t.timeit(10), step=0.1)[0]
    for language in (benchmark.Language.PYTHON, "py", "python"):
        timer = benchmark.Timer("x = 1", timer=_clock(0.1), language=language)
        assert repr(timer.timeit(10)).split("\n", 1)[1] == plain
    assert [m.name for m in benchmark.Language] == [m.name for m in torch_benchmark.Language]
    for module in (benchmark, torch_benchmark):
        with pytest.raises(ValueError, match=r"^Invalid language `java`\.$"):
            module.Timer("pass", language="java")
    with pytest.raises(ValueError, match="Language.CPP is not supported"):
        benchmark.Timer("x * y;", language=benchmark.Language.CPP)
