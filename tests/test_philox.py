"""The CPU's Philox4x32-10 (backends/cpu/philox.py), which lets the CPU kernels draw the bits
the CUDA kernels draw: Random123's known answers, and the flags of fused attention's dropout."""

import pytest

from genesis.backends.cpu.philox import attention_dropout_keep, philox4x32_10, randint4x

# Random123's kat_vectors for philox4x32_10: (counter words, key words) -> output words
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS, ids=str)
def test_known_answers(counter, key, expected):
    assert tuple(int(w) for w in philox4x32_10(*counter, *key)) == expected


def test_randint4x_splits_seed_and_counter_into_words():
    seed, counter = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    words = randint4x(seed, [counter])
    expected = philox4x32_10(counter & 0xFFFFFFFF, counter >> 32, 0, 0, seed & 0xFFFFFFFF,
                             seed >> 32)
    assert [int(w[0]) for w in words] == [int(w) for w in expected]


def test_attention_dropout_flags_layout_and_rate():
    """Eight keys share a counter (a 16-bit half of a word each, low half first), rows take
    consecutive runs of counters, a later offset continues the stream, and about 1 - p of the
    flags are kept."""
    keep = attention_dropout_keep(7, 40, planes=3, rows=50, keys=70, p=0.3)
    assert keep.shape == (3, 50, 70)
    groups = 9  # ceil(70 / 8)
    words = randint4x(7, 40 + (2 * 50 + 9) * groups + 2)  # plane 2, row 9, keys 16..23
    halves = [int(w) >> shift & 0xFFFF for w in words for shift in (0, 16)]
    flags = [h / 2 ** 16 >= 0.3 for h in halves]
    assert list(keep[2, 9, 16:24]) == flags
    shifted = attention_dropout_keep(7, 40 + groups, planes=1, rows=1, keys=70, p=0.3)
    assert (shifted[0, 0] == keep[0, 1]).all()
    big = attention_dropout_keep(11, 0, planes=4, rows=256, keys=256, p=0.3)
    assert abs(big.mean() - 0.7) < 0.005
