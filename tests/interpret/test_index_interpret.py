"""The CUDA indexing kernels against the CPU kernels, on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_index_interpret.py`.
Blocks are shrunk so that small inputs cross block and chunk boundaries (several programs,
segments of equal keys spanning chunks); operands are strided and broadcast views.
"""


import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

from genesis import dispatch
from genesis.backends.cpu import index as cpu_index
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import index as idx
from genesis.backends.cuda.kernels import index_accumulate as acc
from genesis.backends.cuda.kernels import index_compact as compact
from genesis.backends.cuda.kernels import scan as scan_kernels
from genesis.backends.cuda.kernels import sort as sort_kernels

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16,
                                np.int32, np.int64, np.bool_)] + [BF16]


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(idx, "BLOCK", 64)
    monkeypatch.setattr(compact, "BLOCK", 64)
    monkeypatch.setattr(acc, "_TILE", 16)
    monkeypatch.setattr(acc, "_MAX_BR", 4)
    ti.small_sort_blocks(monkeypatch)
    for cache in (idx._plans, idx._checks, acc._plans, compact._count_plans, compact._emits,
                  compact._repeat_plans):
        monkeypatch.setattr(cache, "limit", 0)
    with ti.device(idx, acc, compact, scan_kernels, sort_kernels, array_ops):
        yield


def values(shape, dtype, rng):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f" or dtype == BF16:
        return rng.uniform(-3, 3, shape).astype(dtype)
    return rng.integers(0 if dtype.kind == "u" else -9, 10, shape).astype(dtype)


def transposed(arr):
    """(arr, a device view with arr's values laid out transposed)."""
    return arr, ti.to_device(arr, transpose=arr.ndim >= 2)


