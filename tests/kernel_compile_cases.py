"""The compile checks of the CUDA kernels: for each kernel module, a function that compiles its
kernels in every specialization worth checking for `target` (no GPU needed), through the
module's own launch code with placeholder arrays (addresses 0) of the right layouts.

Kernel modules not listed here still carry these cases as their own `compile_all(target)`.
"""

import ml_dtypes
import numpy as np

from genesis.backends.cuda import matmul as matmul_flags
from genesis.backends.cuda.kernels import conv, index, median, shape, softmax
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


def conv_case(dtype, x_shape, w_shape, conv_args, target, transposed=False, bias=False,
              channels_last=False):
    """Compile the forward (or transposed) launch of one convolution of a channels-last input
    (as the kernels read it) into a channels-last or NCHW output."""
    n, c, h, w = x_shape
    x = placeholder(x_shape, dtype, (h * w * c, 1, w * c, c))
    geometry = conv.Conv(*conv_args)
    groups = geometry.groups
    packed = placeholder((groups, *w_shape[2:], w_shape[0] // groups, w_shape[1])
                         if transposed else (groups, *w_shape[2:], w_shape[1],
                                             w_shape[0] // groups), dtype)
    out_c = packed.shape[0] * packed.shape[4]
    size = (tuple((s - 1) * st + k for s, st, k in zip((h, w), geometry.stride, w_shape[2:]))
            if transposed else conv._out_size((h, w), w_shape[2:], geometry))
    out_strides = ((size[0] * size[1] * out_c, 1, size[1] * out_c, out_c)
                   if channels_last or transposed and geometry.stride != (1, 1) else None)
    out = placeholder((n, out_c, *size), dtype, out_strides)
    b = placeholder((out_c,), dtype) if bias else None
    launch, dims = conv._conv_plan(x, packed, b, out, geometry, transposed, target)
    conv._conv_launch(launch, dims, 0, x, packed, b, out)


def wgrad_case(dtype, x_shape, w_shape, conv_args, target):
    """Compile the weight gradient's launches (split into float32 partials and the sum, or
    direct) of one convolution of channels-last operands."""
    geometry = conv.Conv(*conv_args)
    size = conv._out_size(x_shape[2:], w_shape[2:], geometry)
    dy_shape = (x_shape[0], w_shape[0], *size)

    def array(shape):
        n, c, h, w = shape
        return placeholder(shape, dtype, (h * w * c, 1, w * c, c))

    x, dy = array(x_shape), array(dy_shape)
    bm, bn, bk, _, _ = conv._wgrad_tiles(w_shape[0] // geometry.groups, w_shape[1], dtype)
    programs = (-(-w_shape[0] // geometry.groups // bm) * -(-w_shape[1] // bn) * w_shape[2]
                * w_shape[3] * geometry.groups)
    splits, split_len = conv._splits(programs, dy_shape[0] * size[0] * size[1], bk)
    out = placeholder((splits, *w_shape), np.float32 if splits > 1 else dtype)
    launch, dims = conv._wgrad_plan(dy, x, out, geometry, w_shape[2:], splits, split_len, target)
    conv._wgrad_launch(launch, dims, 0, dy, x, out)
    if splits > 1:
        total = placeholder(w_shape, dtype)
        conv._sum_launch(conv._sum_plan(total.size, 0, target), 0, out, total, total.size,
                         splits)


def conv_cases(target):
    """ResNet-50's convolutions in every dtype (float32 with and without TF32): the 7x7 stem
    (3 channels: the smallest inner tile), 3x3 and 1x1 layers of 64 to 512 channels (the tile
    rule's widths), stride 2, NCHW and channels-last, with bias; transposed at stride 1 and 2
    (phases), grouped and depthwise; the weight gradient split and direct; 64-bit offsets."""
    one, two = ((1, 1), (0, 0), (1, 1), 1), ((2, 2), (1, 1), (1, 1), 1)
    layers = [((32, 3, 224, 224), (64, 3, 7, 7), ((2, 2), (3, 3), (1, 1), 1)),
              ((32, 64, 56, 56), (64, 64, 3, 3), ((1, 1), (1, 1), (1, 1), 1)),
              ((32, 256, 56, 56), (64, 256, 1, 1), one),
              ((32, 128, 56, 56), (128, 128, 3, 3), two),
              ((32, 512, 7, 7), (512, 512, 3, 3), ((1, 1), (1, 1), (1, 1), 1))]
    for dtype, tf32 in ((np.float16, False), (ml_dtypes.bfloat16, False), (np.float32, True),
                        (np.float32, False)):
        saved, matmul_flags.allow_tf32 = matmul_flags.allow_tf32, tf32
        try:
            for x_shape, w_shape, args in layers if dtype == ml_dtypes.bfloat16 else layers[1:2]:
                conv_case(dtype, x_shape, w_shape, args, target, bias=True)
                conv_case(dtype, x_shape, w_shape, args, target, channels_last=True)
                conv_case(dtype, x_shape, w_shape[1::-1] + w_shape[2:], args, target,
                          transposed=True)
                wgrad_case(dtype, x_shape, w_shape, args, target)
        finally:
            matmul_flags.allow_tf32 = saved
    bf16 = ml_dtypes.bfloat16
    conv_case(bf16, (32, 128, 56, 56), (128, 64, 3, 3), two, target, transposed=True,
              channels_last=True)
    conv_case(bf16, (8, 64, 28, 28), (64, 8, 3, 3), ((1, 1), (1, 1), (1, 1), 8), target)
    conv_case(bf16, (8, 64, 28, 28), (64, 1, 3, 3), ((1, 1), (1, 1), (1, 1), 64), target)
    wgrad_case(bf16, (2, 64, 8, 8), (64, 64, 1, 1), one, target)
    conv_case(bf16, (1024, 256, 112, 112), (256, 256, 3, 3), ((1, 1), (1, 1), (1, 1), 1),
              target)
    wgrad_case(bf16, (1024, 256, 112, 112), (256, 256, 3, 3), ((1, 1), (1, 1), (1, 1), 1),
               target)


CASES = {"conv": conv_cases, "index": index_cases, "median": median_cases, "reduce": reduce_cases,
         "shape": shape_cases, "softmax": softmax_cases}
