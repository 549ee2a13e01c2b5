"""The compile checks of the CUDA kernels: for each kernel module, a function that compiles its
kernels in every specialization worth checking for `target` (no GPU needed), through the
module's own launch code with placeholder arrays (addresses 0) of the right layouts. Every
kernel module is listed in CASES (tests/test_kernels_compile.py checks that).
"""

import itertools

import ml_dtypes
import numpy as np

from genesis.backends import cudnn
from genesis.backends.cuda.kernels import (_spatial, amp, arange, attention_dropout,
                                           attention_launch, batch_norm, conv, conv_few_channels,
                                           conv_hopper, copy, index, loss,
                                           median, norm, optim, optim_extra, pool, random,
                                           recurrent, residual_norm, rotary, shape, softmax,
                                           special, swiglu, upsample)
from genesis.backends.cuda.kernels import decode_attention as decode
from genesis.backends.cuda.kernels import elementwise as ew
from genesis.backends.cuda.kernels import gemv
from genesis.backends.cuda.kernels import index_accumulate as accumulate
from genesis.backends.cuda.kernels import index_compact as compact
from genesis.backends.cuda.kernels import matmul as mm
from genesis.backends.cuda.kernels import matmul_hopper as mh
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.kernels import scan, sort
from genesis.backends.cuda.kernels._index_layout import Operand
from genesis.backends.cuda.kernels._strided_indexing import RowLayout, placeholder
from genesis.backends.cuda.launch import compile_kernel

_REDUCE_PARAMS = {"mean": (8.0,), "var": (1.0,), "std": (1.0,), "normp": (3.0, 1.0 / 3.0)}


def reduce_case(kind, dtype, shape, dims, target, indices=False, reorder=True):
    """Compile the launches of one reduction of a contiguous `shape` over `dims`."""
    x = placeholder(shape, dtype)
    layout = RowLayout(x.shape, dims, [x.element_strides()], reorder)
    out = placeholder((layout.rows,), np.bool_ if kind in ("any", "all") else dtype)
    index = placeholder((layout.rows,), np.int64) if indices else None
    params = _REDUCE_PARAMS.get(kind, ())
    red._Reduction(kind, x, dims, reorder, len(params), target).run(0, x, out, index, params)


def reduce_cases(target):
    """Every reduction kind on float32 rows, rows split in one launch (the last program merges;
    also past the L2 size, where loads evict first, and over half types), columns split over
    two launches (partial + merge) and the integer accumulators."""
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


def scan_case(kind, dtype, out_dtype, shape, dim, target):
    """Compile the launch of one scan of a contiguous `shape` along `dim`."""
    out = placeholder(shape, out_dtype)
    launch, dims = scan._scan_plan(kind, placeholder(shape, dtype), dim, kind == "cumsum", out,
                                   target)
    scan._scan_launch(launch, dims, 0, placeholder(shape, dtype), out)


def scan_cases(target):
    """cumsum along the contiguous dim and across rows, over float32, bfloat16 and int32 (int64
    out); cumprod of float32."""
    for kind, dtype, shape, dim in (("cumsum", np.float32, (64, 1000), 1),
                                    ("cumsum", ml_dtypes.bfloat16, (1000, 64), 0),
                                    ("cumsum", np.int32, (8, 6, 4), 1),
                                    ("cumprod", np.float32, (64, 1000), 1)):
        scan_case(kind, dtype, np.int64 if dtype == np.int32 else dtype, shape, dim, target)


def attention_cases(target):
    """float16 D=64 causal and not, bfloat16 D=128 causal, float16 D=80 (padded to 128),
    float32 D=64 causal (TF32 x3) and float32 D=128 with TF32, forward and both backwards
    (one-pass and deterministic); Llama-3-shaped grouped heads (32 over 8); attn_masks: a bool
    key-padding mask (B, 1, 1, S) broadcast, an additive (L, S) mask broadcast over batch and
    heads, and a float32 additive mask read across (key stride L); dropout (bf16, D=64, with a
    mask; fp16, D=128, causal), one specialization for the host's seed and a CUDA graph's."""
    cases = [(np.float16, 64, False, True, None), (np.float16, 64, False, False, None),
             (ml_dtypes.bfloat16, 128, False, True, None), (np.float16, 80, False, False, None),
             (np.float32, 64, False, True, None), (np.float32, 128, True, False, None),
             (ml_dtypes.bfloat16, 64, False, False, (np.bool_, (1024, 0, 0, 1))),
             (np.float16, 128, False, True, (np.float16, (0, 0, 1024, 1))),
             (np.float32, 64, False, False, (np.float32, (0, 0, 1, 1024)))]
    graph_state = placeholder((2,), np.int64)
    dropouts = {(ml_dtypes.bfloat16, 64): (0.1, graph_state, 64),
                (np.float16, 128): (0.1, graph_state, 0)}
    for dtype, head, tf32, causal, mask_layout in cases:
        x = placeholder((4, 8, 1024, head), dtype)
        out = placeholder(x.shape, np.float32)
        lse = placeholder(x.shape[:-1], np.float32)
        mask = None if mask_layout is None else placeholder((4, 8, 1024, 1024), *mask_layout)
        dropout = dropouts.get((dtype, head)) if mask_layout is not None else None
        _attention_case(x, x, mask, dropout, out, lse, causal, tf32, target)
    q = placeholder((1, 32, 2048, 64), ml_dtypes.bfloat16)
    kv = placeholder((1, 8, 2048, 64), ml_dtypes.bfloat16)
    _attention_case(q, kv, None, None, q, placeholder(q.shape[:-1], np.float32), True, False,
                    target)


def attention_dropout_cases(target):
    """The dropout mask kernel (one specialization for the host's seed and a graph's)."""
    keep = placeholder((4, 8, 1024, 1000), np.bool_)
    attention_dropout.mask_launch(32, 1024, 1000, 0, target)(
        0, keep, placeholder((2,), np.int64), 0.1, 12345, 0, 0, 1024, 1000, 16)


