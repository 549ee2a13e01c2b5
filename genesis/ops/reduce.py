"""Reductions over any dims with `keepdim`, scans and softmax, as PyTorch.

Each reduction normalizes its dims once here and calls one kernel; backward broadcasts the
output gradient back over the reduced dims (`expand_reduced`) and is written with genesis ops, so
it serves every device and is itself differentiable.
"""

import builtins
import collections
import math

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor, wrap_dim
from .common import call, cast, make_view, normalize_dims, wrap
from .creation import arange
from .elementwise import abs, exp, isnan, maximum, minimum, sign, sqrt, where

_INF = float("inf")


def reduce_dims(x, dim, op, empty_means_all=True):
    """`dim` as a sorted tuple of axes of `x`; None (and, by default, an empty list) mean all."""
    if x.ndim == 0:
        if dim is not None:
            normalize_dims(dim, 1, op)
        return ()
    if empty_means_all and dim is not None and not isinstance(dim, int) and len(dim) == 0:
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
        raise RuntimeError(message or f"{op}(): expected a floating point tensor, got {x.dtype.name}")


def _check_nonempty(x, dim, dims, op):
    """PyTorch's errors for reductions without an identity (max, amin, ...) over nothing."""
    if x.numel():
        return
    if dim is None or dim == ():
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    empty = next((d for d in dims if x.shape[d] == 0), None)
    if empty is not None:
        raise IndexError(f"{op}(): Expected reduction dim {empty} to have non-zero size.")


def _reduces_empty(x, dims):
    """True when some reduced dim has size 0 (nothing to take a max or min of)."""
    return builtins.any(x.shape[d] == 0 for d in dims)


