"""Column sums (kernels/column_sum.py: sums over leading dims with the kept dims contiguous) on
the CPU through Triton's interpreter, called as the registered "sum" kernel.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_column_sum_interpret.py`.
Small sizes (rows of 32 bytes at most, 256-byte tiles, about 16 programs, 256 bytes of partial
sums a merge) make small inputs walk several column blocks, column tails, partial row tiles and
splits merged by the last program.
"""

import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti

from genesis import dispatch, dtypes
from genesis.backends.cuda.kernels import column_sum as cs
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
DTYPES = [F32, F16, BF16]


@pytest.fixture
def gpu(monkeypatch):
    """Kernels run interpreted with small column-sum sizes; column-sum launches are counted;
    reductions planned afresh, with split counters of their own (host memory)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    for name, value in (("ROW_BYTES", 32), ("MIN_ROW_BYTES", 16), ("TILE_BYTES", 256),
                        ("PROGRAMS", 16), ("MERGE_BYTES", 256)):
        monkeypatch.setattr(cs, name, value)
    monkeypatch.setattr(red, "_reductions", LaunchCache())
    monkeypatch.setattr(red, "_COUNTS", {})
    state = {"launches": 0}
    launch = cs.column_sum_launch

    def counted(plan, stream, x, out, counts):
        state["launches"] += 1
        launch(plan, stream, x, out, counts)

    monkeypatch.setattr(cs, "column_sum_launch", counted)
    with ti.device(red):
        yield state


def column_sum(gx, dims, dtype=None):
    """The CUDA "sum" of `gx` over `dims` (in `dtype`, else gx's), as a host array."""
    out_dtype = dtypes.from_numpy_dtype(dtype or gx.dtype)
    return ti.to_host(dispatch.kernel("sum", "cuda")(gx, dims, False, out_dtype))


def plan(shape, dims, dtype):
    """The column-sum plan "sum" made for a contiguous `shape` reduced over `dims`."""
    layout_rows = int(np.prod([shape[d] for d in dims]))
    cols = int(np.prod(shape)) // layout_rows
    return cs.Plan(layout_rows, cols, cols, dtype)


def check(out, x, dims):
    """Within an ulp of the output dtype of PyTorch's CPU sum of the same data, plus what the
    two float32 accumulations may differ by (n - 1 roundings of at most 2^-24 of sum |x| each,
    n the rows summed), whatever their orders."""
    expected = torch.from_numpy(x.astype(np.float32)).to(_TORCH[x.dtype]).sum(dims)
    exp = expected.to(torch.float64).numpy()
    rows = x.size // max(exp.size, 1)
    ulp = np.spacing(np.abs(exp).astype(x.dtype)).astype(np.float64)
    accumulation = 2 * rows * 2.0 ** -24 * np.abs(x.astype(np.float64)).sum(dims)
    error = np.abs(out.astype(np.float64) - exp)
    assert out.dtype == x.dtype and out.shape == exp.shape
    assert np.all(error <= ulp + accumulation), f"max error {np.max(error / ulp)} ulps"


_TORCH = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16}


def eighths(shape, dtype, rng):
    """Multiples of 1/8 in [0.5, 1.5]: every float32 partial sum is exact, so the result is the
    exact sum rounded once, whatever the order."""
    return (rng.integers(4, 13, shape) / 8).astype(dtype)


# (shape, dims): one row; odd rows and columns (rows not a multiple of the split, columns past
# the last block); many splits of few columns; whole tiles; 3-D inputs reduced over their
# leading dims (one, then two of them).
SHAPES = [((1, 37), (0,)), ((331, 37), (0,)), ((1000, 5), (0,)), ((64, 16), (0,)),
          ((9, 11, 13), (0, 1)), ((4, 6, 10), (0,))]


