"""Caching allocator benchmark: five allocation scenarios, Genesis beside PyTorch.

Each scenario is an allocation trace (allocate n bytes into a slot / free a slot), replayed
once to warm the caches and then timed over several repeats; the figure is the median time per
allocate+free pair, plus peak reserved bytes over the trace's peak live (requested) bytes. The
random traces come from a fixed seed (--seed), so every run, and both libraries, replay the same
ones.

With a GPU (genesis.cuda.is_available()) the trace runs at the tensor level:
genesis.empty(n, dtype=genesis.uint8, device="cuda") against torch.empty(n, dtype=torch.uint8,
device="cuda"), a free being the last reference dropped, and each scenario's time per pair is held
to its regression guard, at most 2.5x PyTorch's (guards.py): the table shows the ratio with PASS
or FAIL, and --json writes the guards beside the results. Without one (or with --mode sim) it runs
on the raw CachingAllocator over the simulated driver of tests/cuda_sim.py: that mode measures
the allocator's Python bookkeeping only (no device memory, no tensors, no PyTorch). With
--mode sim-tensor the trace runs at the tensor level (genesis.empty on "cuda") over the simulated
device of benchmarks/simulated_cuda.py: the host cost of the whole allocate+free path, timed by
the thread's CPU time, with no GPU (and no PyTorch column).

    python benchmarks/allocator.py [--json PATH] [--repeats R] [--seed S]
                                   [--mode auto|gpu|sim|sim-tensor]
"""

import argparse
import functools
import json
import math
import pathlib
import statistics
import sys
import time

import numpy as np

import genesis
import guards

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PRESSURE_CAP = GiB


class Trace:
    """Allocation ops as (slot, nbytes), nbytes 0 meaning free; tracks the peak live bytes."""

    def __init__(self):
        self.ops, self.sizes, self._idle = [], [], []
        self.live = self.peak_live = 0

    def alloc(self, nbytes):
        slot = self._idle.pop() if self._idle else len(self.sizes)
        if slot == len(self.sizes):
            self.sizes.append(0)
        self.sizes[slot] = nbytes
        self.ops.append((slot, nbytes))
        self.live += nbytes
        self.peak_live = max(self.peak_live, self.live)
        return slot

    def free(self, slot):
        self.ops.append((slot, 0))
        self.live -= self.sizes[slot]
        self._idle.append(slot)

    @property
    def pairs(self):
        return sum(1 for _, n in self.ops if n)


def log_uniform(rng, low, high):
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def same_size(rng, nbytes, pairs=5000):
    trace = Trace()
    for _ in range(pairs):
        trace.free(trace.alloc(nbytes))
    return trace


def transformer_step(rng, layers=4, batch=4, seq=512, dim=1024, heads=16, vocab=8192, item=2):
    """One training step of a GPT block stack (bf16): activations saved in the forward pass,
    consumed in reverse in the backward pass with gradients of the same sizes, weight gradients
    kept to the end (the optimizer step), then everything freed."""
    trace = Trace()
    tokens = batch * seq
    act, stat, scores = tokens * dim * item, tokens * 4, batch * heads * seq * seq * item
    saved, weight_grads = [], []
    for _ in range(layers):
        layer = [trace.alloc(n) for n in (act, stat, stat, 3 * act)]  # ln1 + mean/rstd, qkv
        tmp = trace.alloc(scores)  # attention scores, freed once softmaxed
        layer.append(trace.alloc(scores))
        trace.free(tmp)
        layer += [trace.alloc(n) for n in (act, act, act, act, stat, stat, 4 * act, 4 * act, act)]
        saved.append(layer)
    logits = trace.alloc(tokens * vocab * item)
    grad = trace.alloc(tokens * vocab * item)
    trace.free(logits)
    for layer in reversed(saved):
        for slot in reversed(layer):
            new_grad = trace.alloc(trace.sizes[slot])
            trace.free(grad)
            trace.free(slot)
            grad = new_grad
        weight_grads += [trace.alloc(n * dim * dim * item) for n in (3, 1, 4, 4)]
        weight_grads += [trace.alloc(dim * item) for _ in range(4)]
    trace.free(grad)
    for slot in weight_grads:
        trace.free(slot)
    return trace