def _attention_case(q, kv, mask, dropout, out, lse, causal, tf32, target):
    """The forward and both backwards of queries `q` over keys and values `kv`."""
    launch, dims = attention_launch._forward_plan(q, kv, kv, mask, dropout, causal, tf32, True,
                                                  target=target)
    attention_launch._forward_launch(launch, dims, 0, q, kv, kv, mask, q, lse,
                                     None if out is q else out, 0.125, dropout)
    for deterministic in (False, True):
        plan = attention_launch._BackwardPlan(q, q, kv, kv, out, mask, dropout, causal, tf32,
                                              deterministic, target=target)
        plan.run(0, q, q, kv, kv, out, mask, dropout, lse, 0.125, q, kv, kv)


def copy_cases(target):
    """The 1-D, row and transposing copies (with casts) and the fills."""
    f32, bf16 = np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
    layouts = [((4096,), None, None), ((64, 1000), (1, 64), None), ((64, 1000), (2000, 2), None),
               ((8, 64, 1000), (64000, 1, 64), None),
               ((3, 5, 7, 9, 11, 13), None, (1, 3, 15, 105, 945, 10395))]
    for src_dtype, dst_dtype in ((f32, bf16), (np.dtype(np.float16), f32), (f32, f32),
                                 (np.dtype(np.int64), np.dtype(np.bool_))):
        for shape_, src_strides, dst_strides in layouts:
            dst = placeholder(shape_, dst_dtype, dst_strides)
            src = placeholder(shape_, src_dtype, src_strides)
            launch, dims = copy._copy_plan(dst, src, target)
            if dims is None:
                copy._copy_contiguous_launch(launch, 0, src, dst)
            else:
                copy._copy_tile_launch(launch, dims, 0, src, dst)
    for dtype, value in ((f32, 1.5), (bf16, 1.5), (np.int64, 3), (np.bool_, 1)):
        dst = placeholder((4096,), dtype)
        copy._fill_launch(copy._fill_plan(4096, isinstance(value, float), 0, target), 0, dst,
                          4096, value)


_INT_ONLY = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift", "bitwise_not")
_ELEMENTWISE_PARAMS = {"elu": (1.0, 1.0, 1.0), "leaky_relu": (0.01,), "softplus": (1.0, 20.0),
                       "hardshrink": (0.5,), "softshrink": (0.5,), "round": (1.0, 0.0),
                       "nan_to_num": (0.0, 1.0, -1.0), "addcmul": (1.0,), "addcdiv": (1.0,)}


def elementwise_case(op, dtype, target, kinds=None, strides=None, shape=None, halves=()):
    """Compile `op` on `dtype` operands (contiguous, or with `strides` for every operand);
    `kinds` marks operands given as "scalar" or None instead of arrays; the operands at the
    positions in `halves` are bfloat16 arrays beside float32 ones."""
    dtype = np.dtype(dtype)
    shape = shape or (8,) * (len(strides[0]) if strides else 1)
    kinds = kinds or ("array",) * ew._arity(op)
    cond = np.dtype(np.bool_)

    def operand_dtype(i):
        return (cond if op == "where" and i == 0 else np.dtype(ml_dtypes.bfloat16) if i in halves
                else dtype)
    operands = [placeholder(shape, operand_dtype(i), strides[i] if strides else None)
                if kind == "array" else (None if kind is None else 1)
                for i, kind in enumerate(kinds)]
    operands = ew._padded(operands)
    out = placeholder(shape, cond if op in ew.PREDICATES else dtype)
    params = ew._padded(ew._typed(_ELEMENTWISE_PARAMS.get(op, ()), dtype))
    launcher, launch, dims = ew._strided_plan(op, out, operands, dtype, target)
    launcher(launch, dims, 0, out, operands, params)


def elementwise_cases(target):
    """Every op once (float32, or int32 for bitwise ops), the main dtypes, scalar operands and
    strided layouts."""
    for op in ew.UNARY_OPS + ew.BINARY_OPS + ew.TERNARY_OPS + ew.PARAMETRIC_OPS:
        elementwise_case(op, np.int32 if op in _INT_ONLY else np.float32, target)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.uint8, np.bool_):
        elementwise_case("add", dtype, target)
        elementwise_case("lt", dtype, target, ("array", "scalar"))
    for op in ("pow", "floor_divide", "remainder"):
        elementwise_case(op, np.int64, target)
    elementwise_case("pow", np.int64, target, ("scalar", "array"))
    elementwise_case("pow", np.int8, target, ("array", "scalar"))
    elementwise_case("clamp", np.float16, target, ("array", None, "scalar"))
    transposed = (1, 8), (8, 1)
    elementwise_case("add", np.float32, target, strides=[(8, 1), (0, 1)])
    elementwise_case("mul", ml_dtypes.bfloat16, target, strides=[(768, 1), (0, 1)],
                     shape=(8, 768))
    elementwise_case("where", np.float16, target, strides=[(0, 0, 1), (64, 0, 1), (8, 1, 0)],
                     shape=(8, 8, 64))
    elementwise_case("mul", ml_dtypes.bfloat16, target, strides=transposed)
    elementwise_case("add", np.float32, target, halves=(1,))
    elementwise_case("lt", np.float32, target, halves=(0,), strides=[(768, 1), (0, 1)],
                     shape=(8, 768))
    elementwise_case("where", np.float32, target, strides=[(1, 8), (8, 1), (0, 0)])
    elementwise_case("add", np.float32, target,
                     strides=[tuple(3 * 2 ** (12 - d) for d in range(6)), (1, 0, 0, 0, 0, 0)])


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


def segment_case(out, batch, rest, out_strides, values, value, op, target):
    """Compile the segment launch writing `values` (or the scalar `value`) into `out`."""
    plan = accumulate._Plan(out, batch, rest, out_strides, values, value, op)
    launch, dims = plan.plan(target)
    keys = placeholder(batch, accumulate.key_dtype(out))
    scalar = None if values is not None else value
    accumulate._segment_launch(launch, dims, 0, keys, placeholder(batch, np.int64), out,
                               plan.val, scalar)


