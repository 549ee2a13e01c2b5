"""The compile checks of the CUDA kernels: for each kernel module, a function that compiles its
kernels in every specialization worth checking for `target` (no GPU needed), through the
module's own launch code with placeholder arrays (addresses 0) of the right layouts.

Kernel modules not listed here still carry these cases as their own `compile_all(target)`.
"""

import ml_dtypes
import numpy as np

from genesis.backends.cuda.kernels import arange, index, median, random, shape, softmax
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.kernels._index_layout import Operand
from genesis.backends.cuda.kernels._strided_indexing import RowLayout, placeholder

_REDUCE_PARAMS = {"mean": (8.0,), "var": (1.0,), "std": (1.0,), "normp": (3.0, 1.0 / 3.0)}


def reduce_case(kind, dtype, shape, dims, target, indices=False, reorder=True):
    """Compile the launches of one reduction of a contiguous `shape` over `dims`."""
    x = placeholder(shape, dtype)
    layout = RowLayout(x.shape, dims, [x.element_strides()], reorder)
    out = placeholder((layout.rows,), np.bool_ if kind in ("any", "all") else dtype)
    index = placeholder((layout.rows,), np.int64) if indices else None
    params = _REDUCE_PARAMS.get(kind, ())
    red._Reduction(kind, x, dims, reorder, len(params), target).run(0, x, out, index, params)


def scan_case(kind, dtype, out_dtype, shape, dim, target):
    """Compile the launch of one scan of a contiguous `shape` along `dim`."""
    out = placeholder(shape, out_dtype)
    launch, dims = red._scan_plan(kind, placeholder(shape, dtype), dim, kind == "cumsum", out,
                                  target)
    red._scan_launch(launch, dims, 0, placeholder(shape, dtype), out)


def reduce_cases(target):
    """Every reduction kind on float32 rows, rows split in one launch (the last program merges;
    also past the L2 size, where loads evict first, and over half types), columns split over
    two launches (partial + merge), the integer accumulators and the scans."""
    f32 = np.float32
    kinds = ("sum", "nansum", "prod", "mean", "amax", "amin", "any", "all", "count_nonzero",
             "norm0", "norm1", "norm2", "normp", "norminf", "normninf", "var", "std", "logsumexp")
    for kind in kinds:
        reduce_case(kind, f32, (64, 1000), (1,), target)
    for kind in ("argmax", "argmin"):
        reduce_case(kind, f32, (64, 1000), (1,), target, indices=True, reorder=False)
        reduce_case(kind, f32, (1 << 20,), (0,), target, indices=True, reorder=False)
    for kind in ("sum", "mean", "var", "logsumexp", "amax"):
        reduce_case(kind, f32, (1 << 20,), (0,), target)
        reduce_case(kind, f32, (1 << 26,), (0,), target)
        reduce_case(kind, f32, (4096, 512), (0,), target)
    for dtype in (np.float16, ml_dtypes.bfloat16):
        reduce_case("sum", dtype, (1 << 26,), (0,), target)
        reduce_case("mean", dtype, (8, 1 << 20), (1,), target)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.bool_):
        reduce_case("sum", dtype, (64, 1000), (1,), target)
    reduce_case("amax", np.int64, (8, 6, 4), (0, 2), target)
    for kind, dtype, shape, dim in (("cumsum", np.float32, (64, 1000), 1),
                                    ("cumsum", ml_dtypes.bfloat16, (1000, 64), 0),
                                    ("cumsum", np.int32, (8, 6, 4), 1),
                                    ("cumprod", np.float32, (64, 1000), 1)):
        scan_case(kind, dtype, np.int64 if dtype == np.int32 else dtype, shape, dim, target)


def index_cases(target):
    """The address kernel in each mode (rows and element by element, 1-4 index arrays, 1-D to
    4-D, scalar stores into every kind of array) and the bounds check."""
    f32, i64 = np.float32, np.int64
    idx = placeholder((4096,), i64)
    term = [(Operand(idx, (4096,), 1), 768)]
    for dtype in (f32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.bool_):
        arr = placeholder((50257, 768), dtype)
        out = placeholder((4096, 768), dtype)
        index._Address("load", (4096, 768), arr, (0, 1), term).run(out, target)
        index._Address("store", (4096,), arr, (0,), [(Operand(idx, (4096,)), 1)], 1).run(
            None, target)
        index._Address("store", (4096, 768), arr, (0, 1), term, 1).run(None, target)
    arr = placeholder((7, 9, 11, 13), f32, (1, 7, 63, 693))
    index2 = placeholder((5, 6), i64)
    for ni in range(1, index.MAX_INDICES + 1):
        terms = [(Operand(index2, (5, 6), 2), 3)] * ni
        index._Address("load", (5, 6, 11, 13), arr, (0, 0, 63, 693), terms).run(
            placeholder((5, 6, 11, 13), f32), target)
        keys = placeholder((5, 6), i64 if ni > 1 else np.int32)
        index._Address("offsets", (5, 6), None, (0, 0),
                       [(Operand(index2, (5, 6)), 3)] * ni).run(keys, target)
    gather_index = placeholder((64, 100), i64)
    index._Address("load", (64, 100), placeholder((64, 300), f32), (300, 0),
                   [(Operand(gather_index, (64, 100)), 1)]).run(placeholder((64, 100), f32),
                                                                target)
    for dtype in (i64, np.int32):
        for shape, strides, negative in (((3, 5, 7), (1, 3, 15), True), ((100,), (1,), False)):
            x = placeholder(shape, dtype, strides)
            launch, dims = index._check_plan(x, shape, strides, negative, target)
            index._check_launch(launch, dims, 0, x, placeholder(shape, i64),
                                placeholder((1,), i64), 10)


