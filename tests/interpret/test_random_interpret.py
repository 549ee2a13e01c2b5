"""The Philox kernels (backends/cuda/kernels/random.py) bit for bit against a numpy reference of
Philox4x32-10 and of the documented counter layout, on the CPU through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_random_interpret.py`.
The reference itself is checked against Random123's known-answer vectors (runs everywhere).
Uniform, integer, bernoulli and dropout values must match exactly; normal and exponential values
to float rounding (libdevice is stood in for by numpy in the interpreter).
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

from genesis.backends.cuda.kernels import random as rnd

BF16 = np.dtype(ml_dtypes.bfloat16)
HALF = [np.dtype(np.float16), BF16]
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)] + HALF
SIZES = [1, 7, 1024, 2500]
_M32 = np.uint64(0xFFFFFFFF)


def philox4x32(c0, c1, c2, c3, k0, k1, rounds=10):
    """Philox4x32 (Salmon et al. 2011) on uint64 arrays holding 32-bit words."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(v, np.uint64) for v in (c0, c1, c2, c3, k0, k1))
    for _ in range(rounds):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _M32, \
            (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _M32
        k0 = (k0 + np.uint64(0x9E3779B9)) & _M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & _M32
    return c0, c1, c2, c3


def test_reference_matches_random123_known_answers():
    f = 0xFFFFFFFF
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((f, f, f, f), (f, f), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, expected in cases:
        assert tuple(int(w) for w in philox4x32(*counter, *key)) == expected


def layout(n, wide):
    """(counter index, first word) of each element: the module docstring's layout."""
    per = 2 if wide else 4
    q = rnd.BLOCK // per
    e = np.arange(n)
    r = e % rnd.BLOCK
    return (e // rnd.BLOCK) * q + r % q, (r // q) * (4 // per)


def test_an_element_never_uses_a_counter_beyond_its_index():
    for wide in (False, True):
        for n in (1, 5, 300, 1024, 4097):
            counters, _ = layout(n, wide)
            assert np.all(counters <= np.arange(n))


def words(n, seed, offset, wide):
    """The words each element's value is made from: (n,) or (n, 2) uint64."""
    counters, first = layout(n, wide)
    counter = np.uint64(offset) + counters.astype(np.uint64)
    out = np.stack(philox4x32(counter & _M32, counter >> np.uint64(32), 0, 0, seed & 0xFFFFFFFF,
                              seed >> 32), axis=1)
    rows = np.arange(n)
    return np.stack([out[rows, first], out[rows, first + 1]], axis=1) if wide else out[rows, first]


def unit(w, wide, digits=24):
    if wide:
        return (((w[:, 0] << np.uint64(21)) | (w[:, 1] >> np.uint64(11))).astype(np.float64)
                * 2.0 ** -53)
    return (w >> np.uint64(32 - digits)).astype(np.float32) * np.float32(2.0 ** -digits)


def open_unit(w, wide):
    if wide:
        return unit(w, True) + 2.0 ** -54
    return w.astype(np.float32) * np.float32(2.0 ** -32) + np.float32(2.0 ** -33)


def compute_type(dtype):
    return np.float64 if dtype == np.float64 else np.float32


@pytest.fixture
def gpu():
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    with ti.device(rnd):
        yield


def draw_args(rng):
    return int(rng.integers(0, 2 ** 64, dtype=np.uint64)), int(rng.integers(0, 2 ** 40))


def empty(shape, dtype):
    return ti.to_device(np.zeros(shape, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-1.5, 2.25)])
def test_uniform_bits(gpu, rng, dtype, n, low, high):
    seed, offset = draw_args(rng)
    out = rnd.uniform_(empty((n,), dtype), low, high, seed, offset)
    ct = compute_type(dtype)
    digits = ml_dtypes.finfo(dtype).nmant + 1 if dtype.itemsize == 2 else 24
    u = unit(words(n, seed, offset, dtype == np.float64), dtype == np.float64, digits)
    expected = (ct(low) + (ct(high) - ct(low)) * u.astype(ct)).astype(dtype)
    expected[expected == dtype.type(high)] = dtype.type(low)
    np.testing.assert_array_equal(ti.to_host(out), expected)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)])
