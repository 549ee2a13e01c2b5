"""Causal self-attention forward + backward on the GPU, Genesis's fused FlashAttention kernels
beside torch's scaled_dot_product_attention, in one run.

Shapes are GPT-2 small and medium heads at training lengths in bf16 and fp16, and the heads of
benchmarks/train_step.py's float32 models; each case times one forward and one backward (the
gradient of every input) by CUDA events behind an L2 flush (ops.device_ms) and reports ms,
TFLOP/s (4 B H T^2 D flops forward and 10 backward, halved for the causal mask) and the
Genesis/torch ratio of times, for Genesis's default backward (attention_tiles.two_pass) and its
deterministic one (under genesis.use_deterministic_algorithms(True)). A second table times
bf16 attention under a key-padding mask (the last eighth of each sequence's keys hidden, as
in a padded batch; not causal), Genesis's fused kernels reading the mask beside torch's
memory-efficient kernel, and causal attention with dropout_p=0.1 (training a GPT with
dropout), beside torch's flash kernel.

    python benchmarks/attention.py [--json PATH] [--reps N]
    python benchmarks/attention.py --tiles [--dtype fp32] [--only forward|one_pass|two_pass]
        # Genesis's kernels under other tiles
    python benchmarks/attention.py --profile  # each side's kernels per bf16 forward + backward
"""

import argparse
import json

import numpy as np
import ops
import torch

import genesis
from genesis.backends.cuda.kernels import attention_launch

CASES = [  # (batch, heads, length, head dim)
    (8, 12, 1024, 64),
    (4, 16, 2048, 64),
    (4, 12, 1024, 128),
]
TRAIN_STEP_CASES = [(16, 4, 64, 32), (32, 6, 256, 64)]  # train_step.py's small and medium
FP32_CASES = TRAIN_STEP_CASES + [(4, 12, 1024, 128)]
DTYPES = {"bf16": (genesis.bfloat16, torch.bfloat16), "fp16": (genesis.float16, torch.float16),
          "fp32": (genesis.float32, torch.float32)}


def _step(lib, shape, dtype, rng, backward=True):
    """A closure running the forward (and backward) of causal attention on fresh inputs."""
    arrays = [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]
    q, k, v, grad = (lib.tensor(a).to(dtype) for a in arrays)
    for t in (q, k, v):
        t.requires_grad_(True)
    sdpa = lib.module.nn.functional.scaled_dot_product_attention

    def step():
        out = sdpa(q, k, v, is_causal=True)
        if backward:
            out.backward(grad)
    return step


def _variant_step(lib, shape, dtype, rng, variant):
    """A closure running forward and backward of attention under a key-padding mask or of
    causal attention with dropout."""
    b, _, t, _ = shape
    arrays = [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]
    q, k, v, grad = (lib.tensor(a).to(dtype) for a in arrays)
    for x in (q, k, v):
        x.requires_grad_(True)
    keep = np.arange(t) < t - t // 8
    kwargs = {"key padding": {"attn_mask": lib.tensor(np.broadcast_to(keep, (b, 1, 1, t)).copy())},
              "dropout 0.1": {"is_causal": True, "dropout_p": 0.1}}[variant]
    sdpa = lib.module.nn.functional.scaled_dot_product_attention

    def step():
        sdpa(q, k, v, **kwargs).backward(grad)
    return step


def run_variants(reps):
    """Rows of bf16 forward + backward ms under a key-padding mask and with dropout, Genesis
    beside torch."""
    ours, theirs = ops.Lib(genesis), ops.Lib(torch)
    rng = np.random.default_rng()
    rows = []
    for variant in ("key padding", "dropout 0.1"):
        for shape in CASES:
            genesis_ms = ops.device_ms(
                ours, _variant_step(ours, shape, genesis.bfloat16, rng, variant), reps)
            torch_ms = ops.device_ms(
                theirs, _variant_step(theirs, shape, torch.bfloat16, rng, variant), reps)
            rows.append({"shape": list(shape), "dtype": "bf16", "variant": variant,
                         "genesis_ms": genesis_ms, "torch_ms": torch_ms,
                         "ratio": genesis_ms / torch_ms})
    return rows


