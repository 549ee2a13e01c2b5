"""genesis.utils.benchmark.Compare against torch.utils.benchmark.Compare: the same
Measurements (built from fixed block times) print the same tables, character for character,
with and without trimming, coloring and warning highlights; and a real Timer's measurements
print."""

import pytest
import torch.utils.benchmark as torch_benchmark

from genesis.utils import benchmark

# (label, sub_label, description, num_threads, number_per_run, raw_times)
MATMUL = [
    ("matmul", "64x64", "genesis", 1, 100, [1.21e-3, 1.25e-3, 1.22e-3, 1.3e-3, 1.24e-3]),
    ("matmul", "64x64", "numpy", 1, 100, [0.98e-3, 1.01e-3, 0.99e-3, 1.0e-3]),
    ("matmul", "256x256", "genesis", 1, 10, [4.1e-3, 4.3e-3, 4.2e-3, 4.25e-3]),
    ("matmul", "256x256", "numpy", 1, 10, [2.05e-3, 2.1e-3, 2.07e-3, 2.2e-3]),
    ("matmul", "1024x1024", "genesis", 1, 1, [0.031, 0.0305, 0.0312, 0.0309]),
]
ADD = [
    ("add", "small", "genesis", 1, 1000, [5.2e-3, 5.3e-3, 5.25e-3, 5.21e-3]),
    ("add", "large", "genesis", 1, 10, [0.11, 0.112, 0.115, 0.111]),
    ("add", "large", "numpy", 1, 10, [0.052, 0.051, 0.0505, 0.053]),
]
THREADS = [
    ("conv", "3x3", "genesis", 1, 10, [8.1e-2, 8.2e-2, 8.15e-2, 8.3e-2]),
    ("conv", "3x3", "genesis", 4, 10, [2.4e-2, 2.5e-2, 2.45e-2, 2.41e-2]),
    ("conv", "1x1", "genesis", 4, 10, [0.6e-2, 0.61e-2, 0.62e-2, 0.605e-2]),
    ("conv", "1x1", "numpy", 4, 10, [0.9e-2, 0.95e-2, 0.91e-2, 0.93e-2]),
    ("conv", "1x1", "numpy", 1, 10, [2.9e-2, 2.95e-2, 2.91e-2, 2.93e-2]),
]
NOISY = [  # IQRs of 10% to 25% of the median and above
    ("noisy", "mild", "genesis", 1, 10, [1.0e-4, 1.1e-4, 1.2e-4, 1.3e-4, 1.05e-4, 1.15e-4]),
    ("noisy", "gross", "genesis", 1, 10, [1.0e-4, 2.0e-4, 3.0e-4, 4.0e-4, 1.5e-4]),
    ("noisy", "gross", "numpy", 1, 10, [3.0e-5, 3.01e-5, 3.02e-5, 3.0e-5]),
    ("noisy", "steady", "numpy", 1, 10, [5.0e-5, 5.01e-5, 5.02e-5, 5.0e-5]),
]


def _measurements(module, rows, env=None):
    """Each row as a Measurement of `module`; `env` names an env per sub_label."""
    return [module.Measurement(number, list(times), module.TaskSpec(
        "y = x @ x", "pass", label=label, sub_label=sub_label, description=description,
        env=env and env[sub_label], num_threads=threads))
        for label, sub_label, description, threads, number, times in rows]


def _tables(rows, env=None, trim=False, colorize=None, highlight=False):
    """str(Compare) of genesis and of torch over the same rows and settings."""
    tables = []
    for module in (benchmark, torch_benchmark):
        compare = module.Compare(_measurements(module, rows, env))
        if trim:
            compare.trim_significant_figures()
        if colorize is not None:
            compare.colorize(rowwise=colorize == "rowwise")
        if highlight:
            compare.highlight_warnings()
        tables.append(str(compare))
    return tables


SETTINGS = [{}, {"trim": True}, {"colorize": "columnwise"}, {"colorize": "rowwise"},
            {"highlight": True},
            {"trim": True, "colorize": "columnwise", "highlight": True},
            {"trim": True, "colorize": "rowwise", "highlight": True}]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s.values())))
