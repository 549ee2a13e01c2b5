"""The flags fused attention's dropout keeps, drawn by Philox counter inside the kernels.

Element (plane b, query i, key j) of the (planes, L, S) probabilities reads 16-bit half
j % 2 (the low one first) of word (j % 8) // 2 of counter start + (b * L + i) * ceil(S / 8)
+ j // 8 (`randint4x`: four 32-bit words a counter), and is kept when that half, as a fraction
of 2**16, is at least p. Any tile of a plane, read either way, draws the same bits, so the
forward (kernels/attention.py) and either backward drop the same probabilities without storing
them; backends/cpu/philox.py draws them on the host. One counter serves eight keys: the Philox
rounds are the cost: a bf16 forward + backward at B=4 H=16 T=2048 D=64 on an H200 took 2.01
ms with a counter a key, 1.21 with four keys a counter, and 1.09 (another call) with eight.
Sixteen bits resolve p to 2**-16 (torch's flash kernel draws 8).

`attention_dropout_mask` writes the flags out, for the gradients of gradients and tests.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import cdiv
from .random import philox_args, philox_start


@triton.jit
def dropout_keep(key, start, plane, L, S, rows, n0, p, BM: tl.constexpr, BN: tl.constexpr):
    """Which of the (BM, BN) probabilities of queries `rows` x keys n0..n0+BN (n0 a multiple
    of 8) of plane `plane` dropout keeps (the module docstring's layout), from Philox key
    `key` and first counter `start`."""
    groups = (S + 7) // 8
    g = n0 // 8 + tl.arange(0, BN // 8)
    counter = start + (plane.to(tl.int64) * L + rows)[:, None] * groups + g[None, :]
    w0, w1, w2, w3 = tl.randint4x(key, counter)
    low = tl.join(tl.join(w0 & 0xFFFF, w2 & 0xFFFF), tl.join(w1 & 0xFFFF, w3 & 0xFFFF))
    high = tl.join(tl.join(w0 >> 16, w2 >> 16), tl.join(w1 >> 16, w3 >> 16))
    halves = tl.reshape(tl.join(low, high), (BM, BN))  # key 8g + 2w + h: half h of word w
    return halves.to(tl.float32) * (1.0 / (1 << 16)) >= p


@triton.jit
def _dropout_mask_kernel(
        # pointers: the (planes, L, S) bool keep flags; the device's [seed, base offset]
        keep_ptr, rng_state_ptr,
        # dropout's probability, the Philox seed and first counter, whether to read the seed
        # and base offset from rng_state_ptr (1 in a CUDA graph)
        dropout_p, seed, offset, seed_in_memory,
        # sizes: query rows, key rows, key blocks
        q_len, k_len, n_key_blocks,
        # meta-parameters
        BM: tl.constexpr, BN: tl.constexpr):
    """The flags dropout_keep gives for queries and keys of block pid0 (query block
    pid0 // n_key_blocks, key block pid0 % n_key_blocks) of plane pid1."""
    rows = (tl.program_id(0) // n_key_blocks) * BM + tl.arange(0, BM)
    n0 = (tl.program_id(0) % n_key_blocks) * BN
    n = n0 + tl.arange(0, BN)
    bh = tl.program_id(1)
    key, start = philox_start(seed, offset, rng_state_ptr, seed_in_memory)
    keep = dropout_keep(key, start, bh, q_len, k_len, rows, n0, dropout_p, BM, BN)
    row_start = (bh.to(tl.int64) * q_len + rows) * k_len
    tl.store(keep_ptr + row_start[:, None] + n[None, :], keep,
             mask=(rows < q_len)[:, None] & (n < k_len)[None, :])


MASK_TILE = (32, 64)
"""The mask kernel's (BM queries, BN keys): any tile draws the same flags; 64 keys make 8
Philox counters a row."""


def mask_launch(planes, q_len, k_len, device, target=None):
    """The Launch of _dropout_mask_kernel over `planes` (L, S) planes."""
    bm, bn = MASK_TILE
    return Launch(_dropout_mask_kernel, (cdiv(q_len, bm) * cdiv(k_len, bn), planes),
                  dict(BM=bm, BN=bn), 4, 1, types={"seed": "i64", "offset": "i64"},
                  per_call=("dropout_p", "seed", "offset", "rng_state_ptr", "seed_in_memory"),
                  device=device, target=target)


_launches = LaunchCache()


@register("attention_dropout_mask", "cuda")
def attention_dropout_mask(shape, dropout_p, seed, offset, device_index):
    """The (..., L, S) bool flags that fused attention's dropout keeps for the draw (p, seed,
    offset; the seed a device array in a CUDA graph): a new array."""
    activate(device_index)
    stream = current_stream_handle(device_index)
    keep = CUDAArray.empty(tuple(shape), np.bool_, device_index, stream)
    if keep.size == 0:
        return keep
    q_len, k_len = shape[-2], shape[-1]
    planes = keep.size // (q_len * k_len)
    launch = _launches.get_or_build((planes, q_len, k_len, device_index),
                                    lambda: mask_launch(planes, q_len, k_len, device_index))
    seed_, offset_, state, in_memory = philox_args(seed, offset, device_index)
    launch(stream,
           # pointers
           keep, state,
           # dropout's probability, the Philox seed and first counter, where the seed is
           dropout_p, seed_, offset_, in_memory,
           # sizes
           q_len, k_len, cdiv(k_len, MASK_TILE[1]))
    return keep
