"""Reductions over any dims with `keepdim`, scans and softmax, as PyTorch.

Each reduction normalizes its dims once here and calls one kernel; backward broadcasts the
output gradient back over the reduced dims (`expand_reduced`: unsqueeze and expand views) and is
written with genesis ops, so it serves every device and is itself differentiable.
"""

import builtins
import math

import numpy as np

from .. import dtypes
from ..autograd.function import Function, name_node, records
from ..autograd.grad_mode import is_grad_enabled
from ..dispatch import has_kernel, kernel
from ..tensor import Tensor, wrap_dim
from .autocast import autocast_policy
from .common import call, cast, make_view, normalize_dims, wrap
from .elementwise import abs, exp, isnan, logical_not, maximum, minimum, sign, where
from .named_tuples import return_type
from .ranges import arange

_INF = float("inf")


def reduce_dims(x, dim, op, empty_means_all=True):
    """`dim` as a sorted tuple of axes of `x`; None (and, by default, an empty list) mean all."""
    if dim is None:
        return tuple(range(len(x._data.shape)))
    if x.ndim == 0:
        normalize_dims(dim, 1, op)
        return ()
    if empty_means_all and not isinstance(dim, (int, np.integer)) and len(dim) == 0:
        dim = None
    return normalize_dims(dim, x.ndim, op)


def kept_shape(shape, dims):
    """`shape` with the reduced `dims` set to 1 (the keepdim=True output shape)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def accumulate_dtype(dtype):
    """The dtype a sum or product of `dtype` gives: int64 for integers and bools, else `dtype`."""
    return dtype if dtype.is_floating_point else dtypes.int64


def _dtype_arg(dtype):
    return dtypes.as_dtype(dtype) if dtype is not None else None


def _check_float(x, op, message=None):
    if not x.dtype.is_floating_point:
        raise RuntimeError(message or f"{op}(): expected a floating point tensor, got "
                           f"{x.dtype.name}")


def _check_nonempty(x, dim, dims, op):
    """PyTorch's errors for reductions without an identity (max, amin, ...) over nothing."""
    if x.numel():
        return
    if dim is None or dim == ():
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    empty = next((d for d in dims if x.shape[d] == 0), None)
    if empty is not None:
        raise IndexError(f"{op}(): Expected reduction dim {empty} to have non-zero size.")


def _reduces_empty(x, dims):
    """True when some reduced dim has size 0 (nothing to take a max or min of)."""
    return builtins.any(x.shape[d] == 0 for d in dims)


def expand_reduced(g, shape, dims, keepdim):
    """The gradient `g` of a reduction over `dims` broadcast back to the input `shape` (a view)."""
    if not keepdim:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(tuple(shape))


def _keep(t, shape, dims, keepdim):
    """A reduction result `t` in keepdim form, so it broadcasts against the input."""
    return t if keepdim else expand_reduced(t, kept_shape(shape, dims), dims, False)


class Reduction(Function):
    """A reduction over `dims` computed by `kernel(x, dims, keepdim, *args)`.

    Subclasses give `gradient(ctx, g, x, out)`: the input's gradient from `g` already broadcast
    back over the reduced dims (x and the keepdim-shaped out are passed when `saves` is set).
    """

    kernel = None
    saves = False

    @classmethod
    def forward(cls, ctx, x, dims, keepdim, *args):
        ctx.shape, ctx.dims, ctx.keepdim, ctx.args = x._data.shape, dims, keepdim, args
        out = cls.compute(x, dims, keepdim, *args)
        if cls.saves:
            ctx.save_for_backward(x, out)
        return out

    @classmethod
    def compute(cls, x, dims, keepdim, *args):
        return wrap(call(cls.kernel, x, dims, keepdim, *args, device=x.device), x.device)

    @classmethod
    def backward(cls, ctx, g):
        saved = ctx.saved_tensors
        if saved:
            saved = (saved[0], _keep(saved[1], ctx.shape, ctx.dims, ctx.keepdim))
        gx = cls.gradient(ctx, expand_reduced(g, ctx.shape, ctx.dims, ctx.keepdim), *saved)
        return (gx,) + (None,) * (len(ctx.needs_input_grad) - 1)