@pytest.mark.parametrize("rows", [MATMUL, MATMUL + ADD, THREADS, NOISY, ADD + THREADS + NOISY],
                         ids=["one-label", "two-labels", "threads", "warnings", "three-labels"])
def test_tables_print_as_torch(rows, settings):
    """Labels, sub_labels and descriptions with cells missing, thread-count groups and
    high-variance measurements."""
    ours, theirs = _tables(rows, **settings)
    assert ours == theirs


@pytest.mark.parametrize("settings", SETTINGS[:2] + SETTINGS[-1:])
@pytest.mark.parametrize("rows, env", [
    (THREADS, {"3x3": "py3.11", "1x1": "py3.12-nightly"}),
    (MATMUL + ADD, {"64x64": "cpu", "256x256": "cpu", "1024x1024": "big-cpu", "small": "cpu",
                    "large": "cpu"})], ids=["threads", "two-labels"])
def test_envs_print_as_torch(rows, env, settings):
    """Rows of several envs are tagged with theirs, at each env's first row in a group; a
    table of one env shows none."""
    ours, theirs = _tables(rows, env=env, **settings)
    assert ours == theirs and f"({env[rows[0][1]]})" in ours


def test_missing_description_prints_a_blank_header():
    """Where torch's Compare fails on a description of None (len(None)), genesis prints the
    blank header torch prints for a description of ""."""
    rows = [(label, sub_label, None, threads, number, times)
            for label, sub_label, _, threads, number, times in MATMUL[:1] + ADD[:1]]
    compare = benchmark.Compare(_measurements(benchmark, rows))
    blank = [row[:2] + ("",) + row[3:] for row in rows]
    assert str(compare) == str(torch_benchmark.Compare(_measurements(torch_benchmark, blank)))


def test_replicates_merge_and_extend_results_as_torch():
    """Measurements of one task pool their times; extend_results adds to the table."""
    tables = []
    for module in (benchmark, torch_benchmark):
        first, second = _measurements(module, MATMUL[:2]), _measurements(module, MATMUL)
        compare = module.Compare(first)
        compare.extend_results(second + _measurements(module, ADD))
        compare.trim_significant_figures()
        tables.append(str(compare))
        with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
            compare.extend_results([1.0])
    assert tables[0] == tables[1]


def test_statistics_and_helpers_as_torch():
    """The numbers Compare formats by: significant figures, warnings, trimming and units."""
    ours, theirs = (_measurements(module, MATMUL + NOISY) for module in
                    (benchmark, torch_benchmark))
    for mine, torch_m in zip(ours, theirs):
        for name in ("median", "iqr", "significant_figures", "has_warnings", "as_row_name",
                     "title", "env", "num_threads"):
            assert getattr(mine, name) == getattr(torch_m, name), name
    for x, n in [(3.14159, 2), (1234.5, 1), (0.012345, 3), (-98.76, 2)]:
        assert benchmark.trim_sigfig(x, n) == torch_benchmark.trim_sigfig(x, n)
    assert benchmark.unit_to_english("us") == torch_benchmark.unit_to_english("us")
    assert benchmark.ordered_unique("abcab") == torch_benchmark.ordered_unique("abcab")
    assert [c.value for c in benchmark.Colorize] == [c.value for c in torch_benchmark.Colorize]


def test_compares_real_timings(capsys):
    """Measurements from timeit and blocked_autorange of genesis statements print."""
    timers = [benchmark.Timer(stmt, setup="x = torch.ones(16)", label="tiny ops",
                              sub_label=stmt, description="genesis") for stmt in ("x + x", "-x")]
    compare = benchmark.Compare([timers[0].timeit(20)])
    compare.extend_results([timers[1].blocked_autorange(min_run_time=0.005)])
    compare.trim_significant_figures()
    compare.colorize()
    compare.print()
    printed = capsys.readouterr().out
    assert " tiny ops " in printed and "x + x" in printed and "genesis" in printed