def broadcast(arr, shape):
    """(numpy broadcast view, device view of the same geometry)."""
    view = np.broadcast_to(arr, shape)
    strides = tuple(s // arr.itemsize for s in view.strides)
    return view, ti.view(ti.to_device(arr), shape, strides)


def stepped(arr):
    """A device view with arr's values at every other element of the last dim."""
    wide = np.repeat(arr, 2, axis=-1)
    strides = tuple(s // arr.itemsize for s in wide.strides[:-1]) + (2,)
    return ti.view(ti.to_device(wide), arr.shape, strides)


def check(actual, expected):
    host = ti.to_host(actual)
    assert host.shape == expected.shape and host.dtype == expected.dtype, \
        f"{host.shape} {host.dtype} != {expected.shape} {expected.dtype}"
    if expected.dtype.kind in "fV" or expected.dtype == BF16:
        np.testing.assert_allclose(host.astype(np.float64), expected.astype(np.float64),
                                   rtol=2e-2 if expected.itemsize == 2 else 1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(host, expected)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("allow_negative", [True, False])
def test_check_index(gpu, dtype, allow_negative, rng):
    size = 7
    index = rng.integers(-size if allow_negative else 0, size, (13, 11)).astype(dtype)
    cpu, dev = transposed(index)
    out, bad = dispatch.kernel("check_index", "cuda")(dev, size, allow_negative)
    want, want_bad = cpu_index.check_index(cpu, size, allow_negative)
    assert bad is None and want_bad is None
    check(out, want)
    index[3, 4], index[9, 2] = size + 5, -size - 3
    cpu, dev = transposed(index)
    _, bad = dispatch.kernel("check_index", "cuda")(dev, size, allow_negative)
    assert bad == cpu_index.check_index(cpu, size, allow_negative)[1]


def test_check_index_empty_and_0d(gpu):
    out, bad = dispatch.kernel("check_index", "cuda")(ti.to_device(np.zeros(0, np.int64)), 3,
                                                      True)
    assert bad is None and ti.to_host(out).shape == (0,)
    out, bad = dispatch.kernel("check_index", "cuda")(ti.to_device(np.array(-1)), 3, True)
    assert bad is None and int(ti.to_host(out)) == 2


def _indices(rng, sizes, shapes):
    """Index arrays in [0, size) broadcast to one shape: (numpy views, device views)."""
    batch = np.broadcast_shapes(*shapes)
    pairs = [broadcast(rng.integers(0, n, s), batch) for n, s in zip(sizes, shapes)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_every_dtype(gpu, dtype, rng):
    cpu, dev = transposed(values((9, 70), dtype, rng))
    ci, gi = _indices(rng, (9,), [(5, 3)])
    check(dispatch.kernel("index", "cuda")(dev, gi), cpu_index.index(cpu, ci))


@pytest.mark.parametrize("shapes", [[(4,)], [(3, 1), (1, 5)], [(2, 3)] * 3,
                                    [(2, 1, 3), (4, 1), (3,), (1,), (4, 3)], [(0,)]])
@pytest.mark.parametrize("min_row", [2, 1000])
def test_index_broadcast_and_many(gpu, shapes, min_row, monkeypatch, rng):
    monkeypatch.setattr(idx, "MIN_ROW", min_row)
    arr = values((3, 4, 2, 3, 2, 3), np.dtype(np.float32), rng)
    k = len(shapes)
    ci, gi = _indices(rng, arr.shape[:k], shapes)
    cpu, dev = arr, ti.to_device(arr)
    check(dispatch.kernel("index", "cuda")(dev, gi), cpu_index.index(cpu, ci))
    check(dispatch.kernel("index", "cuda")(stepped(arr), gi), cpu_index.index(cpu, ci))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_every_dtype(gpu, dtype, accumulate, rng):
    out = values((11, 6), dtype, rng)
    rows = rng.integers(0, 11, 30)
    vals = values((rows.size, 6), dtype, rng)
    want = out.copy()
    cpu_index.index_put(want, [rows], vals, accumulate)
    dev = ti.to_device(out)
    dispatch.kernel("index_put", "cuda")(dev, [ti.to_device(rows)], ti.to_device(vals),
                                         accumulate)
    check(dev, want)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("min_row", [2, 1000])
def test_index_put_strided_target_broadcast_values_and_scalars(gpu, accumulate, min_row,
                                                               monkeypatch, rng):
    """Into a permuted view; index arrays broadcast (duplicates only when accumulating)."""
    monkeypatch.setattr(idx, "MIN_ROW", min_row)
    base = values((8, 5, 12), np.dtype(np.float32), rng)
    if accumulate:
        ci, gi = _indices(rng, (5, 12), [(4, 1), (1, 3)])
    else:
        pairs = [broadcast(np.arange(4)[:, None], (4, 3)),
                 broadcast(np.array([[0, 2, 5]]), (4, 3))]
        ci, gi = [p[0] for p in pairs], [p[1] for p in pairs]
    row = values((8,), np.dtype(np.float32), rng)
    for value in (broadcast(row, (4, 3, 8)), (2.5, 2.5)):
        want = base.copy()
        cpu_index.index_put(want.transpose(1, 2, 0), ci, value[0], accumulate)
        dev_base = ti.to_device(base)
        target = ti.view(dev_base, (5, 12, 8), (12, 1, 60))
        dispatch.kernel("index_put", "cuda")(target, gi, value[1], accumulate)
        check(dev_base, want)


def test_index_put_accumulate_long_runs(gpu, rng):
    """Runs of one key far longer than a chunk, multiplied values, every key repeated."""
    out = values((5, 3), np.dtype(np.float64), rng)
    rows = np.sort(rng.integers(0, 5, 60))
    vals = values((60, 3), np.dtype(np.float64), rng)
    want = out.copy()
    cpu_index.index_put(want, [rows], vals, True)
    dev = ti.to_device(out)
    dispatch.kernel("index_put", "cuda")(dev, [ti.to_device(rows)], ti.to_device(vals), True)
    check(dev, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_every_dtype(gpu, dtype, rng):
    cpu, dev = transposed(values((9, 13), dtype, rng))
    index = rng.integers(0, 13, (7, 20))
    check(dispatch.kernel("gather", "cuda")(dev, 1, ti.to_device(index)),
          cpu_index.gather(cpu, 1, index))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_3d(gpu, dim, rng):
    arr = values((6, 7, 8), np.dtype(np.float32), rng)
    shape = [4, 5, 6]
    shape[dim] = 11
    index = rng.integers(0, arr.shape[dim], shape)
    check(dispatch.kernel("gather", "cuda")(ti.to_device(arr), dim, ti.to_device(index)),
          cpu_index.gather(arr, dim, index))


SCATTER_CASES = ([(dtype, None) for dtype in DTYPES] + [(dtype, "add") for dtype in DTYPES[:4]]
                 + [(BF16, "add"), (np.dtype(np.bool_), "add")]
                 + [(np.dtype(t), "multiply") for t in (np.float32, np.float16, np.int8, np.bool_)])


@pytest.mark.parametrize("dtype,reduce", SCATTER_CASES, ids=str)
def test_scatter_every_dtype(gpu, dtype, reduce, rng):
    out = values((9, 5), dtype, rng)
    index = rng.integers(0, 9, (12, 4))
    src = values((index.shape[0] + 2, 5), dtype, rng)
    src_view = src[:index.shape[0], :4]
    want = out.copy()
    cpu_index.scatter(want, 0, index, src_view, reduce)
    dev = ti.to_device(out)
    gsrc = ti.view(ti.to_device(src), src_view.shape, (5, 1))
    dispatch.kernel("scatter", "cuda")(dev, 0, ti.to_device(index), gsrc, reduce)
    check(dev, want)


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_scalar_and_dim1(gpu, reduce, rng):
    out = values((6, 9), np.dtype(np.float32), rng)
    index = rng.integers(0, 9, (6, 6))
    want = out.copy()
    cpu_index.scatter(want, 1, index, 1.5, reduce)
    dev = ti.to_device(out)
    dispatch.kernel("scatter", "cuda")(dev, 1, ti.to_device(index), 1.5, reduce)
    check(dev, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonzero_every_dtype(gpu, dtype, rng):
    arr = values((13, 17), dtype, rng)
    if dtype.kind == "f":
        arr[0, 0] = np.nan
    cpu, dev = transposed(arr)
    check(dispatch.kernel("nonzero", "cuda")(dev), cpu_index.nonzero(cpu))


@pytest.mark.parametrize("shape", [(), (0,), (5, 0, 3), (1,), (300,), (2,) * 9, (3, 1, 4, 1, 5)])
def test_nonzero_shapes(gpu, shape, rng):
    arr = rng.random(shape) < 0.3
    check(dispatch.kernel("nonzero", "cuda")(ti.to_device(arr)), cpu_index.nonzero(arr))


def test_nonzero_none_and_all(gpu):
    for arr in (np.zeros((70, 3)), np.ones((70, 3))):
        check(dispatch.kernel("nonzero", "cuda")(ti.to_device(arr)), cpu_index.nonzero(arr))


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("n", [0, 1, 5, 90])
def test_repeat_interleave(gpu, dtype, n, rng):
    repeats = rng.integers(0, 4, n).astype(dtype)
    check(dispatch.kernel("repeat_interleave", "cuda")(ti.to_device(repeats)),
          cpu_index.repeat_interleave(repeats))


def test_unmergeable_dims_are_copied_contiguous(gpu, rng):
    """Index arrays broadcast over 7 dims that do not merge, and a 7-d transposed nonzero input:
    both copied contiguous first (more than MAX_DIMS dims)."""
    arr = values((3, 4, 5), np.dtype(np.float32), rng)
    shapes = [(2, 1, 2, 1, 2, 1, 2), (1, 2, 1, 2, 1, 2, 1)]
    ci, gi = _indices(rng, (3, 4), shapes)
    check(dispatch.kernel("index", "cuda")(ti.to_device(arr), gi), cpu_index.index(arr, ci))
    mask = rng.random((2,) * 7) < 0.5
    cpu, dev = transposed(mask)
    check(dispatch.kernel("nonzero", "cuda")(dev), cpu_index.nonzero(cpu))
