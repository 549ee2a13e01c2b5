"""Data-parallel GPT-2 small on 1 and 2 GPUs: Genesis DDP beside PyTorch DDP, and loss equality.

The driver starts each run through `python -m genesis.distributed.run` (it sets the environment
both libraries' env:// rendezvous reads):
- throughput: GPT-2 small (examples/gpt.py), autocast bf16, per-GPU batch 8, AdamW and clipping,
  for each library on 1 and 2 GPUs; it prints tokens/s over all GPUs, the scaling efficiency
  (2-GPU tokens/s over twice the 1-GPU figure; goal >= 0.95) and Genesis/PyTorch (goal >= 1.0);
- fidelity: Genesis DDP on 2 GPUs with batch 4 per GPU against one GPU with batch 8 on the same
  tokens, float32 without TF32, 10 steps: the mean losses must agree within 1e-4 relative.

    python benchmarks/ddp.py [--json PATH] [--steps N] [--warmup N] [--nproc 2]

Every collective on 2 GPUs (fp32, bf16, int64, float64, each reduce op) and DDP's gradients are
checked by `python -m genesis.distributed.run --nproc-per-node 2 tests/distributed_worker.py
cuda`.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

from gpt2 import trainer  # noqa: E402  (the same training step as the one-GPU benchmark)

BATCH = 8


def _lib(name):
    if name == "torch":
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        return torch, dist, DistributedDataParallel
    import genesis
    import genesis.distributed as dist
    from genesis.nn.parallel import DistributedDataParallel
    return genesis, dist, DistributedDataParallel


def _tokens(seed, batch, config):
    rng = np.random.default_rng(seed)
    return rng.integers(0, config.vocab_size, (batch, config.block_size + 1))


def _setup(name, tf32):
    """(lib, dist, rank, world size, DDP class) with this rank's GPU and process group set."""
    lib, dist, ddp = _lib(name)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    lib.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    lib.backends.cuda.matmul.allow_tf32 = tf32
    dist.init_process_group("nccl")
    return lib, dist, rank, world, ddp


def _model(lib, ddp, world, config):
    from gpt import build_gpt
    lib.manual_seed(0)
    model = build_gpt(config, lib).to("cuda")
    return ddp(model) if world > 1 else model


def worker_throughput(name, steps, warmup, out):
    from gpt import GPTConfig
    config = GPTConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768)
    lib, dist, rank, world, ddp = _setup(name, tf32=True)
    tokens = _tokens(rank, BATCH, config)
    x = lib.tensor(tokens[:, :-1], device="cuda")
    y = lib.tensor(tokens[:, 1:], device="cuda")
    step = trainer(lib, _model(lib, ddp, world, config), "autocast bf16")
    for _ in range(warmup):
        step(x, y)
    lib.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step(x, y)
    lib.cuda.synchronize()
    seconds = time.perf_counter() - start
    if rank == 0:
        rate = world * BATCH * config.block_size * steps / seconds
        pathlib.Path(out).write_text(json.dumps({"tokens_per_s": rate,
                                                 "ms_per_step": seconds / steps * 1e3}))
    dist.destroy_process_group()


def worker_fidelity(name, steps, out):
    """Mean loss per step of a data-parallel run whose global batch is always the same 8."""
    from gpt import GPTConfig
    config = GPTConfig(vocab_size=50304, block_size=256, n_layer=12, n_head=12, n_embd=768)
    lib, dist, rank, world, ddp = _setup(name, tf32=False)
    step = trainer(lib, _model(lib, ddp, world, config), "float32")
    per_rank = BATCH // world
    losses = []
    for s in range(steps):
        tokens = _tokens(100 + s, BATCH, config)[rank * per_rank:(rank + 1) * per_rank]
        loss = step(lib.tensor(tokens[:, :-1], device="cuda"),
                    lib.tensor(tokens[:, 1:], device="cuda")).detach()
        dist.all_reduce(loss, dist.ReduceOp.AVG)
        losses.append(loss.item())
    if rank == 0:
        pathlib.Path(out).write_text(json.dumps(losses))
    dist.destroy_process_group()


def _launch(nproc, *worker_args):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    command = [sys.executable, "-m", "genesis.distributed.run", "--nproc-per-node", str(nproc),
               __file__, "--worker", *worker_args, "--out", out]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    subprocess.run(command, check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=path))
    return json.loads(pathlib.Path(out).read_text())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--worker", nargs=2, metavar=("KIND", "LIB"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        kind, name = args.worker
        if kind == "throughput":
            return worker_throughput(name, args.steps, args.warmup, args.out)
        return worker_fidelity(name, 10, args.out)
    figures = {}
    for name in ("genesis", "torch"):
        for n in (1, args.nproc):
            figures[f"{name} {n} GPU"] = _launch(n, "throughput", name)
            print(f"{name:8s} {n} GPU: {figures[f'{name} {n} GPU']['tokens_per_s']:12,.0f} tok/s",
                  flush=True)
    for name in ("genesis", "torch"):
        one, many = (figures[f"{name} {n} GPU"]["tokens_per_s"] for n in (1, args.nproc))
        figures[f"{name} scaling efficiency"] = many / (args.nproc * one)
        print(f"{name} scaling efficiency 1 -> {args.nproc} GPUs: "
              f"{figures[f'{name} scaling efficiency']:.3f} (goal >= 0.95)")
    ratio = figures[f"genesis {args.nproc} GPU"]["tokens_per_s"] / \
        figures[f"torch {args.nproc} GPU"]["tokens_per_s"]
    figures["genesis / torch"] = ratio
    print(f"Genesis / PyTorch DDP tokens/s on {args.nproc} GPUs: {ratio:.3f} (goal >= 1.0)")
    single = _launch(1, "fidelity", "genesis")
    parallel = _launch(args.nproc, "fidelity", "genesis")
    worst = max(abs(a - b) / abs(a) for a, b in zip(single, parallel))
    figures["fidelity"] = {"one GPU": single, "data parallel": parallel, "max rel diff": worst}
    print(f"DDP vs one GPU, same global batch, 10 float32 steps: max relative loss difference "
          f"{worst:.2e} ({'ok' if worst < 1e-4 else 'FAILED'}, tolerance 1e-4)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