class Accumulation(Reduction):
    """sum, nansum and prod: `dtype` casts the input first; integers and bools give int64."""

    @classmethod
    def compute(cls, x, dims, keepdim, dtype):
        out_dtype = dtype or accumulate_dtype(x.dtype)
        data = call(cls.kernel, cast(x, dtype or x.dtype), dims, keepdim, out_dtype,
                    device=x.device)
        return wrap(data, x.device, out_dtype)


class Sum(Accumulation):
    kernel = "sum"

    @staticmethod
    def gradient(ctx, g):
        return g


class NanSum(Accumulation):
    kernel, saves = "nansum", True

    @staticmethod
    def gradient(ctx, g, x, out):
        # A product, not a select, as PyTorch: an inf or nan gradient (the mean of an all-nan
        # slice divides by a zero count) reaches the nan elements as nan.
        return g * logical_not(isnan(x))


def _overload_1(out, dim, op):
    """`out` named as PyTorch's dim overload of `op` (e.g. SumBackward1) when dims were given."""
    return out if dim is None else name_node(out, f"{op}Backward1")


@autocast_policy("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (all dims by default); integer and bool inputs give int64. A call no graph
    records computes the values alone."""
    dims = reduce_dims(input, dim, "sum")
    if records(input):  # PyTorch's sum over given dims is its overload 1
        return _overload_1(Sum.apply(input, dims, keepdim, _dtype_arg(dtype)), dim, "Sum")
    return Sum.compute(input, dims, keepdim, _dtype_arg(dtype))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    return NanSum.apply(input, reduce_dims(input, dim, "nansum"), keepdim, _dtype_arg(dtype))


class Mean(Reduction):
    kernel = "mean"

    @staticmethod
    def gradient(ctx, g):
        return g / builtins.max(math.prod(ctx.shape[d] for d in ctx.dims), 1)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over `dim`; floating inputs only (or a floating `dtype`); empty gives nan."""
    dtype = _dtype_arg(dtype)
    x = input if dtype is None else input.to(dtype)
    _check_float(x, "mean", f"mean(): could not infer output dtype. "
                 f"{'Input' if dtype is None else 'Optional'} dtype must be either a floating "
                 f"point or complex dtype. Got: {dtypes.scalar_type_name(x.dtype)}")
    dims = reduce_dims(x, dim, "mean")
    if records(x):
        return _overload_1(Mean.apply(x, dims, keepdim), dim, "Mean")
    return Mean.compute(x, dims, keepdim)


class Prod(Accumulation):
    kernel, saves = "prod", True

    @staticmethod
    def gradient(ctx, g, x, out):
        """d/dx_i = product of the others, exact with zeros: with one zero only it gets a
        gradient, and the others' gradients keep their derivative with respect to that zero."""
        zero = x == 0
        nonzero_prod = Prod.apply(where(zero, 1.0, x), ctx.dims, True, None)
        zero_prod = Prod.apply(where(zero, x, 1.0), ctx.dims, True, None)
        single_zero = sum(zero, ctx.dims, keepdim=True) == 1
        at_zero = g * where(single_zero, nonzero_prod, 0.0)
        at_nonzero = g * (nonzero_prod * zero_prod) / where(zero, 1.0, x)
        return where(zero, at_zero, at_nonzero)


@autocast_policy("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over one `dim` (all elements by default); integer and bool inputs give int64."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return Prod.apply(input, reduce_dims(input, dim, "prod"), keepdim, _dtype_arg(dtype))


class Extremum(Reduction):
    """amax/amin (or the median of all elements): ties share the gradient evenly."""

    saves = True

    @classmethod
    def compute(cls, x, dims, keepdim, kernel):
        args = (x,) if kernel == "median" else (x, dims, keepdim)
        return wrap(call(kernel, *args), x.device)

    @staticmethod
    def gradient(ctx, g, x, out):
        hit = (x == out) | (isnan(x) & isnan(out))
        return where(hit, g / sum(hit, ctx.dims, keepdim=True), 0.0)


def _extremum(input, dim, keepdim, kernel, op):
    dims = reduce_dims(input, dim, op)
    _check_nonempty(input, dim, dims, op)
    return Extremum.apply(input, dims, keepdim, kernel)


def amax(input, dim=(), keepdim=False):
    """Maximum over `dim` (all dims by default); ties share the gradient evenly."""
    return name_node(_extremum(input, dim, keepdim, "amax", "amax"), "AmaxBackward0")


def amin(input, dim=(), keepdim=False):
    """Minimum over `dim` (all dims by default); ties share the gradient evenly."""
    return name_node(_extremum(input, dim, keepdim, "amin", "amin"), "AminBackward0")


_RESULTS = {name: return_type(name, ("values", "indices"))
            for name in ("max", "min", "median")}
_MinMax = return_type("aminmax", ("min", "max"))


def _positions(x, dim):
    """0..n-1 along `dim` of `x`, shaped to broadcast against it (stride 0 elsewhere)."""
    n = x.shape[dim]
    line = arange(n, device=x.device)
    shape = [1] * x.ndim
    shape[dim] = n
    strides = [0] * x.ndim
    strides[dim] = 1
    return make_view(line, shape, strides, 0)


class SelectDim(Function):
    """max/min/median along one dim: (values, indices); the gradient goes to the index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, kernel):
        values, indices = call(kernel, x, dim, keepdim)
        values, indices = wrap(values, x.device, x.dtype), wrap(indices, x.device)
        ctx.shape, ctx.dim, ctx.keepdim = tuple(x.shape), dim, keepdim
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        if not ctx.shape:
            return g, None, None, None
        dims = (ctx.dim,)
        g = expand_reduced(g, ctx.shape, dims, ctx.keepdim)
        hit = _positions(g, ctx.dim) == _keep(indices, ctx.shape, dims, ctx.keepdim)
        return where(hit, g, 0.0), None, None, None


def _select_dim(input, dim, keepdim, op):
    dim = wrap_dim(dim, input.ndim, op)
    if input.ndim:
        _check_nonempty(input, dim, (dim,), op)
    return _RESULTS[op](*SelectDim.apply(input, dim, keepdim, op + "_dim"))


def _max_or_min(input, dim, keepdim, op):
    """max or min of everything, along `dim` (values and indices), or against a tensor; the
    values' node named as PyTorch's (MaxBackward1 for all, MaxBackward0 along a dim)."""
    if isinstance(dim, Tensor):
        return (maximum if op == "max" else minimum)(input, dim)
    if dim is None:
        return name_node(_extremum(input, None, False, "a" + op, op), f"{op.title()}Backward1")
    result = _select_dim(input, dim, keepdim, op)
    name_node(result.values, f"{op.title()}Backward0")
    return result


def max(input, dim=None, keepdim=False):
    """max(input) -> value; max(input, dim, keepdim) -> (values, indices); max(a, b) = maximum."""
    return _max_or_min(input, dim, keepdim, "max")


def min(input, dim=None, keepdim=False):
    """min(input) -> value; min(input, dim, keepdim) -> (values, indices); min(a, b) = minimum."""
    return _max_or_min(input, dim, keepdim, "min")


def median(input, dim=None, keepdim=False):
    """The lower median of all elements (nan when empty), or (values, indices) along `dim`."""
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("median: not implemented for 'bool'")
    if dim is None:
        return name_node(Extremum.apply(input, tuple(range(input.ndim)), False, "median"),
                         "MedianBackward0")
    result = _select_dim(input, dim, keepdim, "median")
    name_node(result.values, "MedianBackward1")
    return result


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over `dim` (all dims by default)."""
    dims = reduce_dims(input, dim, "aminmax")
    if _reduces_empty(input, dims):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    return _MinMax(Extremum.apply(input, dims, keepdim, "amin"),
                   Extremum.apply(input, dims, keepdim, "amax"))


def _arg_extremum(input, dim, keepdim, op):
    if input.dtype is dtypes.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if input.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
    else:
        dim = wrap_dim(dim, input.ndim, op)
        if input.ndim:
            _check_nonempty(input, dim, (dim,), op)
    return wrap(call(op, input, dim, keepdim), input.device)


def argmax(input, dim=None, keepdim=False):
    """Index of the first maximum along `dim` (of the flattened input when dim is None)."""
    return _arg_extremum(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    """Index of the first minimum along `dim` (of the flattened input when dim is None)."""
    return _arg_extremum(input, dim, keepdim, "argmin")


class Var(Reduction):
    """Variance with `correction`, or its square root (std) when `take_sqrt`."""

    kernel, saves = "var", True

    @staticmethod
    def gradient(ctx, g, x, out):
        """2 (x - mean) g / (N - correction), through d std = d var / (2 std) (0 where std is 0)."""
        correction, take_sqrt = ctx.args
        if take_sqrt:
            g = where(out == 0, 0.0, g / (2 * out))
        dof = math.prod(ctx.shape[d] for d in ctx.dims) - correction
        return g * (x - mean(x, ctx.dims, keepdim=True)) * (2.0 / dof if dof > 0 else _INF)


def _variance(input, dim, unbiased, keepdim, correction, op, take_sqrt):
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    _check_float(input, op, "std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return name_node(Var.apply(input, reduce_dims(input, dim, op), keepdim, correction, take_sqrt),
                     f"{op.title()}Backward0")


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over `dim` with Bessel's `correction` (1 by default; `unbiased=False` means 0)."""
    return _variance(input, dim, unbiased, keepdim, correction, "var", False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over `dim`; see `var` for the correction."""
    return _variance(input, dim, unbiased, keepdim, correction, "std", True)


def _with_mean(spread, input, dim, keepdim, name):
    """(`spread`, the mean over `dim`), both shown as PyTorch's one node `name` shows them."""
    return (name_node(spread, name),
            name_node(mean(input, None if isinstance(dim, bool) else dim, keepdim), name))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over `dim`."""
    return _with_mean(var(input, dim, unbiased, keepdim, correction=correction), input, dim,
                      keepdim, "VarMeanBackward0")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over `dim`."""
    return _with_mean(std(input, dim, unbiased, keepdim, correction=correction), input, dim,
                      keepdim, "StdMeanBackward0")


class LogSumExp(Reduction):
    kernel, saves = "logsumexp", True

    @staticmethod
    def gradient(ctx, g, x, out):
        return g * exp(x - out)


@autocast_policy("logsumexp")
def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably; integer inputs give the default float."""
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    return name_node(LogSumExp.apply(x, reduce_dims(x, dim, "logsumexp"), keepdim),
                     "LogsumexpBackward0")


class VectorNorm(Reduction):
    """The vector p-norm; where the norm is 0 the gradient is 0, as PyTorch."""

    kernel, saves = "norm", True

    @staticmethod
    def gradient(ctx, g, x, out):
        (p,) = ctx.args
        if p == 0:
            return g * 0
        if p == 1:
            return g * sign(x)
        if p == 2:
            return x * where(out == 0, 0.0, g / out)
        if p in (_INF, -_INF):
            hit = abs(x) == out
            return sign(x) * where(hit, g / sum(hit, ctx.dims, keepdim=True), 0.0)
        scaled = sign(x) * where(x == 0, 0.0, abs(x) ** (p - 1))
        return scaled * where(out == 0, 0.0, g / out ** (p - 1))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """`linalg.vector_norm`: the ord-norm of `x` over `dim` (all dims by default)."""
    if dtype is not None:
        x = x.to(dtypes.as_dtype(dtype))
    _check_float(x, "linalg.vector_norm", "linalg.vector_norm: Expected a floating point or "
                 f"complex tensor as input. Got {dtypes.scalar_type_name(x.dtype)}")
    dims = reduce_dims(x, dim, "linalg.vector_norm")
    if ord in (_INF, -_INF) and _reduces_empty(x, dims):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor "
                           "because the operation does not have an identity")
    return name_node(VectorNorm.apply(x, dims, keepdim, float(ord)), "LinalgVectorNormBackward0")


@autocast_policy("norm")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """`torch.norm`: vector p-norm over `dim`; 'fro' is the 2-norm over the given dims."""
    if p == "fro" or p is None:
        p = 2
    elif isinstance(p, str):
        raise RuntimeError(f"norm: p={p!r} is not supported; use 'fro' or a number")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


class CumSum(Function):
    """Inclusive sum along `dim`, from the end when `reverse` (each is the other's backward)."""

    @staticmethod
    def forward(ctx, x, dim, reverse, dtype):
        ctx.dim, ctx.reverse = dim, reverse
        return wrap(call("cumsum", x, dim, reverse, dtype), x.device, dtype)

    @staticmethod
    def backward(ctx, g):
        return CumSum.apply(g, ctx.dim, not ctx.reverse, g.dtype), None, None, None


def _scan_args(input, dim, dtype, op):
    """(input cast to `dtype`, wrapped dim, result dtype: `dtype`, else int64 for integers)."""
    dtype = _dtype_arg(dtype)
    x = input if dtype is None else input.to(dtype)
    return x, wrap_dim(dim, x.ndim, op), dtype or accumulate_dtype(x.dtype)


def _reverse_cumsum(t, dim):
    """sum_{i >= k} t_i along `dim`: the backward of cumsum."""
    return CumSum.apply(t, dim, True, t.dtype)


@autocast_policy("cumsum")
def cumsum(input, dim, *, dtype=None):
    """Running sum along `dim`; integer and bool inputs give int64."""
    x, dim, out_dtype = _scan_args(input, dim, dtype, "cumsum")
    return name_node(CumSum.apply(x, dim, False, out_dtype), "CumsumBackward0")


class CumProd(Function):
    @staticmethod
    def forward(ctx, x, dim, dtype):
        out = wrap(call("cumprod", x, dim, dtype), x.device, dtype)
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        """d/dx_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j, exact with zeros.

        Before the first zero z that is sum_{i>=k} g_i out_i / x_k; at z it is R_z, where R is
        the reverse cumsum of g * cumprod(x with x_z set to 1); after z it is x_z R_k / x_k, which
        is 0 but keeps the derivative with respect to x_z (second derivatives).
        """
        x, out = ctx.saved_tensors
        dim = ctx.dim
        if x.ndim == 0:
            return g, None, None
        zero = x == 0
        seen = cumsum(zero, dim)
        before, first, after = seen == 0, zero & (seen == 1), ~zero & (seen > 0)
        at_before = _reverse_cumsum(g * out, dim) / where(before, x, 1.0)
        others = _reverse_cumsum(g * CumProd.apply(where(first, 1.0, x), dim, x.dtype), dim)
        first_zero = sum(where(first, x, 0.0), dim, keepdim=True)
        at_after = others * first_zero / where(after, x, 1.0)
        gx = where(before, at_before, where(first, others, where(after, at_after, 0.0)))
        return gx, None, None


@autocast_policy("cumprod")
def cumprod(input, dim, *, dtype=None):
    """Running product along `dim`; integer and bool inputs give int64."""
    x, dim, out_dtype = _scan_args(input, dim, dtype, "cumprod")
    return name_node(CumProd.apply(x, dim, out_dtype), "CumprodBackward0")


def _logical_reduction(input, dim, keepdim, op):
    dims = reduce_dims(input, dim, op, empty_means_all=False)
    out = wrap(call(op, input, dims, keepdim), input.device)
    return cast(out, dtypes.uint8) if input.dtype is dtypes.uint8 else out


def any(input, dim=None, keepdim=False):
    """True where any element over `dim` is nonzero (uint8 inputs give uint8, as PyTorch)."""
    return _logical_reduction(input, dim, keepdim, "any")


def all(input, dim=None, keepdim=False):
    """True where every element over `dim` is nonzero (uint8 inputs give uint8, as PyTorch)."""
    return _logical_reduction(input, dim, keepdim, "all")


def count_nonzero(input, dim=None):
    """Number of nonzero elements over `dim` (all dims by default), as int64."""
    return wrap(call("count_nonzero", input, reduce_dims(input, dim, "count_nonzero")),
                input.device)


def _softmax_values(x, dim, log):
    """softmax (or log_softmax) of `x` along `dim`, from one kernel, outside any graph."""
    device = x.device
    return wrap(kernel("log_softmax" if log else "softmax", device.type)(x._data, dim), device,
                x.dtype)


class Softmax(Function):
    """softmax / log_softmax along `dim` (stable: shifted by the max)."""

    @staticmethod
    def forward(ctx, x, dim, log):
        out = _softmax_values(x, dim, log)
        ctx.dim, ctx.log = dim, log
        ctx.node_name = "LogSoftmaxBackward0" if log else "SoftmaxBackward0"
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        fused = "log_softmax_backward" if ctx.log else "softmax_backward"
        if not is_grad_enabled() and has_kernel(fused, y.device.type):
            return wrap(call(fused, g, y, ctx.dim), y.device), None, None
        return _softmax_grad(g, y, ctx.dim, ctx.log).to(y.dtype), None, None


def _softmax_grad(g, y, dim, log):
    """The input gradient of softmax (or log_softmax) from its output `y`, half types computed
    in float32 and rounded once as PyTorch's backward kernels do."""
    if y.dtype in (dtypes.float16, dtypes.bfloat16):
        g, y = g.float(), y.float()
    if log:
        return g - exp(y) * sum(g, dim, keepdim=True)
    return y * (g - sum(g * y, dim, keepdim=True))


def _softmax(input, dim, dtype, log):
    """softmax or log_softmax; a call no graph records runs the kernel directly."""
    op = "log_softmax" if log else "softmax"
    x = input if dtype is None else input.to(dtypes.as_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: not implemented for '{dtypes.scalar_type_name(x.dtype)}'")
    dim = wrap_dim(dim, len(x._data.shape), op)
    if records(x):
        return Softmax.apply(x, dim, log)
    return _softmax_values(x, dim, log)


@autocast_policy("softmax")
def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`; `dtype` casts the input first."""
    return _softmax(input, dim, dtype, False)


@autocast_policy("log_softmax")
def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along `dim`; `dtype` casts the input first."""
    return _softmax(input, dim, dtype, True)


class ReduceMethods:
    """Tensor methods of this family: reductions, scans and softmax."""

    sum = sum
    nansum = nansum
    mean = mean
    prod = prod
    max = max
    min = min
    amax = amax
    amin = amin
    aminmax = aminmax
    argmax = argmax
    argmin = argmin
    median = median
    var = var
    std = std
    logsumexp = logsumexp
    norm = norm
    cumsum = cumsum
    cumprod = cumprod
    any = any
    all = all
    count_nonzero = count_nonzero
    softmax = softmax
    log_softmax = log_softmax


__all__ = ["sum", "nansum", "mean", "prod", "max", "min", "amax", "amin", "aminmax", "argmax",
           "argmin", "median", "var", "std", "logsumexp", "norm", "cumsum", "cumprod", "any", "all",
           "count_nonzero", "softmax", "log_softmax", "var_mean", "std_mean"]
