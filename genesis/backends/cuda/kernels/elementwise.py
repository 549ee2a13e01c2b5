"""Elementwise kernels: every unary, binary and ternary op of backends/cpu/elementwise.py.

Same contract as the CPU kernels: operands arrive broadcast to one shape (broadcast dims have
stride 0) and cast to one dtype, or as Python scalars (passed as kernel scalars, not device
tensors); the result is a new contiguous array. One exception saves a cast kernel a mixed operation
would need (autocast's bfloat16 output added to a float32 residual): the binary kernels take
float16/bfloat16 arrays beside float32 ones (`READS_HALVES_AS_FLOAT32`), read them as float32
(exact) and compute in float32, as the cast would have them. Half types compute in float32 and
round once; comparisons and predicates give bool. One Triton kernel body serves every op: `OP` (a
constexpr string) selects the formula (kernels/_elementwise_formulas.py), so each (op, dtypes,
layout) is its own small specialization.

Layouts: when every operand is contiguous the 1-D kernel runs; full blocks load and store without
masks (16-byte vectors where pointers are 16-byte aligned), only the last block is masked. Any
other layout is coalesced (kernels/_strided_indexing.py) into at most MAX_DIMS dims and each
operand is read where it lies: when the innermost dim is contiguous or broadcast in every operand
(a bias add, a row mask) a rows x columns tile kernel computes offsets once per row and keeps
16-byte vectors along the columns; otherwise each element's offsets are recomputed from the
output's linear index (int32 arithmetic when the view allows, int64 otherwise). Launches are kept
per geometry; the contiguous kernel is bound once per operand kinds and launched directly.

Block sizes: the 1-D kernel moves 32 bytes per operand per thread (two 16-byte vectors) with 4
warps: BLOCK = 128 threads x 32 bytes / itemsize (1024 float32, 2048 half, 4096 int8/bool), enough
bytes in flight per SM to reach copy bandwidth while keeping the grid large for small tensors.
The rows kernel takes [BR, BC] tiles of 2048 elements, BC up to 256 columns (so rows of 768 or
1000 waste few lanes); the flat strided kernel BLOCK=1024; both 4 warps.

Integer division by zero gives defined values (see kernels/_elementwise_formulas.py).
"""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ....memory_formats import dense_strides, elementwise_order
from ..array_ops import copy_
from ..launch import Const, Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._elementwise_formulas import binary, ternary, unary
from ._math import is_float
from ._strided_indexing import (MAX_DIMS, cdiv, coalesce, dim_sizes, dim_strides, index_type,
                                next_pow2, offsets, program_range, select)

_NUM_WARPS = 4
_STRIDED_BLOCK = 1024


@triton.jit
def _value(x, offs, mask, CT: tl.constexpr, EVEN: tl.constexpr):
    """Operand `x` in the compute type: loaded when a pointer, converted when a scalar."""
    if x is None:
        v = x
    elif x.dtype.is_ptr():
        if EVEN:
            v = tl.load(x + offs).to(CT)
        else:
            v = tl.load(x + offs, mask=mask).to(CT)
    else:
        v = x.to(CT)
    return v


@triton.jit
def _compute(OP: tl.constexpr, ARITY: tl.constexpr, x0, x1, x2, p0, p1, p2, out_ty,
             BOOL: tl.constexpr):
    if ARITY == 1:
        r = unary(OP, x0, p0, p1, p2, BOOL)
    elif ARITY == 2:
        r = binary(OP, x0, x1, BOOL, out_ty)
    else:
        r = ternary(OP, x0, x1, x2, p0)
    if out_ty == tl.int1:
        r = r != 0
    return r.to(out_ty)