def index_accumulate_cases(target):
    """The segment kernel for embedding-like rows and scalar scatters, add and multiply, every
    accumulator type, int32 and int64 keys."""
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.int8,
                  np.bool_):
        out = placeholder((50257, 768), dtype)
        rows = placeholder((4096, 768), dtype)
        segment_case(out, (4096,), (768,), (1,), rows, None, "add", target)
        flat = placeholder((1000,), dtype)
        for op in ("add", "multiply"):
            segment_case(flat, (300,), (), (), placeholder((300,), dtype), None, op, target)
        segment_case(out, (4096,), (768,), (1,), None, 1, "add", target)
        segment_case(out, (4096,), (768,), (1,), rows, None, "last", target)
    huge = placeholder((1 << 31,), np.float32)
    segment_case(huge, (300,), (), (), placeholder((300,), np.float32), None, "add", target)


def index_compact_cases(target):
    """Counting and emitting for each element type and up to 8 and 9 coordinates, and the
    repeat search."""
    i64 = np.int64
    for dtype in (np.bool_, np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8,
                  np.uint8, np.int16, np.int32, i64):
        x = placeholder((300, 70), dtype, (1, 300))
        launch, dims = compact._count_plan(x, (300, 70), (1, 300), target)
        compact._count_launch(launch, dims, 0, x, placeholder((21,), i64))
        for launch, dims in compact._emit_plans(x, (300, 70), (1, 300), (300, 70), target):
            compact._emit_launch(launch, dims, 0, x, placeholder((21,), i64),
                                 placeholder((100, 2), i64))
    x = placeholder((2,) * 9, np.bool_)
    for launch, dims in compact._emit_plans(x, (512,), (1,), (2,) * 9, target):
        compact._emit_launch(launch, dims, 0, x, placeholder((1,), i64),
                             placeholder((100, 9), i64))
    compact._repeat_launch(compact._repeat_plan(4096, 0, target), 0, placeholder((100,), i64),
                           placeholder((4096,), i64), 100, 4096)


def loss_cases(target):
    """Forward (each reduction) and backward: float32 in one chunk and online (C = 50257), with
    class weights, and the GPT case (C = 50257, mean) in the other dtypes."""
    t = placeholder((4096,), np.int64)
    cases = [(np.float32, c, False, r) for c in (1000, 50257) for r in ("none", "sum", "mean")]
    cases += [(np.float32, 1000, True, "mean")]
    cases += [(d, 50257, False, "mean") for d in (np.float16, ml_dtypes.bfloat16, np.float64)]
    for dtype, c, weighted, reduction in cases:
        x = placeholder((4096, c), dtype)
        w = placeholder((c,), dtype) if weighted else None
        ct = loss._compute_dtype(x.dtype)
        reduce = reduction != "none"
        rows = placeholder((2 * 4096 if reduction == "mean" else 4096,), ct if reduce else dtype)
        out = placeholder((), dtype) if reduce else None
        total = placeholder((), ct) if reduction == "mean" else None
        counts = placeholder((1,), np.int32) if reduce else None
        lse = placeholder((4096,), ct)
        launch, dims = loss._forward_plan(x, t, w, reduction, target)
        loss._forward_launch(launch, dims, 0, x, t, w, rows, lse, out, total, counts, -100)
        g = placeholder((4096,) if reduction == "none" else (), dtype)
        launch, dims = loss._backward_plan(g, x, t, w, reduction, target)
        loss._backward_launch(launch, dims, 0, g, x, t, w, lse, total, x, -100)


def matmul_case(problem, config, target):
    """Compile the launch of one matmul Problem with one config."""
    launch, dims = mm._matmul_plan(problem, config, target)
    mm._matmul_launch(launch, dims, 0, problem.arrays)


def matmul_cases(target):
    """float16 over its whole config space (row-major 4096^2, and a weight gradient's layout
    with its row sums), bfloat16, float32 (TF32 and IEEE), float64 and integers with their first
    config; float16 also in transposed, batched and broadcast layouts and with every
    epilogue."""
    cases = [(np.float16, None), (ml_dtypes.bfloat16, None), (np.float32, "tf32"),
             (np.float32, "ieee"), (np.float64, None), (np.int32, None), (np.int64, None),
             (np.int8, None)]
    for dtype, precision in cases:
        dtype = np.dtype(dtype)
        space = mm.config_space(dtype, precision)
        for i, config in enumerate(space if dtype == np.float16 else space[:1]):
            full = i == 0 and dtype == np.float16
            for problem in _matmul_problems(dtype, precision, full):
                matmul_case(problem, config, target)


def matmul_hopper_cases(target):
    """The Hopper kernel: float16 and TF32 over their whole config spaces (GPT-2's x @ W^T:
    8192 x 768 times a 3072 x 768 weight read transposed); bfloat16 with its first config in
    every operand layout (dX = dY @ W, dW = dY^T @ X, both transposed) and with the bias,
    each activation and the kept pre-activation value, a warp-specialized config in every
    layout and with the epilogue, as a split-epilogue one; the split-K configs on dY^T @ X, and
    a split one and a warp-specialized split one with the fused epilogue (the sum kernel's, and
    the masked one of whole tiles)."""
    def problem(dtype, a_t, b_t, act=0, bias=False, precision=None, sizes=(8192, 3072, 768)):
        M, N, K = sizes
        dtype = np.dtype(dtype)
        strides = {"a": (1, M) if a_t else (K, 1), "b": (1, K) if b_t else (N, 1),
                   "c": (N, 1), "bias": 1}
        vec, mat = placeholder((N,), dtype), placeholder((M, N), dtype)
        arrays = {"a": placeholder((M, K), dtype), "b": placeholder((K, N), dtype), "c": mat,
                  "bias": vec if bias else None, "z": mat if act else None, "row_sum": None}
        return mm.Problem(M, N, K, (), strides, arrays, act, allow_tf32=precision == "tf32")

    def compile_case(p, config):
        mh.launch(mh.plan(p, config, target), 0, p.arrays)

    for config in mh._HALF_SPACE:
        compile_case(problem(np.float16, False, True), config)
    for config in mh._TF32_SPACE:
        compile_case(problem(np.float32, False, True, precision="tf32"), config)
    first = mh._HALF_SPACE[0]
    specialized = next(c for c in mh._HALF_SPACE if c["WARP_SPECIALIZE"])
    for a_t, b_t in itertools.product((False, True), repeat=2):
        compile_case(problem(ml_dtypes.bfloat16, a_t, b_t), first)
        compile_case(problem(ml_dtypes.bfloat16, a_t, b_t), specialized)
    for act in range(len(mm.ACTIVATIONS)):
        compile_case(problem(ml_dtypes.bfloat16, False, True, act, bias=True), first)
    for config in (next(c for c in mh._HALF_SPACE if c["EPILOGUE_SPLIT"]), specialized):
        compile_case(problem(ml_dtypes.bfloat16, False, True, 2, bias=True), config)
    weight_gradient = (3072, 768, 8192)  # 144 tiles: the tail configs split 12 of them
    for config in mh._HALF_SPLIT_SPACE:
        compile_case(problem(ml_dtypes.bfloat16, True, False, sizes=weight_gradient), config)
    for config in (mh._HALF_SPLIT_SPACE[0],
                   next(c for c in mh._HALF_SPLIT_SPACE if c["WARP_SPECIALIZE"])):
        compile_case(problem(ml_dtypes.bfloat16, False, True, 3, bias=True), config)
    for config in mh._TF32_SPLIT_SPACE:
        compile_case(problem(np.float32, True, False, precision="tf32", sizes=weight_gradient),
                     config)