def profile(top=8):
    """Print each side's `top` kernels by device time per bf16 forward + backward, per case,
    from torch.profiler's CUPTI trace (benchmarks/gpt2.py's top_kernels): kernel time alone,
    without the gaps the events above also time."""
    from gpt2 import print_kernels, top_kernels
    rng = np.random.default_rng()
    for shape in CASES:
        for lib, dtype in ((ops.Lib(genesis), genesis.bfloat16), (ops.Lib(torch), torch.bfloat16)):
            step = _step(lib, shape, dtype, rng)
            for _ in range(3):
                step()
            total, kernels = top_kernels(step, top)
            print_kernels(f"{','.join(map(str, shape))} {lib.module.__name__}: {total:.3f} ms of "
                          "kernels", kernels)


def _tflops(shape, ms):
    b, h, t, d = shape
    return 14 * b * h * t * t * d / 2 / (ms * 1e-3) / 1e12


def _genesis_ms(lib, shape, dtype, rng, reps, deterministic):
    """Genesis's forward + backward ms with its default or its deterministic backward."""
    genesis.use_deterministic_algorithms(deterministic)
    try:
        return ops.device_ms(lib, _step(lib, shape, dtype, rng), reps)
    finally:
        genesis.use_deterministic_algorithms(False)


def run(reps):
    ours, theirs = ops.Lib(genesis), ops.Lib(torch)
    rng = np.random.default_rng()
    rows = []
    runs = [(shape, name) for shape in CASES for name in ("bf16", "fp16")]
    runs += [(shape, "fp32") for shape in FP32_CASES]
    for shape, name in runs:
        dtype, torch_dtype = DTYPES[name]
        one_pass, deterministic = (_genesis_ms(ours, shape, dtype, rng, reps, d)
                                   for d in (False, True))
        torch_ms = ops.device_ms(theirs, _step(theirs, shape, torch_dtype, rng), reps)
        rows.append({"shape": list(shape), "dtype": name, "genesis_ms": one_pass,
                     "genesis_deterministic_ms": deterministic, "torch_ms": torch_ms,
                     "genesis_tflops": _tflops(shape, one_pass),
                     "torch_tflops": _tflops(shape, torch_ms), "ratio": one_pass / torch_ms,
                     "deterministic_ratio": deterministic / torch_ms})
    return rows


# Tile choices to compare, by kernel: forward (BM, BN, warps, stages); the two-pass
# (deterministic) and the one-pass backward (BLOCK keys, STEP queries, warps, stages; STEP |
# BLOCK). The one-pass dK/dV kernel holds two BLOCK x D float32 accumulators (dK, dV) and a
# STEP x D one for each dS K it adds to dQ; it runs for float32 at head dims up to 64 only
# (attention_tiles.two_pass).
TILES = {
    "bf16": {"forward": [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3),
                         (64, 64, 4, 4), (128, 32, 4, 3), (64, 32, 4, 3)],
             "two_pass": [(64, 64, 4, 2), (64, 64, 4, 3), (64, 32, 4, 3), (128, 32, 4, 2),
                          (128, 32, 4, 3), (128, 64, 8, 2), (128, 32, 8, 3), (128, 64, 4, 2)]},
    "fp32": {"forward": [(64, 64, 4, 3), (64, 64, 4, 2), (64, 64, 8, 2), (64, 32, 4, 2),
                         (64, 32, 8, 2), (128, 64, 8, 3), (32, 32, 4, 2)],
             "two_pass": [(64, 64, 4, 2), (64, 64, 8, 2), (32, 32, 4, 2), (32, 32, 8, 2),
                          (16, 16, 4, 2)],
             "one_pass": [(64, 64, 4, 2), (64, 64, 8, 2), (64, 32, 4, 2), (64, 32, 8, 2),
                          (32, 32, 4, 2), (32, 32, 8, 2), (32, 16, 4, 2), (16, 16, 4, 2)]},
}
_SLOTS = {"forward": 1, "two_pass": 2, "one_pass": 3}  # positions in attention_launch.tiles's tuple


