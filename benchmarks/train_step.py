"""One GPT training step on the GPU, Genesis beside PyTorch in one run.

The model is examples/gpt.py's (the main job's), built once with each library from the same
config: forward, cross-entropy, backward, gradient clipping and an AdamW step, float32. The
"small" config is the main job's default (host overhead dominates); "medium" is big enough that
the kernels do. Each library runs `--warmup` steps, then `--steps` timed steps between two device
synchronizations; the table gives ms per step, tokens per second and the Genesis/PyTorch ratio.
After the warm-up the objects made so far are frozen out of the cyclic collector (`gc.freeze()`,
as examples/train_gpt.py does): a full collection walks every long-lived object (the imported
modules, both models, compiled kernels), about 100 ms on a 2-core machine, and lands in some runs
and not others, which made Genesis's medium step read anywhere from 27 to 48 ms on one H200.

The "gc" column counts the collections Python's cyclic collector ran during Genesis's timed
steps, by generation (young/middle/full: only a full one walks every live object). With --profile, three more Genesis steps run under genesis.cuda.GPUProfiler: their device
time (the sum of every kernel's and library call's event-timed duration) against the measured
wall time tells whether a step is host- or device-bound, and the kernels that take the most
device time are listed.

With --graphs each library also runs the step captured in one CUDA graph (warmed up on a side
stream, captured with `cuda.graph`, then replayed; AdamW with capturable=True), and the table
adds the host time per step (the time to enqueue the steps) and the device span per step (CUDA
events around them).

    python benchmarks/train_step.py [--json PATH] [--steps N] [--warmup N] [--profile] [--graphs]
"""

import argparse
import gc
import json
import pathlib
import sys
import time

import numpy as np
import torch

import genesis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from gpt import GPTConfig, build_gpt  # noqa: E402

VOCAB = 96
CONFIGS = {
    "small (main job)": (dict(block_size=64, n_layer=3, n_head=4, n_embd=128), 16),
    "medium": (dict(block_size=256, n_layer=6, n_head=6, n_embd=384), 32),
}


def _step_fn(lib, config, batch, rng, capturable=False):
    """A closure running one training step of a fresh model built with `lib` on cuda."""
    lib.manual_seed(0)
    model = build_gpt(GPTConfig(vocab_size=VOCAB, **config), lib).to("cuda")
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                          capturable=capturable)
    tokens = rng.integers(0, VOCAB, (batch, config["block_size"] + 1))
    x = lib.tensor(tokens[:, :-1], device="cuda")
    y = lib.tensor(tokens[:, 1:], device="cuda")

    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


def captured_step(lib, step):
    """`step` captured in one CUDA graph (after a warm-up on a side stream): a closure that
    replays it and returns the captured loss."""
    side = lib.cuda.Stream()
    side.wait_stream(lib.cuda.current_stream())
    with lib.cuda.stream(side):
        for _ in range(3):
            step()
    lib.cuda.current_stream().wait_stream(side)
    graph = lib.cuda.CUDAGraph()
    with lib.cuda.graph(graph):
        loss = step()

    def replay():
        graph.replay()
        return loss
    return replay


def _time(lib, step, steps, warmup):
    """(seconds per step over `steps` steps after `warmup` untimed ones, host seconds per step
    (enqueueing), device milliseconds per step (events), last loss, cyclic garbage collections
    during the timed steps)."""
    for _ in range(warmup):
        step()
    lib.cuda.synchronize()
    gc.freeze()
    collections = [0, 0, 0]

    def count(phase, info):
        if phase == "start":
            collections[info["generation"]] += 1
    gc.callbacks.append(count)
    first, last = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
    start = time.perf_counter()
    first.record()
    for _ in range(steps):
        loss = step()
    host = (time.perf_counter() - start) / steps
    last.record()
    lib.cuda.synchronize()
    elapsed = (time.perf_counter() - start) / steps
    gc.callbacks.remove(count)
    return (elapsed, host, first.elapsed_time(last) / steps, float(loss.item()),
            "/".join(map(str, collections)))


def _device_profile(step, steps=3, top=8):
    """Genesis's device time per step (ms) and its `top` kernels by total device time."""
    with genesis.cuda.GPUProfiler() as prof:
        for _ in range(steps):
            step()
        genesis.cuda.synchronize()
    stats = sorted(prof.get_stats().values(), key=lambda r: -r["total_us"])
    total_ms = sum(r["total_us"] for r in stats) / 1e3 / steps
    return total_ms, [(r["name"], r["calls"] // steps, r["total_us"] / 1e3 / steps)
                      for r in stats[:top]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile", action="store_true",
                        help="also report Genesis's device time per step and its top kernels")
    parser.add_argument("--graphs", action="store_true",
                        help="also time each library's step captured in a CUDA graph")
    args = parser.parse_args()
    rng = np.random.default_rng()
    rows, profiles = [], []
    modes = ("eager", "graphed") if args.graphs else ("eager",)
    print(f"{'config':<18} {'mode':<8} {'genesis ms':>11} {'torch ms':>9} {'ratio':>6} "
          f"{'host g/t ms':>13} {'device g/t ms':>15} {'genesis tok/s':>14} {'gc':>8}")
    for name, (config, batch) in CONFIGS.items():
        tokens = batch * config["block_size"]
        for mode in modes:
            results = {}
            for lib in (genesis, torch):
                step = _step_fn(lib, config, batch, rng, capturable=mode == "graphed")
                if mode == "graphed":
                    step = captured_step(lib, step)
                seconds, host, device_ms, loss, collections = _time(lib, step, args.steps,
                                                                     args.warmup)
                results[lib.__name__] = {"ms": seconds * 1e3, "host_ms": host * 1e3,
                                         "device_ms": device_ms,
                                         "tokens_per_s": tokens / seconds, "last_loss": loss,
                                         "gc_collections": collections}
                if args.profile and lib is genesis and mode == "eager":
                    kernel_ms, kernels = _device_profile(step)
                    results["genesis"].update(kernel_ms=kernel_ms, top_kernels=kernels)
                    profiles.append((name, seconds * 1e3, kernel_ms, kernels))
            g, t = results["genesis"], results["torch"]
            ratio = g["ms"] / t["ms"]
            rows.append({"config": name, "mode": mode, **config, "batch": batch, "genesis": g,
                         "torch": t, "ratio": ratio})
            print(f"{name:<18} {mode:<8} {g['ms']:>11.2f} {t['ms']:>9.2f} {ratio:>6.2f} "
                  f"{g['host_ms']:>6.2f}/{t['host_ms']:<6.2f} "
                  f"{g['device_ms']:>7.2f}/{t['device_ms']:<7.2f} {g['tokens_per_s']:>14,.0f} "
                  f"{g['gc_collections']:>8}")
    for name, wall_ms, device_ms, kernels in profiles:
        print(f"\n{name}: genesis wall {wall_ms:.2f} ms, device {device_ms:.2f} ms per step")
        for kernel, calls, ms in kernels:
            print(f"  {ms:8.3f} ms  {calls:4d} calls  {kernel[:90]}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