def test_normal_values(gpu, rng, dtype):
    seed, offset = draw_args(rng)
    n = 2500
    out = rnd.normal_(empty((n,), dtype), 0.5, 2.0, seed, offset)
    wide = dtype == np.float64
    w = words(n, seed, offset, wide)
    # the Box-Muller pair of element e is (e, partner) with first words 2k and 2k + 1
    per = 2 if wide else 4
    q = rnd.BLOCK // per
    e = np.arange(n)
    k = (e % rnd.BLOCK) // q
    cos_side = k % 2 == 0
    partner = np.where(cos_side, e + q, e - q)
    block_end = np.minimum((e // rnd.BLOCK + 1) * rnd.BLOCK, n)
    valid = partner < block_end
    first = np.where(cos_side, e, partner)[valid]
    second = np.where(cos_side, partner, e)[valid]
    full = words(int(max(e.max(), partner.max())) + 1, seed, offset, wide)
    r = np.sqrt(-2.0 * np.log(open_unit(full[first], wide).astype(np.float64)))
    theta = 2 * np.pi * unit(full[second], wide).astype(np.float64)
    z = np.where(cos_side[valid], r * np.cos(theta), r * np.sin(theta))
    assert w.shape[0] == n
    tol = 1e-12 if wide else 2e-5
    np.testing.assert_allclose(ti.to_host(out)[valid], 0.5 + 2.0 * z, rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)] + HALF)
def test_exponential_values(gpu, rng, dtype):
    seed, offset = draw_args(rng)
    n = 1500
    out = rnd.exponential_(empty((n,), dtype), 2.5, seed, offset)
    wide = dtype == np.float64
    expected = (-np.log(open_unit(words(n, seed, offset, wide), wide).astype(np.float64)) / 2.5)
    tol = 1e-12 if wide else (2e-5 if dtype == np.float32 else float(ml_dtypes.finfo(dtype).eps))
    np.testing.assert_allclose(ti.to_host(out).astype(np.float64), expected, rtol=tol, atol=tol)


def umul_hi(words_, span):
    x = (words_[:, 0] << np.uint64(32)) | words_[:, 1]
    return np.array([(int(v) * span) >> 64 for v in x], dtype=object)


@pytest.mark.parametrize("low,high,dtype", [
    (0, 10, np.int64), (-7, 5, np.int32), (-2 ** 40, 2 ** 41 + 3, np.int64),
    (-2 ** 63, 2 ** 63 - 1, np.int64), (0, 256, np.uint8), (0, 2, np.bool_),
    (-100, 100, np.float32), (0, 2 ** 24 + 1, np.float32), (-50, 2 ** 11 + 1, np.float16),
    (0, 2 ** 8 + 1, BF16)])
@pytest.mark.parametrize("n", [5, 2500])
def test_random_integers(gpu, rng, low, high, dtype, n):
    seed, offset = draw_args(rng)
    out = rnd.random_(empty((n,), dtype), low, high, seed, offset)
    values = low + umul_hi(words(n, seed, offset, True), high - low)
    expected = np.array([int(v) for v in values], dtype=object)
    if np.dtype(dtype).kind == "f":
        expected = expected.astype(np.float64)
    np.testing.assert_array_equal(ti.to_host(out), expected.astype(dtype))


@pytest.mark.parametrize("p_dtype", [np.dtype(np.float32), np.dtype(np.float64), BF16])
def test_bernoulli_tensor_probabilities(gpu, rng, p_dtype):
    seed, offset = draw_args(rng)
    probs = rng.random((40, 37)).astype(p_dtype)
    p_dev = ti.to_device(probs, transpose=True)
    out = rnd.bernoulli_(empty(probs.shape, np.float32), p_dev, seed, offset)
    wide = p_dtype == np.float64
    u = unit(words(probs.size, seed, offset, wide), wide).reshape(probs.shape)
    ct = compute_type(p_dtype)
    expected = (u.astype(ct) < probs.astype(ct)).astype(np.float32)
    np.testing.assert_array_equal(ti.to_host(out), expected)


def test_bernoulli_expanded_probabilities(gpu, rng):
    seed, offset = draw_args(rng)
    row = rng.random(33).astype(np.float32)
    p_dev = ti.view(ti.to_device(row), (20, 33), (0, 1))
    out = rnd.bernoulli_(empty((20, 33), np.bool_), p_dev, seed, offset)
    u = unit(words(20 * 33, seed, offset, False), False).reshape(20, 33)
    np.testing.assert_array_equal(ti.to_host(out), u < row[None, :])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.uint8)])