def _matmul_problems(dtype, precision, full):
    """Placeholder problems: row-major 4096^2 products and weight gradients with row sums, and
    with `full` the other layouts and epilogues."""
    def arrays(bias=False, z=False, row_sum=False):
        vec = placeholder((4096,), dtype)
        mat = placeholder((4096, 4096), dtype)
        return {"a": mat, "b": mat, "c": mat, "bias": vec if bias else None,
                "z": mat if z else None, "row_sum": vec if row_sum else None}

    def make(strides, batch=(), act=0, gated=False, **kw):
        problem = mm.Problem(4096, 4096, 4096, batch, strides, arrays(**kw), act, gated)
        problem.precision = precision or problem.precision
        return problem

    row = {"a": (4096, 1), "b": (4096, 1), "c": (4096, 1)}
    weight_grad = {"a": (1, 4096), "b": (4096, 1), "c": (4096, 1)}
    problems = [make(row), make(weight_grad, row_sum=True),
                make({**row, "a": (8192, 1)}, gated=True)]
    if full:
        problems += [make({"a": (1, 4096), "b": (1, 4096), "c": (4096, 1)}),
                     make({"a": (4096 * 64, 64, 1), "b": (4096 * 64, 1, 64),
                           "c": (4096 * 4096, 4096, 1)}, batch=(8,)),
                     make({"a": (0, 4096, 1), "b": (1 << 24, 4096, 1), "c": (1 << 24, 4096, 1)},
                          batch=(4,))]
        problems += [make({**row, "bias": 1}, act=a, bias=True, z=a > 0)
                     for a in range(len(mm.ACTIVATIONS))]
    return problems


def gemv_case(dtype, M, N, K, target, k_major=True, configs=1, precision=None, bias=False,
              act=0, gated=False):
    """Compile the first `configs` gemv configs (all: None) of one skinny product, b (K, N)
    with a unit stride along K (W^T) or N; `gated`: a is (M, 2K) gate/up."""
    b_strides = (1, K) if k_major else (N, 1)
    a_cols = 2 * K if gated else K
    strides = {"a": (a_cols, 1), "b": b_strides, "c": (N, 1)}
    arrays = {"a": placeholder((M, a_cols), dtype), "b": placeholder((K, N), dtype, b_strides),
              "c": placeholder((M, N), dtype), "bias": None, "z": None}
    if bias:
        arrays["bias"], strides["bias"] = placeholder((N,), dtype), 1
    if act:
        arrays["z"] = placeholder((M, N), dtype)
    problem = mm.Problem(M, N, K, (), strides, arrays, act, gated)
    problem.precision = precision or problem.precision
    for config in gemv.config_space(problem)[:configs]:
        gemv.gemv_launch(gemv.Plan(problem, config, target), 0, arrays)


def gemv_cases(target):
    """bfloat16 decode shapes over the whole space at one and 16 rows (o_proj: split, lm_head:
    not; b contiguous along K, and along N), with bias and activation epilogues; strict float32
    over the whole space (its dot is FMA-based), float16 and TF32 with their first configs; odd
    sizes (K tails, partial column blocks); 64-bit offsets; the gated down projection over the
    whole space."""
    bf16, f32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
    for M in (1, 16):
        gemv_case(bf16, M, 2048, 2048, target, configs=None)
        gemv_case(bf16, M, 32000, 2048, target, configs=None)
        gemv_case(bf16, M, 3072, 2048, target, bias=True, act=4)
        gemv_case(bf16, M, 2048, 8192, target, k_major=False, configs=None)
        gemv_case(bf16, M, 2048, 5632, target, configs=None, gated=True)
        gemv_case(np.dtype(np.float16), M, 16384, 2048, target)
        gemv_case(f32, M, 2048, 2048, target, precision="ieee", configs=None)
        gemv_case(f32, M, 2048, 2048, target, precision="tf32", configs=2)
        gemv_case(bf16, M, 1001, 333, target, configs=2, bias=True)
        gemv_case(bf16, M, 1 << 20, 4096, target)


def median_cases(target):
    """The pick kernel for float (NaN search) and integer rows (the sorts: sort's cases)."""
    i64 = np.int64
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, i64, np.int32):
        launch = median._pick(np.dtype(dtype), 64, 0, target)
        median._pick_launch(launch, 0, placeholder((64, 1001), dtype), placeholder((1,), i64),
                            placeholder((64,), dtype), placeholder((1,), i64), 64, 1001)


def norm_cases(target):
    """Forward and backward, LayerNorm and RMSNorm, one pass and chunked, float32/float16/
    bfloat16/float64, with and without the affine parameters."""
    cases = [(np.float32, (512, 4096)), (np.float32, (64, 65536)), (np.float16, (512, 768)),
             (ml_dtypes.bfloat16, (512, 4096)), (np.float64, (64, 100))]
    for dtype, shape_ in cases:
        rows = norm._Rows(placeholder(shape_, dtype), 1, 0)
        _, stats = norm._compute_type(np.dtype(dtype))
        w = placeholder(shape_[1:], dtype)
        vec = placeholder(shape_[:1], stats)
        part = placeholder((64, shape_[1]), stats)
        for rms in (False, True):
            mean = None if rms else vec
            for affine in (w, None):
                norm._forward_launch(norm._forward_plan(rows, rms, target), 0, rows, affine,
                                     None if rms else affine, rows.array, mean, vec, 1e-5)
                norm._backward_launch(norm._backward_plan(rows, 64, 8, rms, target), 0, rows,
                                      rows, affine, mean, vec, rows.array, part,
                                      None if rms else part, 8)