def median_cases(target):
    """The pick kernel for float (NaN search) and integer rows (the sorts: sort's cases)."""
    i64 = np.int64
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, i64, np.int32):
        launch = median._pick(np.dtype(dtype), 64, 0, target)
        median._pick_launch(launch, 0, placeholder((64, 1001), dtype), placeholder((1,), i64),
                            placeholder((64,), dtype), placeholder((1,), i64), 64, 1001)


def shape_cases(target):
    """The gather kernel (flip/roll, tril/triu) over 1-3 dims and the cat table kernel."""
    for dtype in (np.float32, ml_dtypes.bfloat16, np.int64, np.bool_):
        x = placeholder((64, 32, 16), dtype)
        for sizes, strides, shifts, triangle in (([64, 512], [512, 1], [0, 3], (0, 0)),
                                                 ([64, 32, 16], [512, 16, 1], [0, 0, 0], (1, 2)),
                                                 ([32768], [-1], [0], (0, 0))):
            launch, dims = shape._gather_plan(x.size, sizes, strides, shifts, triangle, 0, target)
            shape._gather_launch(launch, dims, 0, x, x)
        shape._cat_launch(shape._cat_plan(8, 0, target), 0, placeholder((1,), np.int64), x, 1024)


def softmax_case(x, y, out, dims, backward, log, target):
    """Compile the launch of one softmax (forward, or backward with y) of these layouts."""
    launch, geometry = softmax._plan(x, y, out, dims, backward, log, target)
    softmax._softmax_launch(launch, geometry, 0, x, y, out)


def softmax_cases(target):
    """Forward and backward, one pass and online, rows and columns, float32/float16/bfloat16
    (and float64)."""
    cases = [((4096, 1000), 1), ((64, 16384), 1), ((8, 50257), 1), ((1000, 64), 0),
             ((4, 8, 33), 1)]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for shape_, dim in cases if dtype == np.float32 else cases[:1]:
            x = placeholder(shape_, dtype)
            for backward in (False, True):
                for log in (False, True):
                    softmax_case(x, x if backward else None, x, (dim,), backward, log, target)


def arange_cases(target):
    """arange into every kind of dtype: float64, float32 and half accumulations, integers."""
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32,
                  np.int8):
        out = placeholder((1000,), dtype)
        floating = np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16
        arange.arange_plan(1000, out.dtype, 0, target)(0, out, 1000, 0.5 if floating else 3,
                                                       0.25 if floating else 2)


def random_case(dist, out, src, target):
    """Compile the launch of one Philox fill of `out` (reading `src`)."""
    launch, dims = random._fill_plan(dist, out, src, target)
    random._fill_launch(launch, dims, 0, out, src, 1, 0, placeholder((2,), np.int64), 0.0, 1.0)


def random_cases(target):
    """Every distribution for float32 (and a strided output), the float64 (two-word) forms,
    half types, integers and bool."""
    shape = (1000,)
    f32 = placeholder(shape, np.float32)
    for dist in (random.UNIFORM, random.NORMAL, random.EXPONENTIAL, random.BERNOULLI):
        random_case(dist, f32, None, target)
    random_case(random.UNIFORM, placeholder((64, 48), np.float32, (1, 64)), None, target)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64):
        out = placeholder(shape, dtype)
        dists = (random.UNIFORM, random.NORMAL) + ((random.EXPONENTIAL,) if dtype == np.float64
                                                   else ())
        for dist in dists:
            random_case(dist, out, None, target)
        random_case(random.BERNOULLI, out, out, target)
        random_case(random.DROPOUT, out, out, target)
    random_case(random.DROPOUT, f32, f32, target)
    for dtype in (np.int64, ml_dtypes.bfloat16):
        out = placeholder(shape, dtype)
        launch, dims = random._fill_plan(random.INTEGER, out, None, target)
        random._fill_launch(launch, dims, 0, out, None, 1, 0, placeholder((2,), np.int64), 0, 10)
    random_case(random.BERNOULLI, placeholder(shape, np.bool_), None, target)


CASES = {"arange": arange_cases, "index": index_cases, "median": median_cases, "reduce": reduce_cases,
         "random": random_cases, "shape": shape_cases, "softmax": softmax_cases}