def memory_pressure(rng, cap=PRESSURE_CAP, steps=4000):
    """Random 256 KB-16 MB tensors kept at about 75% of a memory cap of `cap` bytes (fuller
    than that, a non-moving allocator's free space is too fragmented for the larger requests)."""
    trace, live = Trace(), []
    for _ in range(steps):
        nbytes = log_uniform(rng, 256 * KiB, 16 * MiB)
        while live and trace.live + nbytes > 0.75 * cap:
            trace.free(live.pop(int(rng.integers(len(live)))))
        live.append(trace.alloc(nbytes))
        if rng.random() < 0.5:
            trace.free(live.pop(int(rng.integers(len(live)))))
    for slot in live:
        trace.free(slot)
    return trace


def varying_sizes(rng, pairs=5000, window=4):
    """Log-uniform 1 KB-16 MB tensors, each freed `window` allocations later."""
    trace, live = Trace(), []
    for _ in range(pairs):
        live.append(trace.alloc(log_uniform(rng, KiB, 16 * MiB)))
        if len(live) > window:
            trace.free(live.pop(0))
    for slot in live:
        trace.free(slot)
    return trace


SCENARIOS = {
    "same size 4 KB": (lambda rng: same_size(rng, 4 * KiB), None),
    "large 4 MB": (lambda rng: same_size(rng, 4 * MiB), None),
    "transformer step": (transformer_step, None),
    "memory pressure": (memory_pressure, PRESSURE_CAP),
    "varying 1 KB-16 MB": (varying_sizes, None),
}


class Target:
    """One allocator under test: how to allocate and free, and its torch.cuda-like memory API."""

    def __init__(self, name, alloc, release, oom_error, memory, set_fraction, total, clock):
        self.name, self.alloc, self.release, self.oom_error = name, alloc, release, oom_error
        self.memory, self.set_fraction, self.total, self.clock = memory, set_fraction, total, clock

    def replay(self, trace):
        """Run the trace once; returns how many allocations failed with OOM."""
        alloc, release = self.alloc, self.release
        slots, ooms = [None] * len(trace.sizes), 0
        for slot, nbytes in trace.ops:
            if nbytes:
                try:
                    slots[slot] = alloc(nbytes)
                except self.oom_error:
                    ooms += 1
            elif slots[slot] is not None:
                if release is not None:
                    release(slots[slot])
                slots[slot] = None
        return ooms

    def prepare(self, cap):
        self.memory.empty_cache()
        self.set_fraction(1.0 if cap is None else cap / self.total)
        self.memory.reset_peak_memory_stats()

    def peak_reserved(self):
        return self.memory.max_memory_reserved()


def sim_targets():
    """The raw allocator over the simulated driver (an 80 GiB device); CPU time is the clock,
    since the figure is pure bookkeeping."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
    from cuda_sim import SimDriver
    from genesis.backends.cuda.runtime.memory import CachingAllocator, OutOfMemoryError
    driver = SimDriver(total=80 * GiB, auto_complete=True)
    allocator = CachingAllocator(driver)
    return [Target("genesis (sim)", allocator.malloc, allocator.free, OutOfMemoryError, allocator,
                   allocator.set_memory_fraction, driver.total, time.process_time)]


def sim_tensor_targets():
    """genesis tensors on the simulated CUDA device (host cost only, see simulated_cuda.py)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import simulated_cuda
    simulated_cuda.install()
    empty = functools.partial(genesis.empty, dtype=genesis.uint8, device="cuda")
    return [Target("sim tensors", empty, None, genesis.cuda.OutOfMemoryError,
                   genesis.cuda, genesis.cuda.set_memory_fraction, genesis.cuda.mem_get_info()[1],
                   time.thread_time)]