def batch_norm_cases(target):
    """Training-mode batch norm's forward and backward kernels: bf16 channels-last with float32
    parameters (ResNet's stem under autocast), float32 NCHW, float64 3-D without parameters."""
    for dtype, shape_, channels_last, affine in (
            (ml_dtypes.bfloat16, (32, 64, 112, 112), True, True),
            (np.float32, (8, 256, 14, 14), False, True), (np.float64, (16, 40, 9), False, False)):
        n, c, *spatial = shape_
        s = int(np.prod(spatial))
        x = placeholder(shape_, dtype, (s * c, 1, spatial[-1] * c, c) if channels_last else None)
        _, stats = batch_norm._acc_dtype(np.dtype(dtype))
        w = placeholder((c,), np.float32) if affine else None
        vec = placeholder((c,), stats)
        batch_norm.forward(x, w, w, 1e-5, w, w, 0.1, target=target)
        grad_dtype = None if w is None else np.dtype(np.float32)
        batch_norm.backward(x, x, w, vec, vec, grad_dtype, grad_dtype, target=target)


def shape_cases(target):
    """The gather kernel (flip/roll, tril/triu) over 1-3 dims and the cat table kernel."""
    for dtype in (np.float32, ml_dtypes.bfloat16, np.int64, np.bool_):
        x = placeholder((64, 32, 16), dtype)
        for sizes, strides, shifts, triangle in (([64, 512], [512, 1], [0, 3], (0, 0)),
                                                 ([64, 32, 16], [512, 16, 1], [0, 0, 0], (1, 2)),
                                                 ([32768], [-1], [0], (0, 0))):
            launch, dims = shape._gather_plan(x.size, sizes, strides, shifts, triangle, 0, target)
            shape._gather_launch(launch, dims, 0, x, x)
        shape._cat_launch(shape._cat_plan(8, 3, 0, target), 0, placeholder((12,), np.int64), x,
                          1024)


def sort_case(x, out, dim, descending, k, topk, target):
    """Compile the launches of one sort (or topk) of `x` along `dim` into `out`."""
    plan = sort._sort_plan(x, out, dim, descending, k, topk, target)
    plan.run(0, x, out, placeholder(out.shape, np.int64))


def sort_cases(target):
    """Block sorts (one block, chunked, topk candidates) and merges for packed and pair keys,
    and unique's kernels."""
    cases = [((4096, 100), 1, False), ((8, 5000), 1, False), ((5000, 3), 0, True)]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.int64, np.float64, np.int32,
                  np.bool_):
        for shape_, dim, descending in cases[:{np.float32: 3, np.int64: 2}.get(dtype, 1)]:
            x = placeholder(shape_, dtype)
            sort_case(x, x, dim, descending, shape_[dim], False, target)
    sort_case(placeholder((4, 100003), np.float32), placeholder((4, 10), np.float32), 1, True,
              10, True, target)
    index = placeholder((1024,), np.int64)
    for dtype in (np.float32, ml_dtypes.bfloat16, np.int64, np.bool_):
        mat = placeholder((1024, 8), dtype)
        sort._flags_launch(0, mat, index, index, target)
        sort._rows_gather_launch(0, mat, index, mat, 8, 1, target)
    sort._groups_launch(0, index, index, index, index, index, index, target)
    sort._counts_launch(0, index, index, 1024, target)


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
    random._fill_launch(launch, dims, 0, out, src, placeholder((2,), np.int64), 0, 0.0, 1.0)


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
        random._fill_launch(launch, dims, 0, out, None, placeholder((2,), np.int64), 0, 0, 10)
    random_case(random.BERNOULLI, placeholder(shape, np.bool_), None, target)


def amp_cases(target):
    """The unscale kernel for float32, float16, bfloat16 and float64 gradients."""
    flag = placeholder((), np.float32)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        amp._launch_unscale(0, 0, 1, flag, flag, dtype, 0, 0, target=target)


def decode_attention_cases(target):
    """A Llama-3-shaped bfloat16 cache (32 query heads on 8 key/value heads, D=64) at batch 1
    (split, with a mask and a valid length) and batch 16, float16 D=128 without grouping,
    float32 D=80 (padded); the cache write."""
    cases = [(ml_dtypes.bfloat16, 1, 32, 8, 64, True), (ml_dtypes.bfloat16, 16, 32, 8, 64, True),
             (np.float16, 2, 8, 8, 128, False), (np.float32, 1, 4, 2, 80, False)]
    for dtype, batch, heads, kv_heads, head, masked in cases:
        q = placeholder((batch, heads, 1, head), dtype)
        k = placeholder((batch, kv_heads, 384, head), dtype)
        mask = placeholder((batch, 384), np.uint8) if masked else None
        length = placeholder((1,), np.int64) if masked else None
        plan = decode._Plan(q, k, k, mask, length, target)
        rows = batch * heads
        part_out = placeholder((rows, plan.splits, head), np.float32)
        part_lse = placeholder((rows, plan.splits), np.float32)
        counts = placeholder((plan.planes,), np.int32)
        decode._decode_launch(plan, 0, q, k, k, mask, length, q, part_out, part_lse, counts,
                              0.125)
        step = placeholder((batch, kv_heads, 1, head), dtype, (kv_heads * head * 3, head, head, 1))
        decode._write_launch(decode._write_plan(k, step, target), 0, k, k, step, step,
                             placeholder((1,), np.int64))


