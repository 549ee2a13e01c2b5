"""GPU ops, Genesis beside PyTorch on the same GPU in one run: small-op latency and bandwidth.

Small ops: add 1M, softmax 10K (10 x 1000, softmax over the last dim), sum 1M,
plus the in-place add_ 1M; per call, the device time (CUDA events) and the host wall time.
Bandwidth (>= 256 MB moved by each op): add, add_, sum, softmax, LayerNorm, RMSNorm, cast
float32 -> bfloat16, transpose copy, in TB/s and as a fraction of the device-to-device copy
bandwidth measured in the same run (the better of Genesis's and PyTorch's copy); and the column
sums of GPT-2 small's bias gradients (12 and 50 MB). Float32 unless stated.

Device time: each repetition first flushes L2 with a pass over a 256 MB buffer (which also keeps
the GPU busy while the host enqueues the timed call), then records an event, runs the op, records
an event; the median over repetitions is reported. Bandwidth is measured under two flushes:
zeroing the buffer (as triton.testing.do_bench does) and summing it. Zeroing leaves the L2 full of
dirty lines, up to about 14 us of write-back on an H200, that lands inside the timed kernel; a
read-only op like sum pays it in full, a copy partly hides it behind its own writes. Summing
leaves clean lines, so each op is charged for its own traffic only. The fractions of copy are
taken against the copy under the same flush. Host wall time: time.perf_counter over many
back-to-back calls, median over repeats, the two libraries taking turns. Each small op's host
wall time is held to its regression guard, at most 2.0x PyTorch's (guards.py): the table shows
the ratio with PASS or FAIL, and --json writes the guards beside the results. Genesis never
imports torch; this script imports both to compare them.

    python benchmarks/ops.py [--json PATH] [--reps N] [--only NAME ...]
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as TF

import genesis
import genesis.nn.functional as F
import guards

MB = 1 << 20
FLUSH_BYTES = 256 * MB


class Lib:
    """One framework's handles: tensor creation, events, synchronization, L2 flushing."""

    def __init__(self, module):
        self.module = module
        self.is_torch = module is torch
        dtype = torch.int32 if self.is_torch else genesis.int32
        self._flush = module.empty(FLUSH_BYTES // 4, dtype=dtype, device="cuda")

    def tensor(self, array):
        if self.is_torch:
            return torch.from_numpy(array).cuda()
        return genesis.tensor(array, device="cuda")

    def event(self):
        return self.module.cuda.Event(enable_timing=True)

    def synchronize(self):
        self.module.cuda.synchronize()

    def flush(self, how="zero"):
        """Evict L2 by writing (`zero`: leaves dirty lines) or reading (`read`) 256 MB."""
        if how == "zero":
            self._flush.zero_()
        else:
            self._flush.sum()


FLUSHES = ("zero", "read")


def device_ms(lib, fn, reps, flush="zero"):
    """Median device time of one call (ms), each call behind an L2 flush (see docstring)."""
    for _ in range(3):
        fn()
    lib.synchronize()
    pairs = []
    for _ in range(reps):
        lib.flush(flush)
        start, end = lib.event(), lib.event()
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    lib.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs)


def cudnn_tf32(on):
    """Set cudnn.allow_tf32 to `on` in both frameworks (PyTorch's default is on) and return a
    line naming the precision float32 convolutions and recurrent layers then run in, for a
    table's header. The matmul flags stay as they are (off by default in both)."""
    torch.backends.cudnn.allow_tf32 = genesis.backends.cudnn.allow_tf32 = on
    precision = "TF32 tensor-core products" if on else "IEEE float32"
    return (f"float32 convolutions and recurrent layers: {precision} in both frameworks "
            f"(cudnn.allow_tf32 = {on})")


def host_us(calls_by_lib, calls=500, repeats=7):
    """Median over repeats of the host wall time per call (us) of each library's call, calls
    issued back to back. The libraries take turns, one batch each per round, so that a change
    in the shared machine's speed during the measurement falls on both alike."""
    for lib, fn in calls_by_lib.values():
        for _ in range(20):
            fn()
        lib.synchronize()
    samples = {label: [] for label in calls_by_lib}
    for _ in range(repeats):
        for label, (lib, fn) in calls_by_lib.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[label].append((time.perf_counter() - start) / calls * 1e6)
            lib.synchronize()
    return {label: statistics.median(times) for label, times in samples.items()}


