"""The fused attention kernels' tiles (sm_90) and the choices that go with them: which backward
form runs and in which order the programs start. Each table holds the timings it was chosen by
(`benchmarks/attention.py --tiles`). The kernels read their operands through pointer loads:
TMA descriptors, tried with each tile, cut registers but no tile ran faster (benchmarks/README).
"""

import numpy as np

from ._strided_indexing import next_pow2

HALF = (np.dtype(np.float16), np.dtype("bfloat16"))


FP32_TILES = {32: ((64, 64, 4, 2), (64, 64, 4, 2), (64, 32, 4, 2)),
              64: ((64, 64, 4, 2), (32, 32, 4, 2), (32, 32, 4, 2)),
              128: ((32, 32, 4, 2), (32, 32, 4, 2), None)}
"""float32 tiles by head tile (16 takes 32's): (forward BM, BN, warps, stages), (two-pass
backward BLOCK, STEP, warps, stages), (one-pass backward, the same; none at D=128, where the
backward is two-pass, two_pass). Measured on an H200 (causal, `attention.py --tiles
--dtype fp32`), forward and forward + two-pass backward: B=16
H=4 T=64 D=32 0.008 and 0.111 ms (torch 0.15 together); B=32 H=6 T=256 D=64 0.073 ms with
64 x 64 tiles (32 x 32: 0.075, 64 x 64 with 8 warps: 0.116), and 0.373 ms with 32 x 32 backward
tiles against 0.458 with 64 x 64 (torch 0.384); B=4 H=12 T=1024 D=128 0.390 ms forward with
32 x 32 against 0.563 with 64 x 64. At D=128 tiles of 64 x 64 need more than the 227 KB of
shared memory with 3 stages (forward) or 2 (backward). The one-pass tiles, not yet timed, are
the two-pass ones but at D=32, where 64 x 64 spills 436 bytes a thread (ptxas, sm_90a) and
64 x 32 none; TF32 x3 products take about three times the registers, and at D=128 every tile
tried spills (the two-pass 32 x 32 too)."""


HALF_FORWARD_TILES = {16: (64, 64, 4, 3), 32: (64, 64, 4, 3), 64: (64, 64, 4, 3),
                      128: (64, 32, 4, 3)}
"""The forward's half-type tiles by head tile: (BM queries, BN keys, warps, stages). Measured
on an H200 (bf16, causal, `attention.py --tiles --only forward`), ms: B=8 H=12 T=1024 D=64
0.056 with 64 x 64 (4 warps, 3 stages), against 0.060 with 4 stages and 0.070-0.085 with
128-query tiles; B=4 H=12 T=1024 D=128 0.059 with 64 x 32, against 0.067 with 64 x 64, 0.066
with 128 x 64 and 8 warps, 0.069 with 128 x 128 (torch 0.042)."""


HALF_TWO_PASS_TILES = {16: (64, 64, 4, 3), 32: (64, 64, 4, 3), 64: (64, 64, 4, 3),
                       128: (64, 64, 4, 2)}
"""The two-pass backward's half-type tiles by head tile: (BLOCK, STEP, warps, stages), the
dK/dV kernel holding BLOCK keys and walking the queries STEP at a time, the dQ kernel the
other way round. Alternated three times in one process on an H200 (bf16, causal, forward +
backward ms): B=8 H=12 T=1024 D=64 0.251-0.256 in 3 stages against 0.263-0.287 in 2 (64 x 32
in 3: 0.253-0.260; torch 0.233-0.268); B=4 H=16 T=2048 D=64 0.498-0.501 against 0.522-0.523
(torch 0.435). B=4 H=12 T=1024 D=128, rounds 2-5 of five: 0.256-0.258 in 2 stages, 0.295-0.296
in 3; 64 x 32 in 3 stages 0.254-0.256, 128 x 64 with 8 warps 0.291-0.292, 128 x 32 with 8 warps
0.293-0.295, 64 x 64 with 8 warps 0.374-0.376 (torch 0.207-0.209)."""


def tiles(dtype, head_dim, tf32):
    """(head tile, (forward BM, BN, warps, stages), (two-pass backward BLOCK, STEP, warps,
    stages), (one-pass backward, the same; None where it never runs, see two_pass),
    precision); see attention.py's docstring. The forward needs BN | BM, the backward STEP |
    BLOCK: the dK/dV kernel holds BLOCK keys and walks the queries STEP at a time, the dQ
    kernel holds BLOCK queries and walks the keys STEP at a time."""
    bd = next_pow2(head_dim)
    if np.dtype(dtype) in HALF:
        return bd, HALF_FORWARD_TILES[bd], HALF_TWO_PASS_TILES[bd], None, "tf32"
    forward, two_pass, one_pass = FP32_TILES[max(bd, 32)]
    return bd, forward, two_pass, one_pass, "tf32" if tf32 else "tf32x3"


def longest_first(dtype, dropout):
    """Whether the kernels start the longest-working blocks first (attention.py's Order)."""
    return np.dtype(dtype) not in HALF or dropout is not None


def two_pass(dtype, head_dim, deterministic):
    """Whether the backward runs in two passes: under deterministic algorithms, and for half
    types and head dims over 64, where it is also the faster. On an H200 (attention.py, bf16,
    causal, three runs, ms two-pass / one-pass): B=8 H=12 T=1024 D=64 0.260 / 0.267-0.269,
    B=4 H=16 T=2048 D=64 0.520 / 0.543-0.546, B=4 H=12 T=1024 D=128 0.256-0.259 /
    0.317-0.319; float32 D=128 1.915 / 2.18. float32 at D <= 64 keeps the one-pass form
    (B=32 H=6 T=256 D=64: 0.292 / 0.327 in two runs of three). Adding dQ by one TMA bulk
    reduction a block (a descriptor's atomic_add) instead of element atomics did not change
    that (H200, 2026-11-28, ms, each form's best tile in one round): bf16 one-pass 0.263
    against two-pass 0.253 at B=8 H=12 T=1024 D=64, 0.526 against 0.498 at B=4 H=16 T=2048
    D=64, 0.309 against 0.258 at D=128; float32 (three alternated rounds) B=32 H=6 T=256
    D=64 0.414-0.418 against element atomics' 0.264-0.404, B=4 H=12 T=1024 D=64 0.651-0.655
    against 0.686-0.692."""
    return (deterministic or np.dtype(dtype) in HALF
            or next_pow2(head_dim) > 64)