@triton.jit
def _block(out_ptr, x0, x1, x2, offs, out_offs, mask, p0, p1, p2, OP: tl.constexpr,
           ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr, EVEN: tl.constexpr):
    """Load, compute and store one block (offs holds each operand's offsets)."""
    v0 = _value(x0, offs[0], mask, CT, EVEN)
    v1 = _value(x1, offs[1], mask, CT, EVEN)
    v2 = _value(x2, offs[2], mask, CT, EVEN)
    r = _compute(OP, ARITY, v0, v1, v2, p0, p1, p2, out_ptr.dtype.element_ty, BOOL)
    if EVEN:
        tl.store(out_ptr + out_offs, r)
    else:
        tl.store(out_ptr + out_offs, r, mask=mask)


@triton.jit
def _contiguous_kernel(
        # the contiguous result; the first operand (a pointer, or a scalar)
        out_ptr, x0,
        # sizes
        n_elements,
        # the other operands and the op parameters (None where the op has none)
        x1, x2, p0, p1, p2,
        # meta-parameters
        OP: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr,
        BLOCK: tl.constexpr):
    """One BLOCK of a contiguous op. Parameters an op may lack (x1, x2, p0..p2: constexpr None
    there) come after those every op has, so that unary, binary and ternary ops without
    parameters have only trailing constexprs (the cheap launch in launch.BoundKernel)."""
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n_elements:
        _block(out_ptr, x0, x1, x2, (offs, offs, offs), offs, None, p0, p1, p2, OP, ARITY, CT,
               BOOL, True)
    else:
        _block(out_ptr, x0, x1, x2, (offs, offs, offs), offs, offs < n_elements, p0, p1, p2, OP,
               ARITY, CT, BOOL, False)


