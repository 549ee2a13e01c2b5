"""Philox4x32-10 in numpy: the counter-based generator the CUDA kernels draw from (Triton's
`tl.randint4x`), so that the CPU kernels of a contract that names (seed, offset) draw the same
bits as the GPU's.

Key: the 64-bit seed as (low, high) 32-bit words. Counter: the 64-bit offset as its (low, high)
words, then two zero words. Ten rounds, each two 32 x 32 -> 64-bit products whose halves are
mixed with the other words and the key, the key bumped by the Weyl constants in between.
"""

import numpy as np

_KEY_A, _KEY_B = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_ROUND_A, _ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def randint4x(seed, counters):
    """The four uint32 words of Philox4x32-10 for each uint64 counter under `seed`."""
    counters = np.asarray(counters, dtype=np.uint64)
    zeros = np.zeros_like(counters)
    seed = int(seed) % (1 << 64)
    return philox4x32_10(counters & _LOW, counters >> _32, zeros, zeros, seed & 0xFFFFFFFF,
                         seed >> 32)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter words (c0, c1, c2, c3) under the key words (k0, k1), as
    uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in (c0, c1, c2, c3))
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        hi_b, lo_b = _mul_wide(_ROUND_B, c2)
        hi_a, lo_a = _mul_wide(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + _KEY_A) & _LOW, (k1 + _KEY_B) & _LOW
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def _mul_wide(a, b):
    """(high, low) 32-bit halves of the 64-bit products a * b of 32-bit words."""
    product = a * b
    return product >> _32, product & _LOW


def attention_dropout_keep(seed, offset, planes, rows, keys, p):
    """Which probabilities fused attention keeps under dropout `p`, as a (planes, rows, keys)
    bool array: element (b, i, j) reads 16-bit half j % 2 (the low one first) of word
    (j % 8) // 2 of counter offset + (b * rows + i) * ceil(keys / 8) + j // 8, and is kept when
    that half, as a fraction of 2**16, is at least p (kernels/attention_dropout.py's layout)."""
    groups = -(-keys // 8)
    j = np.arange(keys, dtype=np.uint64)
    row = np.arange(planes * rows, dtype=np.uint64).reshape(planes, rows, 1)
    counters = np.uint64(offset) + row * np.uint64(groups) + j // np.uint64(8)
    words = np.stack(randint4x(seed, counters), axis=-1)
    word = np.take_along_axis(words, ((j % np.uint64(8)) // np.uint64(2)).astype(np.intp)
                              [None, None, :, None], axis=-1)[..., 0]
    half = (word >> (np.uint32(16) * (j % np.uint64(2)).astype(np.uint32))) & np.uint32(0xFFFF)
    return half.astype(np.float32) * np.float32(2.0 ** -16) >= np.float32(p)