def gpu_targets():
    """genesis and torch tensors on the GPU; a free is the last reference dropped."""
    import torch
    targets = []
    for name, lib, set_fraction, oom_error in (
            ("genesis", genesis, genesis.cuda.set_memory_fraction, genesis.cuda.OutOfMemoryError),
            ("torch", torch, torch.cuda.set_per_process_memory_fraction, torch.OutOfMemoryError)):
        empty = functools.partial(lib.empty, dtype=lib.uint8, device="cuda")
        targets.append(Target(name, empty, None, oom_error, lib.cuda, set_fraction,
                              lib.cuda.mem_get_info()[1], time.perf_counter))
    return targets


def measure(target, trace, cap, repeats):
    """(median us per allocate+free pair, peak reserved bytes, OOMs in the timed runs)."""
    target.prepare(cap)
    target.replay(trace)
    samples, ooms = [], 0
    for _ in range(repeats):
        start = target.clock()
        ooms += target.replay(trace)
        samples.append((target.clock() - start) / trace.pairs * 1e6)
    result = statistics.median(samples), target.peak_reserved(), ooms
    target.prepare(None)
    return result


def run(targets, repeats, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for name, (make, cap) in SCENARIOS.items():
        trace = make(rng)
        row = {"scenario": name, "pairs": trace.pairs, "peak_live_bytes": trace.peak_live}
        for target in targets:
            us, reserved, ooms = measure(target, trace, cap, repeats)
            row[target.name] = {"us_per_pair": round(us, 2), "peak_reserved_bytes": reserved,
                                "reserved_over_live": round(reserved / trace.peak_live, 3),
                                "ooms": ooms}
        if "genesis" in row and "torch" in row:
            row["guard"] = guards.check(name, row["genesis"]["us_per_pair"],
                                        row["torch"]["us_per_pair"], guards.ALLOC_FREE_PAIR)
        rows.append(row)
    return rows


def print_table(rows, names):
    head = f"{'scenario':<22}{'pairs':>7}{'peak live':>11}"
    for name in names:
        head += f"{name + ' us':>18}{'res/live':>10}"
    guarded = [row["guard"] for row in rows if "guard" in row]
    if guarded:
        head += f"{'genesis/torch':>15}  guard (<= {guards.ALLOC_FREE_PAIR}x)"
    print(head)
    for row in rows:
        line = f"{row['scenario']:<22}{row['pairs']:>7}{row['peak_live_bytes'] / MiB:>9.1f}MB"
        for name in names:
            r = row[name]
            oom = f" ({r['ooms']} OOM)" if r["ooms"] else ""
            line += f"{r['us_per_pair']:>18.2f}{r['reserved_over_live']:>10.3f}{oom}"
        if "guard" in row:
            line += f"{row['guard']['ratio']:>15.2f}  {guards.verdict(row['guard'])}"
        print(line)
    if guarded:
        print(guards.summary(guarded))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mode", choices=("auto", "gpu", "sim", "sim-tensor"), default="auto")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random traces (pressure, varying): the same traces "
                             "every run, so fragmentation compares across runs")
    args = parser.parse_args(argv)
    gpu = args.mode == "gpu" or (args.mode == "auto" and genesis.cuda.is_available())
    if gpu:
        targets = gpu_targets()
    elif args.mode == "sim-tensor":
        targets = sim_tensor_targets()
        print("mode: simulated CUDA device -- tensor-level host cost (no GPU, CPU time)")
    else:
        targets = sim_targets()
        print("mode: simulated driver -- the allocator's Python bookkeeping only (no GPU)")
    rows = run(targets, args.repeats, args.seed)
    names = [t.name for t in targets]
    print_table(rows, names)
    if args.json:
        meta = {"mode": "gpu" if gpu else args.mode,
                "clock": "wall" if gpu else "CPU time",
                "python": sys.version.split()[0],
                "repeats": args.repeats, "seed": args.seed, "targets": names}
        if gpu:
            meta["device"] = genesis.cuda.get_device_name()
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows,
                       "guards": [row["guard"] for row in rows if "guard" in row]}, f, indent=2)


if __name__ == "__main__":
    main()