def optim_cases(target):
    """Every specialization the steps take (option sets, with and without step counters on the
    device and GradScaler's inputs, float32/float16/bfloat16/float64), the counters' advance,
    the norm partials for each norm kind, the combination and the scale."""
    f32 = np.dtype(np.float32)
    for scaled in (False, True):
        optim._launch(optim._advance_kernel, (1,), (0, 0, optim._scaler_inputs(scaled)[1]), {}, 0,
                      0, target)
    for dt in optim._floats():
        def step(fn, scalars, flags):
            optim._launch(fn, (1,), (0, 0, *scalars), optim._step_meta(dt, dt, flags), 0, 0,
                          target)

        for wd, decoupled, amsgrad, mode in ((True, True, False, "host"),
                                             (True, False, True, "device"),
                                             (True, True, True, "tensor lr"),
                                             (False, False, False, "amp")):
            steps = None if mode in ("host", "amp") else [placeholder((), f32)]
            lr = placeholder((), f32) if mode == "tensor lr" else 1e-3
            scalars = optim._adam_scalars(lr, 0.9, 0.999, 1e-8, 1e-2 * wd, decoupled, 0.1, 0.5,
                                          steps, *optim._scaler_inputs(mode != "host"))
            step(optim._adam_kernel, scalars, dict(WEIGHT_DECAY=wd, DECOUPLED=decoupled,
                                                   MAXIMIZE=False, AMSGRAD=amsgrad))
        for wd, momentum, first, nesterov in ((True, True, False, True),
                                             (False, True, True, False),
                                             (False, False, False, False)):
            step(optim._sgd_kernel,
                 (1e-3, 0.9, 1.0, 1e-4, *optim._scaler_inputs(momentum and not first)),
                 dict(WEIGHT_DECAY=wd, MOMENTUM=momentum, FIRST=first, NESTEROV=nesterov,
                      MAXIMIZE=False))
        for centered, momentum in ((True, True), (False, False)):
            step(optim._rmsprop_kernel, (1e-2, 0.99, 0.01, 0.01, 1, 1e-8, 1e-4, 0.9),
                 dict(WEIGHT_DECAY=True, CENTERED=centered, MOMENTUM=momentum,
                      MAXIMIZE=False))
        step(optim._adagrad_kernel, (1e-2, 1e-10, 0.0), dict(WEIGHT_DECAY=False, MAXIMIZE=False))
        ct, np_ct = optim._compute(dt)
        for kind in range(optim._GENERAL_NORM + 1):
            optim._launch(optim._norm_partials_kernel, (1,),
                          (0, 0, placeholder((1,), np_ct), 0, 2.0),
                          dict(NORM=kind, XT=optim._TL[dt.name], CT=ct, BLOCK=optim.BLOCK), 0, 0,
                          target)
            optim._launch(optim._norm_finish_kernel, (1,),
                          (placeholder((1,), np_ct), 1, placeholder((), dt), 0.5),
                          dict(NORM=kind, CT=ct, BLOCK=optim.BLOCK), 0, 0, target)
        optim._scale(0, 0, 1, placeholder((), dt), 1.0, dt, 0, 0, target)


def optim_extra_cases(target):
    """Every kernel with each of its option sets, for float32/float16/bfloat16/float64."""
    for fn, scalars, flag_sets in optim_extra._samples():
        for dt in optim._floats():
            for flags in flag_sets:
                optim._launch(fn, (1,), (0, 0, *scalars), optim._step_meta(dt, dt, flags), 0, 0,
                              target)


def recurrent_cases(target):
    """Forward and backward of both cells in float32/float16/bfloat16/float64, with 32-bit
    and 64-bit indexing; the backward without and with the carried gradients (dh2, dh3)."""
    kernels = (recurrent._lstm_forward_kernel, recurrent._lstm_backward_kernel,
               recurrent._gru_forward_kernel, recurrent._gru_backward_kernel)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for rows in (64, 2 ** 20):
            for fn, absent in itertools.product(kernels, (("dh2_ptr", "dh3_ptr"), ())):
                signature, constexprs = recurrent._specialization(fn, np.dtype(dtype), rows, 1024,
                                                                  absent)
                compile_kernel(fn, signature, constexprs, (), recurrent.NUM_WARPS, 1, target)


def residual_norm_cases(target):
    """bfloat16 rows of a Llama-3-shaped model (2048 wide) for a prompt and a decode step, and
    float32 rows of an odd width."""
    for dtype, rows, width in ((ml_dtypes.bfloat16, 2048, 2048), (ml_dtypes.bfloat16, 1, 2048),
                               (np.float32, 3, 333)):
        x = placeholder((rows, width), dtype)
        residual_norm._launch(residual_norm._plan(x, target), residual_norm._row_geometry(x, x),
                              0, x, x, placeholder((width,), dtype), x, x, 1e-5)


def rotary_cases(target):
    """Llama-3-shaped bfloat16 heads (32 query and 8 key heads of 64) from a fused QKV
    projection, for a 2048-token prompt and a decode step (also written into a cache), and
    float32 heads of 128 (backward)."""
    for dtype, batch, tokens, heads, kv_heads, head, inverse in (
            (ml_dtypes.bfloat16, 1, 2048, 32, 8, 64, False),
            (ml_dtypes.bfloat16, 16, 1, 32, 8, 64, False),
            (np.float32, 2, 33, 12, 4, 128, True)):
        width = (heads + 2 * kv_heads) * head
        qkv = (tokens * width, head, width, 1)
        q = placeholder((batch, heads, tokens, head), dtype, qkv)
        k = placeholder((batch, kv_heads, tokens, head), dtype, qkv)
        cos = placeholder((batch, tokens, head), dtype)
        out_q = placeholder(q.shape, dtype, (tokens * heads * head, head, heads * head, 1))
        out_k = placeholder(k.shape, dtype,
                            (tokens * kv_heads * head, head, kv_heads * head, 1))
        rotary._rotary_launch(rotary._plan(q, k, inverse, target),
                              rotary._rotary_dims(q, k, cos, cos, out_q, out_k), 0, q, k, cos,
                              cos, out_q, out_k)
        if tokens == 1:  # a decode step: rotated keys and the values into a static cache
            cache = placeholder((batch, kv_heads, 4096, head), dtype)
            rotary._cache_launch(rotary._cache_plan(q, k, target), 0, q, k, k, cos, cos, out_q,
                                 cache, cache, placeholder((1,), np.int64))


