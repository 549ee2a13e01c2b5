"""The CUDA sort/topk/unique, median and shape kernels against the CPU kernels, through Triton's
interpreter (no GPU needed).

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_sort_interpret.py`.
Block sizes are shrunk (16-lane sorts, 8-element merge blocks) so short rows walk every path:
one block, several rows to a block, chunked sorts with merge passes, topk candidate reduction.
"""


import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

from genesis import dispatch
from genesis.backends.cuda.kernels import median as median_kernels
from genesis.backends.cuda.kernels import scan as scan_kernels
from genesis.backends.cuda.kernels import shape as shape_kernels
from genesis.backends.cuda.kernels import sort as sort_kernels
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
DTYPES = FLOATS + INTS + [np.dtype(np.bool_)]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    ti.small_sort_blocks(monkeypatch)
    monkeypatch.setattr(shape_kernels, "BLOCK", 64)
    monkeypatch.setattr(shape_kernels, "_launches", LaunchCache())
    monkeypatch.setattr(median_kernels, "ROWS", 4)
    monkeypatch.setattr(median_kernels, "_picks", LaunchCache())
    with ti.device(sort_kernels, shape_kernels, median_kernels, scan_kernels):
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


def check_same(actual, expected, bits=True):
    """Same shape, dtype and values: floats bit for bit (NaN payloads aside), or by value
    (-0 == 0) when not `bits`."""
    host = ti.to_host(actual)
    assert host.shape == expected.shape and host.dtype == expected.dtype, \
        f"{host.shape} {host.dtype} != {expected.shape} {expected.dtype}"
    if expected.dtype in FLOATS and not bits:
        host, expected = host.astype(np.float64), expected.astype(np.float64)
    elif expected.dtype in FLOATS:
        nan = np.isnan(expected.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(host.astype(np.float64)), nan)
        uint = np.dtype(f"u{expected.dtype.itemsize}")
        host, expected = host.view(uint)[~nan], expected.view(uint)[~nan]
    np.testing.assert_array_equal(host, expected)


def both(op, x, *args, transpose=False):
    expected = dispatch.kernel(op, "cpu")(x, *args)
    actual = dispatch.kernel(op, "cuda")(ti.to_device(x, transpose=transpose), *args)
    return actual, expected


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("length", [1, 5, 17, 40])
def test_sort_rows(gpu, dtype, descending, length, rng):
    """One lane, several rows to a block, one merge, two merges with a ragged last run."""
    x = sample((2 if length > 16 else 3, length), dtype, rng)
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
@pytest.mark.parametrize("length,k", [(10, 3), (50, 1), (50, 7), (40, 30)])
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


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.int16)], ids=str)
@pytest.mark.parametrize("shape,dim,keepdim", [((5, 1), 1, False), ((6, 2), 1, True),
                                               ((9, 4), 0, False), ((2, 3, 20), 2, True)])
def test_median_dim(gpu, dtype, shape, dim, keepdim, rng):
    x = sample(shape, dtype, rng)
    for layout in ("contiguous", "stepped"):
        host, dev = stepped(x) if layout == "stepped" else (x, ti.to_device(x))
        expected = dispatch.kernel("median_dim", "cpu")(host, dim, keepdim)
        for a, e in zip(dispatch.kernel("median_dim", "cuda")(dev, dim, keepdim), expected):
            check_same(a, e)


@pytest.mark.parametrize("shape", [(), (1,), (6,), (3, 7), (0, 3)])
def test_median_all(gpu, shape, rng):
    x = sample(shape, np.dtype(np.float16), rng)
    host, dev = stepped(x) if x.ndim else (x, ti.to_device(x))
    check_same(dispatch.kernel("median", "cuda")(dev), dispatch.kernel("median", "cpu")(host))
    if x.ndim:
        values, indices = dispatch.kernel("median_dim", "cuda")(ti.to_device(x), 0, False)
        assert values.shape == indices.shape == x.shape[1:]


def unique_both(x, dim, dev=None):
    """Every combination of the outputs, CPU kernel against CUDA kernel."""
    dev = ti.to_device(x) if dev is None else dev
    for inverse, counts in ((False, False), (True, True)):
        expected = dispatch.kernel("unique", "cpu")(x, inverse, counts, dim)
        actual = dispatch.kernel("unique", "cuda")(dev, inverse, counts, dim)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check_same(a, e, bits=False)


@pytest.mark.parametrize("dtype", [np.dtype(np.int8), np.dtype(np.int64), BF16,
                                   np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (40,), (3, 11), (0,), (2, 0)])
def test_unique_flat(gpu, dtype, shape, rng):
    """Without NaN: the CPU kernel merges NaNs into one value where torch keeps each apart."""
    x = sample(shape, dtype, rng)
    if dtype in FLOATS:
        x[np.isnan(x.astype(np.float32))] = 0
    unique_both(x, None)


