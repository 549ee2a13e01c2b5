"""linalg.solve, cholesky and svd, Genesis beside PyTorch on one device in one run.

Square float32 matrices (1024 and 4096 by default; positive-definite for cholesky, a random
right-hand side of 16 columns for solve). Each case is timed with `time.perf_counter` around
one call and a device synchronize, after a warm-up call; the table shows the median of
`--repeats` calls in milliseconds and the Genesis/PyTorch ratio. On CUDA both run cuSOLVER
(Genesis: getrf/getrs, potrf and gesvdj through nvmath-python, one call per matrix); `--host`
runs Genesis's host round trip instead (copy to the host, numpy.linalg, copy back), the path
it falls back to where libcusolver is missing.

    python benchmarks/linalg.py [--device cuda] [--sizes 1024 4096] [--repeats 5] [--host]
                                [--json PATH]
"""

import argparse
import json
import pathlib
import statistics
import time

import numpy as np
import torch

import genesis

OPS = {
    "solve": lambda la, a, b: la.solve(a, b),
    "cholesky": lambda la, a, b: la.cholesky(a),
    "svd": lambda la, a, b: la.svd(a, full_matrices=False),
}


def inputs(n, seed=0):
    """A well-conditioned positive-definite matrix and a right-hand side, as numpy float32."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n)) / np.sqrt(n)
    spd = x @ x.T + np.eye(n)
    return spd.astype(np.float32), rng.standard_normal((n, 16)).astype(np.float32)


def median_ms(fn, sync, repeats):
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def run(device, sizes, repeats, path):
    rows = []
    g_sync = genesis.cuda.synchronize if device == "cuda" else (lambda: None)
    t_sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for n in sizes:
        a, b = inputs(n)
        ga, gb = genesis.tensor(a, device=device), genesis.tensor(b, device=device)
        ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
        for name, op in OPS.items():
            g_ms = median_ms(lambda: op(genesis.linalg, ga, gb), g_sync, repeats)
            t_ms = median_ms(lambda: op(torch.linalg, ta, tb), t_sync, repeats)
            rows.append({"op": name, "n": n, "device": device, "path": path,
                         "genesis_ms": round(g_ms, 3),
                         "torch_ms": round(t_ms, 3), "ratio": round(g_ms / t_ms, 2)})
            print(f"{name:<9} {n:>5}  genesis {g_ms:10.2f} ms  torch {t_ms:10.2f} ms  "
                  f"ratio {g_ms / t_ms:6.2f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if genesis.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--host", action="store_true",
                        help="run Genesis's CUDA linalg as the host round trip, not cuSOLVER")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    path = "host" if args.device == "cpu" or args.host else "cusolver"
    if args.device == "cuda":
        from genesis.backends.cuda import linalg_cusolver
        linalg_cusolver.enabled = not args.host
        if not args.host and not linalg_cusolver.available(genesis.cuda.current_device()):
            path = "host"  # libcusolver missing: the warning above says so
    rows = run(args.device, args.sizes, args.repeats, path)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
