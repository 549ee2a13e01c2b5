"""The CUDA sort/topk/unique, median and shape kernels against the CPU kernels, through Triton's
interpreter (no GPU needed).

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/cuda/test_sort_interpret.py`.
Block sizes are shrunk (16-lane sorts, 8-element merge blocks) so short rows walk every path:
one block, several rows to a block, chunked sorts with merge passes, topk candidate reduction.
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

from genesis import dispatch
from genesis.backends.cuda.kernels import sort as sort_kernels

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
DTYPES = FLOATS + INTS + [np.dtype(np.bool_)]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(sort_kernels, "SORT_BLOCK", 16)
    monkeypatch.setattr(sort_kernels, "MERGE_BLOCK", 8)
    monkeypatch.setattr(sort_kernels, "_MIN_TILE", 32)
    monkeypatch.setattr(sort_kernels, "_recipes", sort_kernels.RecipeCache())
    with ti.device(sort_kernels):
        yield


def sample(shape, dtype, rng):
    """Values with many ties; floats with NaN, +-inf and +-0 sprinkled in."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype in FLOATS:
        pool = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, 3.0, -1e-3])
        x = rng.choice(pool, size=shape)
        spread = rng.random(shape) < 0.3
        x[spread] = rng.normal(size=int(spread.sum())) * 100
        return x.astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -4), min(info.max, 4)
    x = rng.integers(lo, hi + 1, shape).astype(dtype)
    x.reshape(-1)[:2] = [info.min, info.max][:x.size]
    return x


def check_same(actual, expected):
    host = ti.to_host(actual)
    assert host.shape == expected.shape and host.dtype == expected.dtype, \
        f"{host.shape} {host.dtype} != {expected.shape} {expected.dtype}"
    if expected.dtype in FLOATS:
        bits = np.dtype(f"u{expected.dtype.itemsize}")
        host, expected = host.view(bits), expected.view(bits)
    np.testing.assert_array_equal(host, expected)


def both(op, x, *args, transpose=False):
    expected = dispatch.kernel(op, "cpu")(x, *args)
    actual = dispatch.kernel(op, "cuda")(ti.to_device(x, transpose=transpose), *args)
    return actual, expected


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("length", [1, 2, 5, 16, 17, 40])
def test_sort_rows(gpu, dtype, descending, length, rng):
    x = sample((3, length), dtype, rng)
    actual, expected = both("sort", x, 1, descending, True)
    for a, e in zip(actual, expected):
        check_same(a, e)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("transpose", [False, True])
def test_sort_dims_and_views(gpu, dim, transpose, rng):
    x = sample((7, 5, 9), np.dtype(np.float32), rng)
    actual, expected = both("sort", x, dim, dim == 1, True, transpose=transpose)
    for a, e in zip(actual, expected):
        check_same(a, e)


def test_sort_strided_slice(gpu, rng):
    wide = sample((6, 70), np.dtype(np.int64), rng)
    dev = ti.view(ti.to_device(wide), (3, 35), (140, 2), 1)
    expected = dispatch.kernel("sort", "cpu")(wide[::2, 1::2], 1, True, True)
    for a, e in zip(dispatch.kernel("sort", "cuda")(dev, 1, True, True), expected):
        check_same(a, e)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64), BF16], ids=str)
@pytest.mark.parametrize("length,k", [(10, 3), (16, 16), (50, 1), (50, 7), (40, 30)])
@pytest.mark.parametrize("largest", [False, True])
def test_topk(gpu, dtype, length, k, largest, rng):
    x = sample((4, length), dtype, rng)
    actual, expected = both("topk", x, 1, k, largest, True)
    for a, e in zip(actual, expected):
        check_same(a, e)


def test_empty(gpu):
    for shape, dim in (((0, 5), 1), ((4, 0), 1), ((0,), 0)):
        x = np.zeros(shape, np.float32)
        values, indices = dispatch.kernel("sort", "cuda")(ti.to_device(x), dim, False, False)
        assert values.shape == shape and indices.shape == shape