def test_bernoulli_scalar(gpu, rng, dtype):
    seed, offset = draw_args(rng)
    out = rnd.bernoulli_(empty((3000,), dtype), 0.3, seed, offset)
    wide = dtype == np.float64
    u = unit(words(3000, seed, offset, wide), wide)
    np.testing.assert_array_equal(ti.to_host(out), (u < compute_type(dtype)(0.3)).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout(gpu, rng, dtype):
    seed, offset = draw_args(rng)
    x = rng.standard_normal((31, 70)).astype(dtype)
    p = 0.3
    out = rnd.dropout(ti.to_device(x, transpose=True), p, seed, offset)
    u = unit(words(x.size, seed, offset, False), False).reshape(x.shape)
    ct = compute_type(dtype)
    kept = (x.astype(ct) * ct(1.0 / (1.0 - p))).astype(dtype)
    expected = np.where(u < np.float32(p), dtype.type(0), kept)
    assert ti.to_host(out).dtype == dtype
    np.testing.assert_array_equal(ti.to_host(out), expected)
    again = rnd.dropout(ti.to_device(np.ones(x.shape, dtype)), p, seed, offset)
    np.testing.assert_array_equal(ti.to_host(again) == 0, u < np.float32(p))


@pytest.mark.parametrize("layout_", ["transposed", "stepped", "seven_dims"])
def test_strided_output_writes_only_the_view(gpu, rng, layout_):
    seed, offset = draw_args(rng)
    if layout_ == "seven_dims":
        shape = (2, 3, 2, 3, 2, 3, 5)
        base = ti.to_device(np.full(tuple(2 * s for s in shape), -9.0, np.float32))
        strides = tuple(2 * int(np.prod(base.shape[i + 1:])) for i in range(len(shape)))
        view = ti.view(base, shape, strides)
    elif layout_ == "transposed":
        shape = (45, 60)
        base = ti.to_device(np.full(shape[::-1], -9.0, np.float32))
        view = ti.view(base, shape, (1, 45))
    else:
        shape = (45, 60)
        base = ti.to_device(np.full((45, 181), -9.0, np.float32))
        view = ti.view(base, shape, (181, 3), offset=1)
    rnd.uniform_(view, 0.0, 1.0, seed, offset)
    dense = rnd.uniform_(empty(shape, np.float32), 0.0, 1.0, seed, offset)
    np.testing.assert_array_equal(ti.to_host(view), ti.to_host(dense))
    assert np.count_nonzero(ti.to_host(base) == -9.0) == int(np.prod(base.shape)) - \
        int(np.prod(shape))


def test_empty_output_launches_nothing(gpu):
    out = empty((0, 5), np.float32)
    assert rnd.uniform_(out, 0.0, 1.0, 1, 0) is out
    assert rnd.dropout(empty((3, 0), np.float16), 0.5, 1, 0).shape == (3, 0)


def test_dropout_of_a_view_with_more_dims_than_the_kernel_takes(gpu, rng):
    seed, offset = draw_args(rng)
    shape = (2, 3, 2, 3, 2, 3, 5)
    full = rng.standard_normal(tuple(2 * s for s in shape)).astype(np.float32)
    strides = tuple(2 * int(np.prod(full.shape[i + 1:])) for i in range(len(shape)))
    x = ti.view(ti.to_device(full), shape, strides)
    out = rnd.dropout(x, 0.5, seed, offset)
    dense = rnd.dropout(ti.to_device(np.ascontiguousarray(ti.to_host(x))), 0.5, seed, offset)
    np.testing.assert_array_equal(ti.to_host(out), ti.to_host(dense))
    assert np.count_nonzero(ti.to_host(out)) not in (0, out.size)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16])
def test_graph_state_gives_the_eager_draw(gpu, rng, dtype):
    """In a CUDA graph the seed and a base offset come from device memory ([seed, base]); the
    draw at relative offset r equals the eager draw at base + r."""
    seed, base = draw_args(rng)
    relative = int(rng.integers(0, 5000))
    state = ti.to_device(np.array([seed, base], dtype=np.uint64).view(np.int64))
    graphed = rnd.normal_(empty((777,), dtype), 0.5, 2.0, state, relative)
    eager = rnd.normal_(empty((777,), dtype), 0.5, 2.0, seed, base + relative)
    np.testing.assert_array_equal(ti.to_host(graphed), ti.to_host(eager))
