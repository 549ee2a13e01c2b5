"""Causal self-attention forward + backward on the GPU, Genesis's fused FlashAttention kernels
beside torch's scaled_dot_product_attention, in one run.

Shapes are GPT-2 small and medium heads at training lengths in bf16 and fp16, and the heads of
benchmarks/train_step.py's float32 models; each case times one forward and one backward (the
gradient of every input) by CUDA events behind an L2 flush (ops.device_ms) and reports ms,
TFLOP/s (4 B H T^2 D flops forward and 10 backward, halved for the causal mask) and the
Genesis/torch ratio of times.

    python benchmarks/attention.py [--json PATH] [--reps N]
    python benchmarks/attention.py --tiles [--dtype fp32]   # Genesis's kernels under other tiles
"""

import argparse
import json

import numpy as np
import ops
import torch

import genesis
from genesis.backends.cuda.kernels import attention

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


def _tflops(shape, ms):
    b, h, t, d = shape
    return 14 * b * h * t * t * d / 2 / (ms * 1e-3) / 1e12


def run(reps):
    libs = {"genesis": ops.Lib(genesis), "torch": ops.Lib(torch)}
    rng = np.random.default_rng()
    rows = []
    runs = [(shape, name) for shape in CASES for name in ("bf16", "fp16")]
    runs += [(shape, "fp32") for shape in FP32_CASES]
    for shape, name in runs:
        ms = {lib_name: ops.device_ms(lib, _step(lib, shape, dtype, rng), reps)
              for (lib_name, lib), dtype in zip(libs.items(), DTYPES[name])}
        rows.append({"shape": list(shape), "dtype": name, "genesis_ms": ms["genesis"],
                     "torch_ms": ms["torch"], "genesis_tflops": _tflops(shape, ms["genesis"]),
                     "torch_tflops": _tflops(shape, ms["torch"]),
                     "ratio": ms["genesis"] / ms["torch"]})
    return rows


# Tile choices to compare: forward (BM, BN, warps, stages), backward (BLOCK, STEP, warps,
# stages).
TILES = {
    "bf16": ([(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (64, 64, 4, 4),
              (128, 32, 4, 3), (64, 32, 4, 3)],
             [(64, 64, 4, 2), (64, 64, 4, 3), (64, 32, 4, 3), (128, 32, 4, 2), (128, 32, 4, 3),
              (128, 64, 8, 2), (128, 32, 8, 3), (128, 64, 4, 2)]),
    "fp32": ([(64, 64, 4, 3), (64, 64, 4, 2), (64, 64, 8, 2), (64, 32, 4, 2), (64, 32, 8, 2),
              (128, 64, 8, 3), (32, 32, 4, 2)],
             [(64, 64, 4, 2), (64, 64, 8, 2), (32, 32, 4, 2), (32, 32, 8, 2), (16, 16, 4, 2)]),
}


def sweep_tiles(reps, dtype_name):
    """Forward and forward+backward ms of the dtype's cases under each forward tile (the
    backward's as chosen) and each backward tile (the forward's as chosen)."""
    chosen, rng, lib = attention._tiles, np.random.default_rng(), ops.Lib(genesis)
    dtype = DTYPES[dtype_name][0]
    forward_tiles, backward_tiles = TILES[dtype_name]
    for shape in CASES if dtype_name != "fp32" else FP32_CASES:
        fwd, step = (_step(lib, shape, dtype, rng, b) for b in (False, True))
        for forward, backward in ([(f, None) for f in forward_tiles]
                                  + [(None, b) for b in backward_tiles]):
            def tiles(dtype, head_dim, tf32, forward=forward, backward=backward):
                bd, f, b, precision = chosen(dtype, head_dim, tf32)
                return bd, forward or f, backward or b, precision
            attention._tiles = tiles
            attention._plans.clear()
            label = (f"{','.join(map(str, shape)):<18}forward {str(forward or '-'):<18}backward "
                     f"{str(backward or '-'):<14}")
            try:
                f_ms, s_ms = ops.device_ms(lib, fwd, reps), ops.device_ms(lib, step, reps)
            except Exception as e:  # e.g. more shared memory than the GPU has (OutOfResources)
                print(f"{label}does not run: {str(e).splitlines()[0][:80]}")
                continue
            print(f"{label}forward {f_ms:.3f} ms, both {s_ms:.3f} ms")
    attention._tiles = chosen
    attention._plans.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--tiles", action="store_true", help="sweep the kernels' tiles")
    parser.add_argument("--dtype", choices=sorted(TILES), default="bf16",
                        help="the dtype whose tiles --tiles sweeps")
    args = parser.parse_args()
    if args.tiles:
        sweep_tiles(args.reps, args.dtype)
        return
    rows = run(args.reps)
    print(f"{'B,H,T,D':<18}{'dtype':>6}{'genesis ms':>12}{'torch ms':>10}{'genesis TF/s':>14}"
          f"{'torch TF/s':>12}{'time ratio':>12}")
    for r in rows:
        print(f"{','.join(map(str, r['shape'])):<18}{r['dtype']:>6}{r['genesis_ms']:>12.3f}"
              f"{r['torch_ms']:>10.3f}{r['genesis_tflops']:>14.1f}{r['torch_tflops']:>12.1f}"
              f"{r['ratio']:>12.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
