"""Optimizer steps on the GPU, Genesis beside PyTorch in one run.

The parameters have the shapes of examples/gpt.py's model in the main job's config (40 tensors,
0.6 M values), in the medium one (76 tensors, 10.8 M) and in GPT-2 small's (12 layers, 768
wide, vocabulary 50304), float32, with random gradients. Each
optimizer steps `--steps` times between two device synchronizations, after `--warmup` steps;
the figure is the median over `--repeats` such runs, in microseconds per step, so it is the
host time of a step when that dominates and the device time otherwise. Genesis runs its
default on CUDA (the fused multi-tensor kernel: one launch per step); PyTorch its default
(foreach) and, where it has one on CUDA, its fused kernel. Rounds alternate between the
libraries, so drift of the shared machine falls on all of them.

    python benchmarks/optim.py [--json PATH] [--steps N] [--warmup N] [--repeats N]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np
import torch

import genesis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from gpt import GPTConfig, build_gpt  # noqa: E402

CONFIGS = {
    "small (main job)": dict(block_size=64, n_layer=3, n_head=4, n_embd=128),
    "medium": dict(block_size=256, n_layer=6, n_head=6, n_embd=384),
    "gpt2 small": dict(block_size=1024, n_layer=12, n_head=12, n_embd=768, vocab_size=50304),
}
OPTIMIZERS = {  # name: (constructor arguments, whether PyTorch has a fused CUDA kernel)
    "SGD": (dict(lr=0.01, momentum=0.9, weight_decay=1e-4), True),
    "Adam": (dict(lr=1e-3), True),
    "AdamW": (dict(lr=1e-3, weight_decay=0.1), True),
    "RMSprop": (dict(lr=1e-3, momentum=0.9), False),
    "Adagrad": (dict(lr=1e-2), False),
    "NAdam": (dict(lr=2e-3, weight_decay=0.01, decoupled_weight_decay=True), False),
    "RAdam": (dict(lr=1e-3), False),
    "Adamax": (dict(lr=2e-3), False),
    "Adadelta": (dict(lr=1.0), False),
    "ASGD": (dict(lr=1e-2), False),
    "Rprop": (dict(lr=1e-2), False),
}


def _shapes(config):
    model = build_gpt(GPTConfig(**{"vocab_size": 96, **config}), genesis)
    return [tuple(p.shape) for p in model.parameters()]


def _stepper(lib, name, kwargs, shapes, rng, fused=None):
    """A closure running one `name` step over fresh parameters of `shapes` on cuda."""
    params = []
    for shape in shapes:
        p = lib.tensor(rng.standard_normal(shape, dtype=np.float32), device="cuda")
        p.requires_grad_(True)
        p.grad = lib.tensor(rng.standard_normal(shape, dtype=np.float32), device="cuda")
        params.append(p)
    extra = {} if fused is None else {"fused": fused}
    return getattr(lib.optim, name)(params, **kwargs, **extra).step


def _us_per_step(lib, step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    lib.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'config':<18} {'optimizer':<9} {'genesis us':>11} {'torch us':>9} "
          f"{'torch fused us':>15} {'genesis / torch best':>21}")
    for config_name, config in CONFIGS.items():
        shapes = _shapes(config)
        for name, (kwargs, torch_fused) in OPTIMIZERS.items():
            runs = {"genesis": (genesis, _stepper(genesis, name, kwargs, shapes, rng)),
                    "torch": (torch, _stepper(torch, name, kwargs, shapes, rng))}
            if torch_fused:
                runs["torch fused"] = (torch, _stepper(torch, name, kwargs, shapes, rng, True))
            for lib, step in runs.values():
                for _ in range(args.warmup):
                    step()
                lib.cuda.synchronize()
            samples = {label: [] for label in runs}
            for _ in range(args.repeats):
                for label, (lib, step) in runs.items():
                    samples[label].append(_us_per_step(lib, step, args.steps))
            us = {label: statistics.median(s) for label, s in samples.items()}
            best_torch = min(v for k, v in us.items() if k != "genesis")
            row = {"config": config_name, "optimizer": name, "kwargs": kwargs,
                   "tensors": len(shapes), "values": int(sum(np.prod(s) for s in shapes)),
                   **{f"{label}_us": round(v, 1) for label, v in us.items()},
                   "ratio_to_best_torch": round(us["genesis"] / best_torch, 3)}
            rows.append(row)
            fused = f"{us['torch fused']:>15.1f}" if torch_fused else f"{'-':>15}"
            print(f"{config_name:<18} {name:<9} {us['genesis']:>11.1f} {us['torch']:>9.1f} "
                  f"{fused} {row['ratio_to_best_torch']:>21.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