def swiglu_cases(target):
    """bfloat16 rows of Llama-3-shaped MLPs (intermediate 8192) for a prompt and a decode
    step, and float32 rows of an odd width."""
    for dtype, rows, width in ((ml_dtypes.bfloat16, 2048, 16384), (ml_dtypes.bfloat16, 1, 16384),
                               (np.float32, 7, 2 * 333)):
        x = placeholder((rows, width), dtype)
        swiglu._plan(x, target)(0, x, placeholder((rows, width // 2), dtype), width // 2, width)



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
    splits, split_len = conv._wgrad_splits(dy, x, geometry, w_shape)
    out = placeholder((splits, *w_shape), np.float32 if splits > 1 else dtype)
    launch, dims = conv._wgrad_plan(dy, x, out, geometry, w_shape[2:], splits, split_len, target)
    conv._wgrad_launch(launch, dims, 0, dy, x, out)
    if splits > 1:
        total = placeholder(w_shape, dtype)
        conv._sum_launch(conv._sum_plan(total.size, splits, 0, target), 0, out, total, total.size,
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
        saved, cudnn.allow_tf32 = cudnn.allow_tf32, tf32
        try:
            for x_shape, w_shape, args in layers if dtype == ml_dtypes.bfloat16 else layers[1:2]:
                conv_case(dtype, x_shape, w_shape, args, target, bias=True)
                conv_case(dtype, x_shape, w_shape, args, target, channels_last=True)
                conv_case(dtype, x_shape, w_shape[1::-1] + w_shape[2:], args, target,
                          transposed=True)
                wgrad_case(dtype, x_shape, w_shape, args, target)
        finally:
            cudnn.allow_tf32 = saved
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


def conv_hopper_cases(target):
    """The TMA kernels at the benchmark's shapes (ResNet-50's 3x3 at 56^2 to 7^2, a 1x1, the
    stride-2 3x3 and 1x1, U-Net's 3x3 at 256^2 to 32^2 and its 2x2/2 transposed convolution),
    bf16: the forward into channels-last with bias and into NCHW, the transposed convolution
    (the flipped kernel at stride 1, by output phases at stride 2), and the weight gradient;
    float16 once, float32 (TF32 products) at 14^2 and at stride 2."""
    def channels_last(shape, dtype):
        n, c, h, w = shape
        return placeholder(shape, dtype, (h * w * c, 1, w * c, c))

    layers = [((32, 64, 56, 56), 64, 3, 1), ((32, 128, 28, 28), 128, 3, 1),
              ((32, 256, 14, 14), 256, 3, 1), ((32, 512, 7, 7), 512, 3, 1),
              ((32, 256, 56, 56), 64, 1, 1), ((8, 64, 256, 256), 64, 3, 1),
              ((8, 128, 128, 128), 128, 3, 1), ((8, 512, 32, 32), 512, 3, 1),
              ((32, 128, 56, 56), 128, 3, 2), ((32, 256, 56, 56), 512, 1, 2)]
    for i, (x_shape, c_out, k, stride) in enumerate(layers):
        dtype = {1: np.float16, 2: np.float32, 8: np.float32}.get(i, ml_dtypes.bfloat16)
        n, c, h, w = x_shape
        x, pad = channels_last(x_shape, dtype), (k // 2, k // 2)
        oh, ow = (h + 2 * pad[0] - k) // stride + 1, (w + 2 * pad[1] - k) // stride + 1
        for out, bias, flip in ((channels_last((n, c_out, oh, ow), dtype), True, False),
                                (placeholder((n, c_out, oh, ow), dtype), False, False),
                                (channels_last((n, c_out, h, w), dtype), False, True)):
            weight = placeholder((c, c_out, k, k) if flip else (c_out, c, k, k), dtype)
            packed = placeholder((weight.shape[0], k, k, weight.shape[1]), dtype)
            b = placeholder((c_out,), dtype) if bias else None
            if flip and stride > 1:
                x_t = channels_last((n, c, oh, ow), dtype)
                plan = conv_hopper.PhasePlan(x_t, weight, None, out, pad, target=target)
                plan.run(0, x_t, packed, None, out)
                continue
            plan = conv_hopper.ForwardPlan(x, weight, b, out, pad, flip, stride, target=target)
            plan.run(0, x, packed, b, out)
        dy, dw = channels_last((n, c_out, oh, ow), dtype), placeholder((c_out, c, k, k), dtype)
        conv_hopper.WeightGradPlan(dy, x, dw, pad, stride, target=target).run(0, dy, x, dw)
    bf16 = ml_dtypes.bfloat16
    x, out = channels_last((8, 512, 32, 32), bf16), channels_last((8, 256, 64, 64), bf16)
    weight, b = placeholder((512, 256, 2, 2), bf16), placeholder((256,), bf16)
    packed = placeholder((512, 2, 2, 256), bf16)
    conv_hopper.PhasePlan(x, weight, b, out, (0, 0), target=target).run(0, x, packed, b, out)


def conv_few_channels_cases(target):
    """The weight gradients over an unfolded input: ResNet-50's 7x7/2 RGB stem at batch 32 in
    bf16 (channels-last and NCHW input, the gradient channels-last) and float32 (TF32), U-Net's
    3x3 RGB layer, and a 1-channel audio front end (kernel 10, stride 5)."""
    bf16 = ml_dtypes.bfloat16
    layers = [((32, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3), bf16, True),
              ((32, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3), bf16, False),
              ((32, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3), np.float32, True),
              ((8, 3, 256, 256), (64, 3, 3, 3), (1, 1), (1, 1), bf16, True),
              ((16, 1, 1, 16000), (512, 1, 1, 10), (1, 5), (0, 0), np.float16, True)]
    for x_shape, w_shape, stride, padding, dtype, channels_last in layers:
        n, c, h, w = x_shape
        geometry = conv.Conv(stride, padding, (1, 1), 1)
        oh, ow = conv._out_size((h, w), w_shape[2:], geometry)
        k = w_shape[0]
        x = placeholder(x_shape, dtype, (h * w * c, 1, w * c, c) if channels_last else None)
        dy = placeholder((n, k, oh, ow), dtype, (oh * ow * k, 1, ow * k, k))
        _, _, r, s = w_shape
        dw = placeholder(w_shape, dtype, (r * s * c, 1, s * c, c))
        conv_few_channels.WeightGradPlan(dy, x, dw, geometry, target).run(0, dy, x, dw)


def _spatial_array(shape, dtype, channels_last):
    """A placeholder (N, C, *spatial) array, channels-last or contiguous, as a 3-D view."""
    n, c, *spatial = shape
    if not channels_last:
        return _spatial.as_3d(placeholder(shape, dtype))
    flat = placeholder((n, *spatial, c), dtype).element_strides()
    return _spatial.as_3d(placeholder(shape, dtype, (flat[0], flat[-1], *flat[1:-1])))


def pool_cases(target):
    """ResNet's stem max pool (3x3 stride 2 padding 1) in every float dtype, NCHW and
    channels-last, forward and backward; a dilated 1-D pool, a 2-D one of more taps than
    pool.MAX_UNROLLED (loops) and a 3-D one; average pools of the same windows (undilated);
    the stem pool in float32 over an input past int32 offsets (int64 indexing), of even sizes
    and of odd ones (whose int32 divisions would be multiplications: int64 ones divide)."""
    cases = [((32, 64, 112, 112), (56, 56), (3, 3), (2, 2), (1, 1), (1, 1)),
             ((8, 16, 1000), (497,), (5,), (2,), (2,), (2,)),
             ((4, 8, 30, 30), (24, 24), (7, 7), (1, 1), (0, 0), (1, 1)),
             ((2, 32, 16, 32, 32), (8, 16, 16), (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1))]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for case in cases:
            pool_case(dtype, *case, target)
    pool_case(np.float32, (2, 64, 2048, 16384), (1024, 8192), (3, 3), (2, 2), (1, 1), (1, 1),
              target)
    pool_case(np.float32, (2, 64, 2047, 16383), (1024, 8192), (3, 3), (2, 2), (1, 1), (1, 1),
              target)


def pool_case(dtype, x_shape, out_size, kernel, stride, padding, dilation, target):
    """Compile the max pool's forward and backward and the average pool's launches of one
    geometry, NCHW and (4-D and 5-D inputs) channels-last."""
    for last in (False, True) if len(x_shape) > 3 else (False,):
        x = _spatial_array(x_shape, dtype, last)
        out_shape = (*x_shape[:2], *out_size)
        out = _spatial_array(out_shape, dtype, last)
        index = _spatial_array(out_shape, np.int64, last)
        geometry = pool._geometry(stride, padding, dilation)
        window = _spatial.padded(kernel, 1)
        launch = pool._pool_plan(pool._max_pool_kernel, out.size, (x,), out, window, geometry,
                                 last, target)
        pool._forward_launch(launch, 0, x, out, index)
        launch = pool._pool_plan(pool._max_pool_backward_kernel, x.size, (out, index), x,
                                 window, geometry, last, target)
        pool._backward_launch(launch, 0, out, index, x)
        avg_pool_case(x, out, window, geometry[:6], last, target)


def avg_pool_case(x, out, window, geometry, last, target):
    """Compile the average pool's forward and backward launches (both divisor rules, and
    divisor_override in the forward) of 3-D views `x` and `out`."""
    for count_pad, override, adjoint in ((True, False, False), (False, False, False),
                                         (False, True, False), (True, False, True),
                                         (False, False, True)):
        source, result = (out, x) if adjoint else (x, out)
        launch = pool._pool_plan(pool._avg_pool_kernel, result.size, (source,), result, window,
                                 geometry, last, target, COUNT_PAD=count_pad, OVERRIDE=override,
                                 ADJOINT=adjoint)
        pool._avg_launch(launch, 0, source, result, 3 if override else 0, adjoint)


def special_cases(target):
    """Every special function and polynomial in float32 and float64."""
    for op in special.UNARY_OPS + special.POLYNOMIAL_OPS + ("zeta",):
        for dtype in (np.float32, np.float64):
            x = placeholder((1000,), dtype)
            operands = (x,) if op in special.UNARY_OPS else (x, x)
            special.plan(op, 1000, 0, target)(0, *operands, x, 1000)


def upsample_cases(target):
    """U-Net's 2x bilinear upsampling in every float dtype, NCHW and channels-last, with and
    without align_corners, forward and backward; linear and trilinear."""
    cases = [((32, 64, 128, 128), (256, 256), (0.5, 0.5)),
             ((8, 16, 100), (250,), (0.4,)),
             ((2, 8, 8, 16, 16), (16, 32, 32), (0.5, 0.5, 0.5))]
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for x_shape, out_size, scales in cases:
            for last in (False, True) if len(x_shape) > 3 else (False,):
                x = _spatial_array(x_shape, dtype, last)
                out = _spatial_array((*x_shape[:2], *out_size), dtype, last)
                padded = upsample._scales(scales)
                for align in (False, True):
                    launch = upsample._forward_plan(x, out, len(out_size), align, last, target)
                    upsample._forward_launch(launch, 0, x, out, padded)
                    launch = upsample._backward_plan(out, x, len(out_size), align, last, padded,
                                                     target)
                    upsample._backward_launch(launch, 0, out, x, padded)


CASES = {"amp": amp_cases, "arange": arange_cases, "attention": attention_cases,
         "attention_dropout": attention_dropout_cases,
         "batch_norm": batch_norm_cases, "conv": conv_cases,
         "conv_few_channels": conv_few_channels_cases, "conv_hopper": conv_hopper_cases,
         "copy": copy_cases,
         "decode_attention": decode_attention_cases,
         "elementwise": elementwise_cases, "gemv": gemv_cases, "index": index_cases,
         "index_accumulate": index_accumulate_cases, "index_compact": index_compact_cases,
         "loss": loss_cases, "matmul": matmul_cases, "matmul_hopper": matmul_hopper_cases,
         "median": median_cases, "norm": norm_cases,
         "optim": optim_cases, "optim_extra": optim_extra_cases, "pool": pool_cases,
         "random": random_cases,
         "recurrent": recurrent_cases, "reduce": reduce_cases,
         "residual_norm": residual_norm_cases, "rotary": rotary_cases, "scan": scan_cases,
         "shape": shape_cases, "softmax": softmax_cases, "sort": sort_cases,
         "special": special_cases,
         "swiglu": swiglu_cases, "upsample": upsample_cases}
