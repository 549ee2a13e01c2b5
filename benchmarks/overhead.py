"""Host time per small op, Genesis beside PyTorch CPU in one run.

Each case times many calls with time.perf_counter and reports the median over several repeats,
in microseconds per call, with the Genesis/PyTorch ratio. The tensors are tiny (1K elements) so
the figure is the framework's host overhead, not arithmetic.

    python benchmarks/overhead.py [--json PATH] [--iters N] [--repeats R] [--profile CASE]
"""

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

import numpy as np
import torch

import genesis

SIZE = 1024


def _inputs(lib, requires_grad):
    rng = np.random.default_rng()
    arrays = [rng.standard_normal(SIZE).astype(np.float32) for _ in range(2)]
    return [lib.tensor(a, requires_grad=requires_grad) for a in arrays]


def _add(lib, requires_grad):
    a, b = _inputs(lib, requires_grad)
    return lambda: a + b


def _mul_sum_backward(lib):
    a, b = _inputs(lib, True)

    def step():
        (a * b).sum().backward()
    return step


def _empty(lib):
    return lambda: lib.empty(SIZE)


CASES = {
    "add 1K": lambda lib: _add(lib, False),
    "add 1K, requires_grad": lambda lib: _add(lib, True),
    "mul+sum+backward 1K": _mul_sum_backward,
    "empty(1024)": _empty,
}


def _time_per_call(fn, iters, repeats):
    """Median over `repeats` of the mean wall time of one call, in microseconds."""
    for _ in range(max(iters // 10, 1)):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - start) / iters * 1e6)
    return statistics.median(samples)


def run(iters, repeats):
    """One row per case: genesis and torch microseconds per call and their ratio."""
    torch.set_num_threads(1)
    rows = []
    for name, make in CASES.items():
        g = _time_per_call(make(genesis), iters, repeats)
        t = _time_per_call(make(torch), iters, repeats)
        rows.append({"case": name, "genesis_us": round(g, 2), "torch_us": round(t, 2),
                     "ratio": round(g / t, 2)})
    return rows


def print_table(rows):
    print(f"{'case':<24}{'genesis us':>12}{'torch us':>10}{'ratio':>8}")
    for r in rows:
        print(f"{r['case']:<24}{r['genesis_us']:>12.2f}{r['torch_us']:>10.2f}{r['ratio']:>8.2f}")


def profile(case, iters):
    """cProfile the Genesis side of one case; prints the 25 most expensive functions."""
    fn = CASES[case](genesis)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(iters):
        fn()
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", choices=sorted(CASES), help="cProfile this Genesis case")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile, args.iters)
        return
    rows = run(args.iters, args.repeats)
    print_table(rows)
    if args.json:
        meta = {"numpy": np.__version__, "torch": torch.__version__,
                "python": sys.version.split()[0], "size": SIZE, "iters": args.iters,
                "repeats": args.repeats}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