def _with_tile(chosen, kernel, tile):
    """attention_launch.tiles with `tile` in `kernel`'s place."""
    def tiles(dtype, head_dim, tf32):
        picked = list(chosen(dtype, head_dim, tf32))
        picked[_SLOTS[kernel]] = tile
        return tuple(picked)
    return tiles


def sweep_tiles(reps, dtype_name, only=None):
    """Forward ms under each forward tile, and forward+backward ms under each tile of each
    backward (the deterministic one for "two_pass"), the other tiles as chosen."""
    chosen, rng, lib = attention_launch.tiles, np.random.default_rng(), ops.Lib(genesis)
    dtype = DTYPES[dtype_name][0]
    kernels = [only] if only else [k for k in _SLOTS if k in TILES[dtype_name]]
    for shape in CASES if dtype_name != "fp32" else FP32_CASES:
        fwd, step = (_step(lib, shape, dtype, rng, b) for b in (False, True))
        for kernel in kernels:
            for tile in TILES[dtype_name].get(kernel, ()):
                attention_launch.tiles = _with_tile(chosen, kernel, tile)
                attention_launch._plans.clear()
                genesis.use_deterministic_algorithms(kernel == "two_pass")
                label = f"{','.join(map(str, shape)):<18}{kernel:<10}{str(tile):<18}"
                try:
                    ms = ops.device_ms(lib, fwd if kernel == "forward" else step, reps)
                except Exception as e:  # e.g. more shared memory than the GPU has
                    print(f"{label}does not run: {str(e).splitlines()[0][:80]}")
                    continue
                finally:
                    genesis.use_deterministic_algorithms(False)
                print(f"{label}{'forward' if kernel == 'forward' else 'both'} {ms:.3f} ms")
    attention_launch.tiles = chosen
    attention_launch._plans.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--tiles", action="store_true", help="sweep the kernels' tiles")
    parser.add_argument("--profile", action="store_true", help="list each side's kernels")
    parser.add_argument("--dtype", choices=sorted(TILES), default="bf16",
                        help="the dtype whose tiles --tiles sweeps")
    parser.add_argument("--only", choices=list(_SLOTS),
                        help="sweep only this kernel's tiles (default: all three)")
    args = parser.parse_args()
    if args.tiles:
        sweep_tiles(args.reps, args.dtype, args.only)
        return
    if args.profile:
        profile()
        return
    rows = run(args.reps)
    print(f"{'B,H,T,D':<18}{'dtype':>6}{'genesis ms':>12}{'determ. ms':>12}{'torch ms':>10}"
          f"{'genesis TF/s':>14}{'torch TF/s':>12}{'ratio':>8}{'determ. ratio':>15}")
    for r in rows:
        print(f"{','.join(map(str, r['shape'])):<18}{r['dtype']:>6}{r['genesis_ms']:>12.3f}"
              f"{r['genesis_deterministic_ms']:>12.3f}{r['torch_ms']:>10.3f}"
              f"{r['genesis_tflops']:>14.1f}{r['torch_tflops']:>12.1f}{r['ratio']:>8.2f}"
              f"{r['deterministic_ratio']:>15.2f}")
    variants = run_variants(args.reps)
    print(f"\nbf16, forward + backward\n{'B,H,T,D':<18}{'variant':>12}{'genesis ms':>12}"
          f"{'torch ms':>10}{'ratio':>8}")
    for r in variants:
        print(f"{','.join(map(str, r['shape'])):<18}{r['variant']:>12}{r['genesis_ms']:>12.3f}"
              f"{r['torch_ms']:>10.3f}{r['ratio']:>8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows + variants, f, indent=1)


if __name__ == "__main__":
    main()