def _rand(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


# Each case: (make(lib, rng) -> zero-argument callable, bytes moved per call or None).
def _add(n):
    def make(lib, rng):
        a, b = lib.tensor(_rand(rng, n)), lib.tensor(_rand(rng, n))
        return lambda: a + b
    return make, 12 * n


def _add_inplace(n):
    def make(lib, rng):
        a, b = lib.tensor(_rand(rng, n)), lib.tensor(_rand(rng, n))
        return lambda: a.add_(b)
    return make, 12 * n


def _sum(n):
    def make(lib, rng):
        a = lib.tensor(_rand(rng, n))
        return lambda: a.sum()
    return make, 4 * n


def _column_sum(rows, cols):
    """A bias gradient: bfloat16 (rows, cols) summed over the rows."""
    def make(lib, rng):
        dtype = torch.bfloat16 if lib.is_torch else genesis.bfloat16
        x = lib.tensor(_rand(rng, rows, cols)).to(dtype)
        return lambda: x.sum(0)
    return make, 2 * rows * cols


def _softmax(rows, cols):
    def make(lib, rng):
        x = lib.tensor(_rand(rng, rows, cols))
        return lambda: lib.module.softmax(x, -1)
    return make, 8 * rows * cols


def _norm(rows, cols, rms):
    def make(lib, rng):
        x = lib.tensor(_rand(rng, rows, cols))
        w, b = lib.tensor(_rand(rng, cols)), lib.tensor(_rand(rng, cols))
        fns = TF if lib.is_torch else F
        if rms:
            return lambda: fns.rms_norm(x, (cols,), w, 1e-5)
        return lambda: fns.layer_norm(x, (cols,), w, b, 1e-5)
    return make, 8 * rows * cols


def _cast(n):
    def make(lib, rng):
        x = lib.tensor(_rand(rng, n))
        dtype = torch.bfloat16 if lib.is_torch else genesis.bfloat16
        return lambda: x.to(dtype)
    return make, 6 * n


def _transpose(n):
    def make(lib, rng):
        x = lib.tensor(_rand(rng, n, n))
        return lambda: x.t().contiguous()
    return make, 8 * n * n


def _copy(n):
    def make(lib, rng):
        x, y = lib.tensor(_rand(rng, n)), lib.tensor(_rand(rng, n))
        return lambda: y.copy_(x)
    return make, 8 * n


M = 1 << 20
LATENCY = {
    "add 1M": _add(M),
    "add_ 1M (in place)": _add_inplace(M),
    "softmax 10K": _softmax(10, 1000),
    "sum 1M": _sum(M),
}
BANDWIDTH = {
    "copy 256 MB": _copy(64 * M),
    "add 3 x 256 MB": _add(64 * M),
    "add_ 3 x 256 MB (in place)": _add_inplace(64 * M),
    "sum 256 MB": _sum(64 * M),
    "softmax 4096 x 16384": _softmax(4096, 16384),
    "LayerNorm 16384 x 4096": _norm(16384, 4096, False),
    "RMSNorm 16384 x 4096": _norm(16384, 4096, True),
    "cast to bf16 256 MB": _cast(64 * M),
    "transpose copy 8192^2": _transpose(8192),
    "bias grad sum(0) 8192 x 768 bf16": _column_sum(8192, 768),
    "bias grad sum(0) 8192 x 3072 bf16": _column_sum(8192, 3072),
}


def run(reps, only):
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    rows = []
    for name, (make, _) in LATENCY.items():
        if only and name not in only:
            continue
        row = {"case": name, "kind": "latency"}
        calls = {label: (lib, make(lib, np.random.default_rng(0))) for label, lib in libs.items()}
        for label, (lib, fn) in calls.items():
            row[f"{label}_device_us"] = round(device_ms(lib, fn, reps) * 1e3, 2)
        for label, us in host_us(calls).items():
            row[f"{label}_host_us"] = round(us, 2)
        row["guard"] = guards.check(name, row["genesis_host_us"], row["torch_host_us"],
                                    guards.SMALL_OP_HOST)
        rows.append(row)
    for name, (make, nbytes) in BANDWIDTH.items():
        if only and name not in only and not name.startswith("copy"):
            continue
        row = {"case": name, "kind": "bandwidth", "bytes": nbytes}
        for label, lib in libs.items():
            fn = make(lib, np.random.default_rng(0))
            for flush in FLUSHES:
                ms = device_ms(lib, fn, reps, flush)
                row[f"{label}_ms_{flush}"] = round(ms, 4)
                row[f"{label}_tbps_{flush}"] = round(nbytes / ms / 1e9, 3)
            del fn
        rows.append(row)
    for flush in FLUSHES:
        peak = max(max(r[f"genesis_tbps_{flush}"], r[f"torch_tbps_{flush}"]) for r in rows
                   if r["case"].startswith("copy"))
        for r in rows:
            if r["kind"] == "bandwidth":
                for label in libs:
                    r[f"{label}_of_copy_{flush}"] = round(r[f"{label}_tbps_{flush}"] / peak, 3)
                r[f"genesis_vs_torch_{flush}"] = round(
                    r[f"genesis_tbps_{flush}"] / r[f"torch_tbps_{flush}"], 3)
    return rows


def markdown(rows):
    latency = [r for r in rows if r["kind"] == "latency"]
    lines = ["| case | genesis device us | torch device us | genesis host us | torch host us | "
             f"host genesis / torch | guard (<= {guards.SMALL_OP_HOST}x) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r['case']} | {r['genesis_device_us']} | {r['torch_device_us']} | "
              f"{r['genesis_host_us']} | {r['torch_host_us']} | {r['guard']['ratio']} | "
              f"{guards.verdict(r['guard'])} |" for r in latency]
    if latency:
        lines += ["", guards.summary([r["guard"] for r in latency])]
    for flush in FLUSHES:
        lines += ["", f"L2 flush: {flush}", "",
                  "| case | genesis TB/s | torch TB/s | genesis / copy | torch / copy | "
                  "genesis / torch |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['case']} | {r[f'genesis_tbps_{flush}']} | {r[f'torch_tbps_{flush}']} | "
                  f"{r[f'genesis_of_copy_{flush}']} | {r[f'torch_of_copy_{flush}']} | "
                  f"{r[f'genesis_vs_torch_{flush}']} |"
                  for r in rows if r["kind"] == "bandwidth"]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--reps", type=int, default=50, help="timed repetitions per op")
    parser.add_argument("--only", nargs="*", help="run only these cases (copy always runs)")
    args = parser.parse_args(argv)
    if not genesis.cuda.is_available():
        sys.exit("benchmarks/ops.py needs a CUDA GPU")
    rows = run(args.reps, set(args.only or ()))
    if args.json:
        meta = {"device": genesis.cuda.get_device_name(), "torch": torch.__version__,
                "numpy": np.__version__, "python": sys.version.split()[0], "reps": args.reps}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows,
                       "guards": [r["guard"] for r in rows if "guard" in r]}, f, indent=2)
    print(markdown(rows))


if __name__ == "__main__":
    main()