def test_unique_nan_distinct(gpu):
    x = np.array([1.0, np.nan, 2.0, -0.0, np.nan, 1.0, 0.0], np.float32)
    values, inverse, counts = dispatch.kernel("unique", "cuda")(ti.to_device(x), True, True, None)
    check_same(values, np.array([-0.0, 1.0, 2.0, np.nan, np.nan], np.float32))
    check_same(inverse, np.array([1, 3, 2, 0, 4, 1, 0]))
    check_same(counts, np.array([2, 2, 1, 1, 1]))


@pytest.mark.parametrize("shape,dim", [((12, 3), 0), ((3, 12), 1), ((2, 4, 3), 1), ((6, 1), 0),
                                       ((2, 12), 1)])
def test_unique_dim(gpu, shape, dim, rng):
    x = rng.integers(0, 2, shape).astype(np.int32)
    unique_both(x, dim)
    host, dev = stepped(x)
    unique_both(host, dim, dev)


def stepped(x):
    """(numpy view, device view) of x's values at every other element of a bigger buffer."""
    wide = np.zeros(tuple(2 * n for n in x.shape), x.dtype)
    view = wide[tuple(slice(1, None, 2) for _ in x.shape)]
    view[...] = x
    strides = [s // x.itemsize for s in view.strides]
    offset = (view.ctypes.data - wide.ctypes.data) // x.itemsize
    return view, ti.view(ti.to_device(wide), x.shape, strides, offset)


def run_shape(op, x, *args, layout="contiguous"):
    if layout == "stepped":
        host, dev = stepped(x)
    else:
        host, dev = x, ti.to_device(x, transpose=layout == "transposed")
    expected = dispatch.kernel(op, "cpu")(host, *args)
    check_same(dispatch.kernel(op, "cuda")(dev, *args), np.asarray(expected))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2), ()])
def test_flip(gpu, layout, dims, rng):
    run_shape("flip", sample((4, 5, 6), np.dtype(np.float32), rng), dims, layout=layout)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("shifts,dims", [((1,), (0,)), ((-7,), (2,)), ((2, 3), (0, 1)),
                                         ((13, -2, 1), (2, 1, 0)), ((1, 2), (1, 1))])
def test_roll(gpu, layout, shifts, dims, rng):
    run_shape("roll", sample((4, 5, 6), np.dtype(np.int64), rng), shifts, dims, layout=layout)


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("k", [-2, 0, 1, 4])
@pytest.mark.parametrize("shape", [(5, 7), (3, 6, 4), (2, 1, 3, 3)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_triangles(gpu, op, k, shape, layout, rng):
    run_shape(op, sample(shape, np.dtype(np.float16), rng), k, layout=layout)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.bool_)], ids=str)
def test_bool_and_half_shapes(gpu, dtype, rng):
    x = sample((6, 9), dtype, rng)
    run_shape("flip", x, (1,))
    run_shape("roll", x, (4,), (1,))
    run_shape("triu", x, 1)


def test_many_dims_roll(gpu, rng):
    x = sample((2, 3, 2, 3, 2, 3, 2), np.dtype(np.int32), rng)
    run_shape("roll", x, (1, 1, 1, 1, 1, 1, 1), tuple(range(7)), layout="stepped")


@pytest.mark.parametrize("count", [1, 2, 3, 9])
@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("mixed", [False, True])
def test_cat(gpu, count, dim, mixed, rng):
    hosts, devs = [], []
    for i in range(count):
        shape = [3, 4, 5]
        shape[dim] = int(rng.integers(0, 4)) if i % 3 else 2
        x = sample(tuple(shape), np.dtype(np.float32), rng)
        if mixed and i % 2:
            host, dev = stepped(x)
        elif mixed and i % 3 == 2:
            host, dev = x, ti.to_device(x, transpose=True)
        else:
            host, dev = x, ti.to_device(x)
        hosts.append(host)
        devs.append(dev)
    expected = dispatch.kernel("cat", "cpu")(hosts, dim)
    check_same(dispatch.kernel("cat", "cuda")(devs, dim), expected)


def test_cat_of_inputs_spanning_blocks(gpu, rng):
    """The table launch's grid spans the largest input: the others' programs past their ends
    store nothing, and inputs of several blocks land whole."""
    sizes = (2600, 7, 1024, 3100, 1)
    hosts = [sample((2, n, 3), np.dtype(np.float32), rng) for n in sizes]
    expected = dispatch.kernel("cat", "cpu")(hosts, 1)
    check_same(dispatch.kernel("cat", "cuda")([ti.to_device(h) for h in hosts], 1), expected)


def test_cat_empty_output(gpu):
    parts = [np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64)]
    out = dispatch.kernel("cat", "cuda")([ti.to_device(p) for p in parts], 0)
    assert out.shape == (0, 3)