class ExpandReduced(Function):
    """A reduction's output gradient broadcast back to the input shape (a stride-0 view)."""

    @staticmethod
    def forward(ctx, g, shape, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        strides = iter(g.stride())
        if keepdim:
            kept = [next(strides) for _ in shape]
        else:
            kept = [0 if i in dims else next(strides) for i in range(len(shape))]
        return make_view(g, shape, [0 if i in dims else s for i, s in enumerate(kept)], g._offset)

    @staticmethod
    def backward(ctx, gg):
        return sum(gg, ctx.dims, ctx.keepdim), None, None, None


def expand_reduced(g, shape, dims, keepdim):
    """The gradient `g` of a reduction over `dims` broadcast to the input `shape`."""
    return ExpandReduced.apply(g, tuple(shape), dims, keepdim)


def _keep(t, shape, dims, keepdim):
    """A reduction result `t` in keepdim form, so it broadcasts against the input."""
    return t if keepdim else expand_reduced(t, kept_shape(shape, dims), dims, False)


class Reduction(Function):
    """A reduction whose result is `kernel(x, dims, keepdim, *args)`; subclasses add backward."""

    kernel = None

    @classmethod
    def run(cls, x, dims, keepdim, *args):
        return wrap(call(cls.kernel, x, dims, keepdim, *args), x.device)

    @classmethod
    def forward(cls, ctx, x, dims, keepdim, *args):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        return cls.run(x, dims, keepdim, *args)

    @staticmethod
    def expand(ctx, g):
        return expand_reduced(g, ctx.shape, ctx.dims, ctx.keepdim)

    @staticmethod
    def grads(ctx, gx):
        """`gx` followed by a None for every non-tensor argument of forward."""
        return (gx,) + (None,) * (len(ctx.needs_input_grad) - 1)


class Sum(Reduction):
    @classmethod
    def forward(cls, ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        out_dtype = dtype or accumulate_dtype(x.dtype)
        x = cast(x, dtype or x.dtype)
        return wrap(call("sum", x, dims, keepdim, out_dtype), x.device, out_dtype)

    @staticmethod
    def backward(ctx, g):
        return Sum.grads(ctx, Sum.expand(ctx, g))


class NanSum(Sum):
    @classmethod
    def forward(cls, ctx, x, dims, keepdim, dtype):
        ctx.save_for_backward(x)
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        out_dtype = dtype or accumulate_dtype(x.dtype)
        return wrap(call("nansum", cast(x, dtype or x.dtype), dims, keepdim, out_dtype), x.device,
                    out_dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return NanSum.grads(ctx, where(isnan(x), 0.0, NanSum.expand(ctx, g)))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (all dims by default); integer and bool inputs give int64."""
    return Sum.apply(input, reduce_dims(input, dim, "sum"), keepdim, _dtype_arg(dtype))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    return NanSum.apply(input, reduce_dims(input, dim, "nansum"), keepdim, _dtype_arg(dtype))


class Mean(Reduction):
    kernel = "mean"

    @staticmethod
    def backward(ctx, g):
        count = math.prod(ctx.shape[d] for d in ctx.dims)
        return Mean.grads(ctx, Mean.expand(ctx, g) / builtins.max(count, 1))


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over `dim`; floating inputs only (or a floating `dtype`); empty gives nan."""
    dtype = _dtype_arg(dtype)
    x = input if dtype is None else input.to(dtype)
    _check_float(x, "mean", "mean(): could not infer output dtype. Input dtype must be either a "
                 f"floating point or complex dtype. Got: {x.dtype.name}")
    return Mean.apply(x, reduce_dims(x, dim, "mean"), keepdim)


class Prod(Reduction):
    @classmethod
    def forward(cls, ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        out_dtype = dtype or accumulate_dtype(x.dtype)
        x = cast(x, dtype or x.dtype)
        ctx.save_for_backward(x)
        return wrap(call("prod", x, dims, keepdim, out_dtype), x.device, out_dtype)

    @staticmethod
    def backward(ctx, g):
        """d/dx_i = product of the others: exact with zeros (one zero: only it gets a gradient)."""
        (x,) = ctx.saved_tensors
        dims = ctx.dims
        zero = x == 0
        nonzero_prod = Prod.apply(where(zero, 1.0, x), dims, True, None)
        zero_prod = Prod.apply(where(zero, x, 1.0), dims, True, None)
        single_zero = sum(zero, dims, keepdim=True) == 1
        g = Prod.expand(ctx, g)
        at_zero = g * where(single_zero, nonzero_prod, 0.0)
        at_nonzero = g * (nonzero_prod * zero_prod) / where(zero, 1.0, x)
        return Prod.grads(ctx, where(zero, at_zero, at_nonzero))


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over one `dim` (all elements by default); integer and bool inputs give int64."""
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return Prod.apply(input, reduce_dims(input, dim, "prod"), keepdim, _dtype_arg(dtype))


class Extremum(Reduction):
    """amax/amin/median over dims: the gradient is split evenly among the tied extremes."""

    @classmethod
    def forward(cls, ctx, x, dims, keepdim, kernel):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        args = (x,) if kernel == "median" else (x, dims, keepdim)
        out = wrap(call(kernel, *args), x.device)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        out = _keep(out, ctx.shape, ctx.dims, ctx.keepdim)
        hit = (x == out) | (isnan(x) & isnan(out))
        share = Extremum.expand(ctx, g) / sum(hit, ctx.dims, keepdim=True)
        return Extremum.grads(ctx, where(hit, share, 0.0))


def _extremum(input, dim, keepdim, kernel, op):
    dims = reduce_dims(input, dim, op)
    _check_nonempty(input, dim, dims, op)
    return Extremum.apply(input, dims, keepdim, kernel)


def amax(input, dim=(), keepdim=False):
    """Maximum over `dim` (all dims by default); ties share the gradient evenly."""
    return _extremum(input, dim, keepdim, "amax", "amax")


def amin(input, dim=(), keepdim=False):
    """Minimum over `dim` (all dims by default); ties share the gradient evenly."""
    return _extremum(input, dim, keepdim, "amin", "amin")


def _return_type(name, fields):
    """A namedtuple like `torch.return_types.<name>` (fields readable by name and unpacking)."""
    cls = collections.namedtuple(name, fields)
    cls.__repr__ = lambda self: (f"genesis.return_types.{name}(\n"
                                 + ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")")
    return cls


_RESULTS = {name: _return_type(name, ("values", "indices"))
            for name in ("max", "min", "median")}
_MinMax = _return_type("aminmax", ("min", "max"))


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


def max(input, dim=None, keepdim=False):
    """max(input) -> value; max(input, dim, keepdim) -> (values, indices); max(a, b) = maximum."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        return _extremum(input, None, False, "amax", "max")
    return _select_dim(input, dim, keepdim, "max")


def min(input, dim=None, keepdim=False):
    """min(input) -> value; min(input, dim, keepdim) -> (values, indices); min(a, b) = minimum."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        return _extremum(input, None, False, "amin", "min")
    return _select_dim(input, dim, keepdim, "min")


def median(input, dim=None, keepdim=False):
    """The lower median: of all elements (a value, nan when empty), or (values, indices) on `dim`."""
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("median: not implemented for 'bool'")
    if dim is None:
        return Extremum.apply(input, tuple(range(input.ndim)), False, "median")
    return _select_dim(input, dim, keepdim, "median")


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


def _var_grad(x, g, dims, correction):
    """d var / dx for `g` broadcast to x's shape: 2 (x - mean) g / (N - correction)."""
    dof = math.prod(x.shape[d] for d in dims) - correction
    return g * (x - mean(x, dims, keepdim=True)) * (2.0 / dof if dof > 0 else _INF)


class Var(Reduction):
    @classmethod
    def forward(cls, ctx, x, dims, keepdim, correction, take_sqrt):
        ctx.shape, ctx.dims, ctx.keepdim = tuple(x.shape), dims, keepdim
        ctx.correction, ctx.take_sqrt = correction, take_sqrt
        out = wrap(call("var", x, dims, correction, keepdim), x.device)
        if take_sqrt:
            out = sqrt(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if ctx.take_sqrt:
            g = where(out == 0, 0.0, g / (2 * out))
        return _var_grad(x, Var.expand(ctx, g), ctx.dims, ctx.correction), None, None, None, None


def _variance(input, dim, unbiased, keepdim, correction, op, take_sqrt):
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    _check_float(input, op, "std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return Var.apply(input, reduce_dims(input, dim, op), keepdim, correction, take_sqrt)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over `dim` with Bessel's `correction` (1 by default; `unbiased=False` means 0)."""
    return _variance(input, dim, unbiased, keepdim, correction, "var", False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over `dim`; see `var` for the correction."""
    return _variance(input, dim, unbiased, keepdim, correction, "std", True)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over `dim`."""
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, None if isinstance(dim, bool) else dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over `dim`."""
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, None if isinstance(dim, bool) else dim, keepdim))


class LogSumExp(Reduction):
    kernel = "logsumexp"

    @classmethod
    def forward(cls, ctx, x, dims, keepdim):
        out = super().forward(ctx, x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        out = _keep(out, ctx.shape, ctx.dims, ctx.keepdim)
        return LogSumExp.grads(ctx, LogSumExp.expand(ctx, g) * exp(x - out))


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably; integer inputs give the default float."""
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    return LogSumExp.apply(x, reduce_dims(x, dim, "logsumexp"), keepdim)


class VectorNorm(Reduction):
    kernel = "norm"

    @classmethod
    def forward(cls, ctx, x, dims, keepdim, p):
        ctx.shape, ctx.dims, ctx.keepdim, ctx.p = tuple(x.shape), dims, keepdim, p
        out = wrap(call("norm", x, p, dims, keepdim), x.device)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        p = ctx.p
        out = _keep(out, ctx.shape, ctx.dims, ctx.keepdim)
        g = VectorNorm.expand(ctx, g)
        if p == 0:
            gx = g * 0
        elif p == 1:
            gx = g * sign(x)
        elif p == 2:
            gx = x * where(out == 0, 0.0, g / out)
        elif p in (_INF, -_INF):
            hit = abs(x) == out
            gx = sign(x) * where(hit, g / sum(hit, ctx.dims, keepdim=True), 0.0)
        else:
            scaled = sign(x) * where(x == 0, 0.0, abs(x) ** (p - 1))
            gx = scaled * where(out == 0, 0.0, g / out ** (p - 1))
        return gx, None, None, None


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """`linalg.vector_norm`: the ord-norm of `x` over `dim` (all dims by default)."""
    if dtype is not None:
        x = x.to(dtypes.as_dtype(dtype))
    _check_float(x, "linalg.vector_norm", "linalg.vector_norm: Expected a floating point or "
                 f"complex tensor as input. Got {x.dtype.name}")
    dims = reduce_dims(x, dim, "linalg.vector_norm")
    if ord in (_INF, -_INF) and _reduces_empty(x, dims):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor "
                           "because the operation does not have an identity")
    return VectorNorm.apply(x, dims, keepdim, float(ord))


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


def cumsum(input, dim, *, dtype=None):
    """Running sum along `dim`; integer and bool inputs give int64."""
    x, dim, out_dtype = _scan_args(input, dim, dtype, "cumsum")
    return CumSum.apply(x, dim, False, out_dtype)


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
        return where(before, at_before, where(first, others, where(after, at_after, 0.0))), None, None


def cumprod(input, dim, *, dtype=None):
    """Running product along `dim`; integer and bool inputs give int64."""
    x, dim, out_dtype = _scan_args(input, dim, dtype, "cumprod")
    return CumProd.apply(x, dim, out_dtype)


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


class Softmax(Function):
    """softmax / log_softmax along `dim` (stable: shifted by the max)."""

    @staticmethod
    def forward(ctx, x, dim, log):
        out = wrap(call("log_softmax" if log else "softmax", x, dim), x.device)
        ctx.dim, ctx.log = dim, log
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if ctx.log:
            return g - exp(y) * sum(g, ctx.dim, keepdim=True), None, None
        return y * (g - sum(g * y, ctx.dim, keepdim=True)), None, None


def _softmax(input, dim, dtype, log):
    op = "log_softmax" if log else "softmax"
    x = input if dtype is None else input.to(dtypes.as_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: not implemented for '{x.dtype.name}'")
    return Softmax.apply(x, wrap_dim(dim, x.ndim, op) if x.ndim else 0, log)


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`; `dtype` casts the input first."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along `dim`; `dtype` casts the input first."""
    return _softmax(input, dim, dtype, True)


_FUNCTIONS = {
    "sum": sum, "nansum": nansum, "mean": mean, "prod": prod, "max": max, "min": min,
    "amax": amax, "amin": amin, "aminmax": aminmax, "argmax": argmax, "argmin": argmin,
    "median": median, "var": var, "std": std, "logsumexp": logsumexp, "norm": norm,
    "cumsum": cumsum, "cumprod": cumprod, "any": any, "all": all,
    "count_nonzero": count_nonzero, "softmax": softmax, "log_softmax": log_softmax,
}

TENSOR_METHODS = dict(_FUNCTIONS)

__all__ = list(_FUNCTIONS) + ["var_mean", "std_mean"]
