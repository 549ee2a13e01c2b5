"""Causal self-attention forward + backward on the GPU, Genesis's fused FlashAttention kernels
beside torch's scaled_dot_product_attention, in one run.

Shapes are GPT-2 small and medium heads at training lengths; each case times one forward and
one backward (the gradient of every input) by CUDA events behind an L2 flush (ops.device_ms)
and reports ms, TFLOP/s (4 B H T^2 D flops forward and 10 backward, halved for the causal
mask) and the Genesis/torch ratio of times.

    python benchmarks/attention.py [--json PATH] [--reps N]
    python benchmarks/attention.py --tiles   # Genesis's bf16 kernels under other tile choices
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
DTYPES = {"bf16": (genesis.bfloat16, torch.bfloat16), "fp16": (genesis.float16, torch.float16)}


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
    for shape in CASES:
        for name, dtypes in DTYPES.items():
            ms = {lib_name: ops.device_ms(lib, _step(lib, shape, dtype, rng), reps)
                  for (lib_name, lib), dtype in zip(libs.items(), dtypes)}
            rows.append({"shape": list(shape), "dtype": name, "genesis_ms": ms["genesis"],
                         "torch_ms": ms["torch"],
                         "genesis_tflops": _tflops(shape, ms["genesis"]),
                         "torch_tflops": _tflops(shape, ms["torch"]),
                         "ratio": ms["genesis"] / ms["torch"]})
    return rows


# Tile choices to compare: forward (BM, BN, warps, stages), backward (BM = BN, warps).
FORWARD_TILES = [(128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3), (64, 32, 4, 3)]
BACKWARD_TILES = [(64, 64, 4), (64, 64, 8), (32, 32, 4), (128, 128, 8)]


def sweep_tiles(reps):
    """Forward and forward+backward ms of the bf16 cases under each forward tile (the backward's
    as chosen) and each backward tile (the forward's as chosen)."""
    chosen, rng, lib = attention._tiles, np.random.default_rng(), ops.Lib(genesis)
    for shape in CASES:
        fwd, step = (_step(lib, shape, genesis.bfloat16, rng, b) for b in (False, True))
        for forward, backward in ([(f, None) for f in FORWARD_TILES]
                                  + [(None, b) for b in BACKWARD_TILES]):
            def tiles(dtype, head_dim, tf32, forward=forward, backward=backward):
                bd, f, b, precision, split = chosen(dtype, head_dim, tf32)
                return bd, forward or f, backward or b, precision, split
            attention._tiles = tiles
            attention._recipes.clear()
            f_ms, s_ms = ops.device_ms(lib, fwd, reps), ops.device_ms(lib, step, reps)
            print(f"{','.join(map(str, shape)):<18}forward {str(forward or '-'):<18}backward "
                  f"{str(backward or '-'):<14}forward {f_ms:.3f} ms, both {s_ms:.3f} ms")
    attention._tiles = chosen
    attention._recipes.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--tiles", action="store_true", help="sweep the bf16 kernels' tiles")
    args = parser.parse_args()
    if args.tiles:
        sweep_tiles(args.reps)
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