@triton.jit
def _strided_kernel(
        # the contiguous result; the operands (pointers, scalars, or None)
        out_ptr, x0, x1, x2,
        # sizes: elements, then the coalesced dims (size0 is never read)
        n_elements,
        # the op parameters (or None)
        p0, p1, p2,
        size1, size2, size3, size4, size5,
        # strides of each operand, in elements
        x0_stride0, x0_stride1, x0_stride2, x0_stride3, x0_stride4, x0_stride5,
        x1_stride0, x1_stride1, x1_stride2, x1_stride3, x1_stride4, x1_stride5,
        x2_stride0, x2_stride1, x2_stride2, x2_stride3, x2_stride4, x2_stride5,
        # meta-parameters
        OP: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr,
        NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Elements pid*BLOCK.. of the result, each operand's offsets from the linear index."""
    linear = program_range(BLOCK, INDEX64)
    sizes = (1, size1, size2, size3, size4, size5)
    offs = (offsets(linear, sizes, (x0_stride0, x0_stride1, x0_stride2, x0_stride3, x0_stride4,
                                    x0_stride5), NDIM),
            offsets(linear, sizes, (x1_stride0, x1_stride1, x1_stride2, x1_stride3, x1_stride4,
                                    x1_stride5), NDIM),
            offsets(linear, sizes, (x2_stride0, x2_stride1, x2_stride2, x2_stride3, x2_stride4,
                                    x2_stride5), NDIM))
    _block(out_ptr, x0, x1, x2, offs, linear, linear < n_elements, p0, p1, p2, OP, ARITY, CT,
           BOOL, False)


@triton.jit
def _rows_kernel(
        # the contiguous result; the operands (pointers, scalars, or None)
        out_ptr, x0, x1, x2,
        # sizes: rows (the outer dims), columns (the innermost dim)
        n_rows, n_cols,
        # the op parameters (or None)
        p0, p1, p2,
        # the coalesced outer dims (size0 is never read)
        size1, size2, size3, size4,
        # strides, in elements: of each operand over the outer dims, then along the columns
        x0_row_stride0, x0_row_stride1, x0_row_stride2, x0_row_stride3, x0_row_stride4,
        x1_row_stride0, x1_row_stride1, x1_row_stride2, x1_row_stride3, x1_row_stride4,
        x2_row_stride0, x2_row_stride1, x2_row_stride2, x2_row_stride3, x2_row_stride4,
        x0_col_stride, x1_col_stride, x2_col_stride,
        # meta-parameters
        OP: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BOOL: tl.constexpr,
        NDIM: tl.constexpr, INDEX64: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """A [BR, BC] tile of rows (the outer dims, offsets computed once per row) x columns (the
    innermost dim, of column stride 1, or 0 when broadcast). The grid is 1-D (rows and columns
    can each exceed the 65535 programs of grid axis 1): column blocks vary fastest."""
    col_blocks = tl.cdiv(n_cols, BC)
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    r = (pid // col_blocks) * BR + tl.arange(0, BR)
    c = (pid % col_blocks) * BC + tl.arange(0, BC)
    sizes = (1, size1, size2, size3, size4)
    x0_rows = offsets(r, sizes, (x0_row_stride0, x0_row_stride1, x0_row_stride2, x0_row_stride3,
                                 x0_row_stride4), NDIM)
    x1_rows = offsets(r, sizes, (x1_row_stride0, x1_row_stride1, x1_row_stride2, x1_row_stride3,
                                 x1_row_stride4), NDIM)
    x2_rows = offsets(r, sizes, (x2_row_stride0, x2_row_stride1, x2_row_stride2, x2_row_stride3,
                                 x2_row_stride4), NDIM)
    offs = (x0_rows[:, None] + c[None, :] * x0_col_stride,
            x1_rows[:, None] + c[None, :] * x1_col_stride,
            x2_rows[:, None] + c[None, :] * x2_col_stride)
    mask = (r < n_rows)[:, None] & (c < n_cols)[None, :]
    _block(out_ptr, x0, x1, x2, offs, r[:, None] * n_cols + c[None, :], mask, p0, p1, p2, OP,
           ARITY, CT, BOOL, False)


UNARY_OPS = (
    "neg", "abs", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "sigmoid", "relu", "erf", "erfc", "gelu", "gelu_tanh", "silu", "mish", "log_sigmoid",
    "hardsigmoid", "hardswish", "floor", "ceil", "trunc", "frac", "sign", "sgn", "reciprocal",
    "square", "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not")
DERIVATIVE_OPS = ("relu_backward", "tanh_backward", "sigmoid_backward", "silu_backward",
                  "gelu_backward", "gelu_tanh_backward")
BINARY_OPS = (
    "add", "sub", "mul", "div", "floor_divide", "trunc_divide", "remainder", "fmod", "pow",
    "maximum", "minimum", "fmax", "fmin", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "hypot", "logaddexp", "xlogy", "copysign",
    "heaviside") + DERIVATIVE_OPS
TERNARY_OPS = ("where", "clamp", "lerp", "addcmul", "addcdiv")
_DIVISIONS = ("floor_divide", "trunc_divide", "remainder", "fmod")
PARAMETRIC_OPS = ("elu", "leaky_relu", "softplus", "hardshrink", "softshrink", "round",
                  "nan_to_num")
PREDICATES = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                        "logical_xor", "isnan", "isinf", "isfinite", "signbit", "logical_not"))

_BOOL = np.dtype(np.bool_)
_COMPUTE = {np.dtype(np.float16): (tl.float32, "fp32"),
            np.dtype(ml_dtypes.bfloat16): (tl.float32, "fp32"),
            np.dtype(np.float32): (tl.float32, "fp32"), np.dtype(np.float64): (tl.float64, "fp64"),
            _BOOL: (tl.int8, "i64"), np.dtype(np.uint8): (tl.uint8, "i64"),
            np.dtype(np.int8): (tl.int8, "i64"), np.dtype(np.int16): (tl.int16, "i64"),
            np.dtype(np.int32): (tl.int32, "i64"), np.dtype(np.int64): (tl.int64, "i64")}


def _arity(op):
    return 3 if op in TERNARY_OPS else 2 if op in BINARY_OPS else 1


def compute_type(dtype):
    """(Triton compute dtype, kernel scalar type) for data of numpy `dtype`."""
    return _COMPUTE[dtype]


def _data_dtype(op, operands):
    """The dtype the op computes on (a where's condition does not count)."""
    values = operands[1:] if op == "where" else operands
    for x in values:
        if isinstance(x, CUDAArray):
            return x.dtype
    from .... import dtypes
    if all(isinstance(x, bool) for x in values):
        return _BOOL
    if all(isinstance(x, int) for x in values):
        return np.dtype(np.int64)
    return dtypes.get_default_dtype().numpy_dtype


def _block_size(dtype):
    """32 bytes of each operand per thread, 4 warps (see the module docstring)."""
    return 128 * 32 // dtype.itemsize


def run(op, operands, params=(), dtype=None):
    """A new array holding `op` applied to `operands` (arrays of one shape or scalars) with op
    parameters `params`, computed in `dtype` (default: the arrays'), laid out as PyTorch lays
    out its results (channels-last in, channels-last out): contiguous when the first array is,
    as the array operands when they share one dense layout in its dtype (_laid_out_alike),
    else dense in the order of memory_formats.elementwise_order (_run_in_order)."""
    ref = operands[0]
    if ref.__class__ is not CUDAArray:
        ref = next(x for x in operands if x.__class__ is CUDAArray)
    device = ref.storage.device
    activate(device)
    stream = current_stream_handle(device)
    if dtype is None:
        dtype = ref.dtype if op != "where" else _data_dtype(op, operands)
    out = CUDAArray.empty(ref.shape, _BOOL if op in PREDICATES else dtype, device, stream)
    if ref.strides != out.strides and not ref.is_contiguous():
        if _laid_out_alike(ref, operands, out.dtype):
            out = CUDAArray(out.storage, out.shape, ref.strides, out.offset, out.dtype)
        else:
            order = elementwise_order(ref.shape, tuple(x.element_strides() for x in operands
                                                       if x.__class__ is CUDAArray))
            if order != tuple(range(len(order))):
                return _run_in_order(op, out, operands, params, dtype, stream, order)
    if out.storage.nbytes:
        write(op, out, operands, _typed(params, dtype) if params else (), dtype, stream)
    return out


def _run_in_order(op, out, operands, params, dtype, stream, order):
    """`out` (new, contiguous) laid out dense with its dims in `order` (outermost first), and
    `op` written into it: through views of it and of the array operands with their dims in
    that order, so that the kernel writes in memory order."""
    strides = tuple(s * out.itemsize for s in dense_strides(out.shape, order))
    out = CUDAArray(out.storage, out.shape, strides, out.offset, out.dtype)
    if out.storage.nbytes:
        write(op, _permuted(out, order), [_permuted(x, order) for x in operands],
              _typed(params, dtype) if params else (), dtype, stream)
    return out


def _permuted(x, order):
    """The array `x` viewed with its dims in `order` (a scalar as it is)."""
    if x.__class__ is not CUDAArray:
        return x
    return CUDAArray(x.storage, tuple(x.shape[d] for d in order),
                     tuple(x.strides[d] for d in order), x.offset, x.dtype)


def _laid_out_alike(arr, operands, dtype):
    """Whether `arr` is dense in some order of its dims (channels-last, a transpose) and every
    array operand has its strides and `dtype`: elementwise, positions then match element by
    element in memory, and `write` runs the contiguous kernel over it in order."""
    for x in operands:
        if x.__class__ is CUDAArray and (x.strides != arr.strides or x.dtype is not dtype):
            return False
    return _permuted_dense(arr)


def _padded(operands):
    """The operands as the kernels take them: x0, x1, x2, None where the op has fewer."""
    return tuple(operands) + (None,) * (3 - len(operands))


def _typed(params, dtype):
    """Op parameters as the kernel reads them (float for floating data, int otherwise)."""
    cast = float if is_float(dtype) else int
    return tuple(cast(p) for p in params)


_contiguous_launches = {}
_strided_plans = LaunchCache()


def write(op, out, operands, params, dtype, stream):
    """Compute `op` into `out`, reading each operand where it lies. `out` is contiguous, or
    dense in the layout that every array operand shares in its dtype (run's _laid_out_as).

    The hot path (every array operand contiguous) is one pass over the operands that builds
    the kernel's key and arguments together (_contiguous_args' order, addresses for arrays),
    one dict lookup for the bound kernel (with its block size) and the launch."""
    out_ptr, out_strides, out_dtype = out.ptr, out.strides, out.dtype
    n = out.size
    key, args, aligned = [op, dtype, len(params)], [out_ptr], out_ptr % 16 == 0
    for x in operands:
        if x.__class__ is CUDAArray:
            if not (x.strides == out_strides and x.dtype is out_dtype) and not x.is_contiguous():
                _write_strided(op, out, _padded(operands), params, dtype, stream)
                return
            ptr = x.ptr
            key.append(x.dtype)
            args.append(ptr)
            aligned = aligned and ptr % 16 == 0
        else:
            key.append(x.__class__)
            args.append(x)  # an absent operand (a clamp bound) is a constexpr None
    args.insert(2, n)  # the kernel takes n after out and x0
    if params:
        args += [None] * (5 - len(args))  # the parameters follow x1 and x2
    elif args[-1] is None:  # absent last operands are trailing constants: not passed
        while args[-1] is None:
            args.pop()
    key.append(aligned)
    key.append(out.storage.device)
    key = tuple(key)
    launch = _contiguous_launches.get(key)
    if launch is None:
        launch = _contiguous_launches[key] = _bound_contiguous(
            op, out, _padded(operands), params, dtype, aligned)
    kernel, block = launch
    kernel(((n + block - 1) // block,), stream, *args, *params)


def _bound_contiguous(op, out, operands, params, dtype, aligned):
    """(the contiguous kernel bound for these operand kinds, its BLOCK), which `write` launches
    itself over grids of any size: hints on the pointers only (n may be anything), and on them
    only when every one is aligned (the key says no more)."""
    per_call = ("n_elements",) if aligned else ("n_elements", "out_ptr", "x0", "x1", "x2")
    launch = _contiguous_plan(op, out, operands, dtype, per_call)
    return launch.bind(_contiguous_args(out, operands, _padded(params))), launch.meta["BLOCK"]


def _write_strided(op, out, operands, params, dtype, stream):
    key = (op, out.shape, out.dtype, out.ptr % 16 == 0, tuple(map(_geometry, operands)),
           len(params), out.device)
    launcher, launch, dims = _strided_plans.get_or_build(
        key, lambda: _strided_plan(op, out, operands, dtype))
    if launch is None:
        _write_by_leading_dim(op, out, operands, params, dtype, stream)
        return
    launcher(launch, dims, stream, out, operands, _padded(params))


def _geometry(x):
    """What a specialization depends on: an array's layout, dtype and alignment, else the
    scalar's type (or None)."""
    if isinstance(x, CUDAArray):
        return x.strides, x.dtype, x.ptr % 16 == 0
    return None if x is None else type(x)


def _elementwise_launch(kernel, grid, meta, out, operands, dtype, ity, per_call=(),
                        target=None):
    """A Launch of one of the elementwise kernels: the compute type added to `meta`; scalar
    operands and op parameters in the data's scalar type, never assumed aligned."""
    ct, scalar_ty = compute_type(dtype)
    meta = dict(meta, CT=ct, BOOL=dtype == _BOOL)
    scalars = tuple(f"x{i}" for i, x in enumerate(operands) if x.__class__ is not CUDAArray)
    types = dict.fromkeys(_SCALAR_NAMES, scalar_ty)
    types["n_elements"] = "i64"
    return Launch(kernel, grid, meta, _NUM_WARPS, int_type=ity, types=types,
                  per_call=scalars + ("p0", "p1", "p2") + per_call, device=out.device,
                  target=target)


_SCALAR_NAMES = ("x0", "x1", "x2", "p0", "p1", "p2")


def _contiguous_plan(op, out, operands, dtype, per_call=(), target=None):
    """The launch of the contiguous kernel over `out`."""
    block = _block_size(dtype)
    meta = dict(OP=op, ARITY=_arity(op), BLOCK=block)
    return _elementwise_launch(_contiguous_kernel, (cdiv(out.size, block),), meta, out,
                               operands, dtype, "i64", per_call, target)


def _contiguous_args(out, operands, params):
    """The parameters of _contiguous_kernel, in order (operands and params padded to three)."""
    x0, x1, x2 = operands
    p0, p1, p2 = params
    return (out, x0,  # the result, the first operand
            out.size,  # sizes
            x1, x2, p0, p1, p2)  # the other operands, the op parameters


def _contiguous_launch(launch, dims, stream, out, operands, params):
    """The call of _contiguous_kernel (`dims` is None: the kernel needs no geometry)."""
    launch(stream, *_contiguous_args(out, operands, params))


def _strided_launch(launch, dims, stream, out, operands, params):
    """The call of _strided_kernel; `dims` as _strided_plan makes them."""
    sizes, (x0_strides, x1_strides, x2_strides) = dims
    x0, x1, x2 = operands
    p0, p1, p2 = params
    launch(stream,
           # the result, the operands
           out, x0, x1, x2,
           # sizes
           out.size,
           # the op parameters
           p0, p1, p2,
           # sizes
           *sizes,
           # strides
           *x0_strides, *x1_strides, *x2_strides)


def _rows_launch(launch, dims, stream, out, operands, params):
    """The call of _rows_kernel; `dims` as _strided_plan makes them."""
    n_rows, n_cols, sizes, (x0_rows, x1_rows, x2_rows), col_strides = dims
    x0, x1, x2 = operands
    p0, p1, p2 = params
    launch(stream,
           # the result, the operands
           out, x0, x1, x2,
           # sizes
           n_rows, n_cols,
           # the op parameters
           p0, p1, p2,
           # sizes of the outer dims
           *sizes,
           # strides
           *x0_rows, *x1_rows, *x2_rows, *col_strides)


# Tiles of the rows kernel (see the module docstring): rows of at least 16 columns, [BR, BC]
# tiles of 2048 elements with BC up to 256; the flat strided kernel takes 1024 elements.
_MIN_ROW = 16
_ROW_TILE = 2048
_ROW_BLOCK_MAX = 256


def _strided_plan(op, out, operands, dtype, target=None):
    """(launcher, launch, dims) for operands laid out like these ((None, None, None) when more
    than MAX_DIMS dims remain): the 1-D kernel when they coalesce to contiguous, the rows kernel
    when the innermost dim is contiguous or broadcast in every operand (and long enough), else
    the flat strided one."""
    arrays = [x for x in operands if isinstance(x, CUDAArray)]
    sizes, strides = coalesce(out.shape, out.element_strides(),
                              *(x.element_strides() for x in arrays))
    if len(sizes) == 1 and all(s == (1,) for s in strides):
        return _contiguous_launch, _contiguous_plan(op, out, operands, dtype, (), target), None
    if len(sizes) > MAX_DIMS:
        return None, None, None
    strides = strides[1:]
    ity = index_type(sizes, *strides)
    meta = dict(OP=op, ARITY=_arity(op), NDIM=len(sizes), INDEX64=ity == "i64")
    if sizes[-1] >= _MIN_ROW and all(st[-1] in (0, 1) for st in strides):
        cols, rows = sizes[-1], out.size // sizes[-1]
        bc = min(next_pow2(cols), _ROW_BLOCK_MAX)
        br = min(next_pow2(rows), max(1, _ROW_TILE // bc))
        meta.update(NDIM=len(sizes) - 1, BR=br, BC=bc)
        launch = _elementwise_launch(_rows_kernel, (cdiv(rows, br) * cdiv(cols, bc),), meta, out,
                                     operands, dtype, ity, target=target)
        row_strides = tuple(dim_strides(st, MAX_DIMS - 1) for st in
                            _per_operand(operands, [st[:-1] for st in strides], ()))
        col_strides = tuple(Const(st[-1]) for st in
                            _per_operand(operands, [st[-1:] for st in strides], (0,)))
        return _rows_launch, launch, (rows, cols, dim_sizes(sizes[:-1], MAX_DIMS - 1),
                                      row_strides, col_strides)
    meta["BLOCK"] = _STRIDED_BLOCK
    launch = _elementwise_launch(_strided_kernel, (cdiv(out.size, _STRIDED_BLOCK),), meta, out,
                                 operands, dtype, ity, target=target)
    operand_strides = tuple(dim_strides(st, MAX_DIMS)
                            for st in _per_operand(operands, strides, ()))
    return _strided_launch, launch, (dim_sizes(sizes, MAX_DIMS), operand_strides)


def _per_operand(operands, values, default):
    """`values` (one per array operand) spread over the three operand slots."""
    it = iter(values)
    return [next(it) if isinstance(x, CUDAArray) else default for x in operands]


def _write_by_leading_dim(op, out, operands, params, dtype, stream):
    """More than MAX_DIMS non-mergeable dims (rare): one launch per index of the first dim."""
    for i in range(out.shape[0]):
        write(op, select(out, 0, i), tuple(select(x, 0, i) for x in operands if x is not None),
              params, dtype, stream)


def _unary_kernel(op):
    def kernel(x):
        return run(op, (x,))
    return _named(kernel, op)


_FLOAT32 = np.dtype(np.float32)


def _run_binary(op, a, b):
    """run(op, (a, b)); a half-type array beside a float32 one is read as float32 (see the
    module docstring)."""
    if a.__class__ is CUDAArray and b.__class__ is CUDAArray and a.dtype is not b.dtype:
        return run(op, (a, b), dtype=_FLOAT32)
    return run(op, (a, b))


def _binary_kernel(op):
    def kernel(a, b):
        return _run_binary(op, a, b)
    kernel.READS_HALVES_AS_FLOAT32 = True
    return _named(kernel, op)


def _derivative_kernel(op):
    """A binary kernel with the CPU derivative kernels' parameter names (gradient, value)."""
    def kernel(g, v):
        return _run_binary(op, g, v)
    kernel.READS_HALVES_AS_FLOAT32 = True
    return _named(kernel, op)


def _division_kernel(op):
    """A binary kernel that raises, as the CPU kernels, for an integer division by a Python
    scalar zero (checked on the host for free; zeros inside a divisor array give the defined
    values of the module docstring instead: finding them would cost a device sync)."""
    def kernel(a, b):
        if not isinstance(b, CUDAArray) and b == 0 and not is_float(a.dtype):
            raise RuntimeError(f"ZeroDivisionError: {op}: integer division by zero")
        return _run_binary(op, a, b)
    kernel.READS_HALVES_AS_FLOAT32 = True
    return _named(kernel, op)


def _named(kernel, op):
    kernel.__name__ = kernel.__qualname__ = op
    kernel.__doc__ = f"Elementwise `{op}` on the GPU (see the module docstring)."
    return kernel


for _op in UNARY_OPS:
    register(_op, "cuda")(_unary_kernel(_op))
for _op in BINARY_OPS:
    register(_op, "cuda")((_division_kernel if _op in _DIVISIONS else
                           _derivative_kernel if _op in DERIVATIVE_OPS else _binary_kernel)(_op))


@register("elu", "cuda")
def elu(x, alpha, scale, input_scale):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)): elu, selu and celu."""
    return run("elu", (x,), (alpha, scale, input_scale))


@register("leaky_relu", "cuda")
def leaky_relu(x, negative_slope):
    return run("leaky_relu", (x,), (negative_slope,))


@register("softplus", "cuda")
def softplus(x, beta=1.0, threshold=20.0):
    return run("softplus", (x,), (beta, threshold))


@register("hardshrink", "cuda")
def hardshrink(x, lambd):
    """x where |x| > lambd, else 0."""
    return run("hardshrink", (x,), (lambd,))


@register("softshrink", "cuda")
def softshrink(x, lambd):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return run("softshrink", (x,), (lambd,))


@register("round", "cuda")
def round_(x, decimals=0):
    """Round half to even at `decimals` digits (integers are returned as they are)."""
    if not is_float(x.dtype):
        return run("round", (x,))
    return run("round", (x,), (10.0 ** abs(decimals), 1.0 if decimals < 0 else 0.0))


@register("nan_to_num", "cuda")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN and +-inf replaced; the defaults are the largest finite values of x's own dtype."""
    if not is_float(x.dtype):
        return run("nan_to_num", (x,))
    info = ml_dtypes.finfo(x.dtype)
    return run("nan_to_num", (x,), (float(nan), float(info.max if posinf is None else posinf),
                                    float(info.min if neginf is None else neginf)))


@register("clamp", "cuda")
def clamp(x, low, high):
    """Clamp to [low, high]; either bound may be None, a scalar or an array; NaN propagates."""
    return run("clamp", (x, _scalar_like(low, x.dtype), _scalar_like(high, x.dtype)))


def _scalar_like(value, dtype):
    """A Python float bound of integer data truncated to an int, as the CPU kernels convert it
    (hardtanh/relu6 pass float bounds whatever the dtype); arrays and None pass through."""
    if isinstance(value, float) and not is_float(dtype):
        return int(value)
    return value


@register("where", "cuda")
def where(cond, a, b):
    return run("where", (cond, a, b))


@register("lerp", "cuda")
def lerp(start, end, weight):
    """PyTorch's two-sided form: exact at both ends (weight 0 gives start, 1 gives end)."""
    return run("lerp", (start, end, weight))


@register("addcmul", "cuda")
def addcmul(x, a, b, value):
    return run("addcmul", (x, a, b), (value,))


@register("addcdiv", "cuda")
def addcdiv(x, a, b, value):
    return run("addcdiv", (x, a, b), (value,))


def _permuted_dense(arr):
    """True when `arr` fills its elements' span without gaps in some order of its dims (a
    contiguous array with its dims permuted: channels-last, a transpose)."""
    span = 1
    for stride, size in sorted((s, n) for s, n in zip(arr.element_strides(), arr.shape)
                               if n != 1):
        if stride != span:
            return False
        span *= size
    return True


@register("elementwise_into", "cuda")
def elementwise_into(op, out, operands, params=()):
    """`op` of `operands` (arrays of out's shape and dtype, or scalars) written into `out`, for
    the in-place ops. Straight into `out` when it is contiguous (or dense in another order, with
    every array operand laid out as it: _laid_out_alike) and every operand that shares its memory
    is `out` itself, read and written by the same program; otherwise (a strided destination, an
    operand overlapping it another way) computed aside and copied in."""
    dtype, storage = out.dtype, out.storage
    params = _typed(params, dtype) if params else ()
    if ((out.is_contiguous() or _laid_out_alike(out, operands, dtype))
            and all(x.__class__ is not CUDAArray or x.storage is not storage
                    or (x.ptr == out.ptr and x.strides == out.strides) for x in operands)):
        activate(out.device)
        write(op, out, operands, params, dtype, current_stream_handle(out.device))
    else:
        copy_(out, run(op, operands, params))
    return out