@pytest.mark.parametrize("shape,dims", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_sums_rounded_once(gpu, shape, dims, dtype, rng):
    x = eighths(shape, dtype, rng)
    out = column_sum(ti.to_device(x), dims)
    exact = x.astype(np.float64).sum(dims).astype(dtype)
    assert out.dtype == dtype and out.shape == exact.shape
    np.testing.assert_array_equal(out.view(np.uint8), exact.view(np.uint8))
    assert gpu["launches"] == 1


@pytest.mark.parametrize("shape,dims", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_signed_sums_match_pytorch(gpu, shape, dims, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    check(column_sum(ti.to_device(x), dims), x, dims)


def test_the_cases_split(gpu):
    """The shapes above walk what they say under the fixture's sizes: several column blocks
    with a column tail, rows split into unequal parts, splits of every dtype."""
    odd = plan((331, 37), (0,), BF16)
    assert odd.col_blocks > 1 and odd.splits > 1 and odd.launch.meta["EVEN_COLS"] is False
    assert 331 % odd.dims[2] != 0 and odd.dims[2] % odd.launch.meta["BR"] != 0
    assert plan((1, 37), (0,), F32).splits == 1
    for dtype in DTYPES:
        assert plan((1000, 5), (0,), dtype).splits > 1
        assert plan((9, 11, 13), (0, 1), dtype).splits > 1


def test_many_splits_merged_in_several_loads(gpu, monkeypatch, rng):
    """More splits than one merge load holds: the last program walks them SB at a time."""
    monkeypatch.setattr(cs, "PROGRAMS", 64)
    monkeypatch.setattr(cs, "MERGE_BYTES", 1 << 20)
    monkeypatch.setattr(cs, "_SUM_PER_WARP", 16)
    p = plan((2000, 8), (0,), F32)
    assert p.splits > p.launch.meta["SB"] > 1
    x = rng.standard_normal((2000, 8)).astype(F32)
    check(column_sum(ti.to_device(x), (0,)), x, (0,))
    x = eighths((2000, 8), BF16, rng)
    exact = x.astype(np.float64).sum(0).astype(BF16)
    np.testing.assert_array_equal(column_sum(ti.to_device(x), (0,)).view(np.uint16),
                                  exact.view(np.uint16))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_half_input_summed_to_float32(gpu, dtype, rng):
    x = rng.standard_normal((331, 37)).astype(dtype)
    out = column_sum(ti.to_device(x), (0,), F32)
    expected = torch.from_numpy(x.astype(np.float32)).sum(0, dtype=torch.float32).numpy()
    assert out.dtype == F32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_rows_at_a_stride(gpu, rng):
    """Every other row of a matrix (the reduced dim strided, the columns contiguous)."""
    x = rng.standard_normal((400, 37)).astype(BF16)
    gx = ti.view(ti.to_device(x), (200, 37), (74, 1))
    check(column_sum(gx, (0,)), x[::2], (0,))
    assert gpu["launches"] == 1


def test_repeats_bit_for_bit(gpu, rng):
    """Signed values, so the summation order shows in the bits: a second call (after another
    geometry used the counters) gives the same bits, and the counters end at zero."""
    x = rng.standard_normal((1000, 37)).astype(F32)
    gx = ti.to_device(x)
    first = column_sum(gx, (0,)).copy()
    column_sum(ti.to_device(rng.standard_normal((333, 5)).astype(BF16)), (0,))
    assert first.tobytes() == column_sum(gx, (0,)).tobytes()
    assert not ti.to_host(red._COUNTS[(0, 0)]).any()


def test_other_reductions_keep_the_generic_kernel(gpu, rng):
    """Float64 sums, means and sums over trailing dims do not take the column kernel."""
    x = rng.standard_normal((50, 6))
    column_sum(ti.to_device(x), (0,))
    column_sum(ti.to_device(x.astype(F32)), (1,))
    dispatch.kernel("mean", "cuda")(ti.to_device(x.astype(F32)), (0,), False)
    assert gpu["launches"] == 0
