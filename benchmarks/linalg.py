"""linalg.solve, cholesky and svd, Genesis beside PyTorch on one device in one run.

Square float32 matrices (1024 and 4096 by default; positive-definite for cholesky, a random
right-hand side of 16 columns for solve). Each case is timed with `time.perf_counter` around
one call and a device synchronize, after a warm-up call; the table shows the median of
`--repeats` calls in milliseconds and the Genesis/PyTorch ratio. On CUDA, Genesis runs these
ops as a host round trip (copy to the host, numpy.linalg, copy back), so the figures show
what that costs next to cuSOLVER.

    python benchmarks/linalg.py [--device cuda] [--sizes 1024 4096] [--repeats 5] [--json PATH]
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


def run(device, sizes, repeats):
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
            rows.append({"op": name, "n": n, "device": device, "genesis_ms": round(g_ms, 3),
                         "torch_ms": round(t_ms, 3), "ratio": round(g_ms / t_ms, 2)})
            print(f"{name:<9} {n:>5}  genesis {g_ms:10.2f} ms  torch {t_ms:10.2f} ms  "
                  f"ratio {g_ms / t_ms:6.2f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if genesis.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    rows = run(args.device, args.sizes, args.repeats)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
