"""Reduction, scan and softmax kernels on numpy.

Dims arrive normalized (a tuple of non-negative axes, or one axis) and validated by the ops layer.
Half types accumulate in float32 and are rounded once at the end (`float32_for_half`); numpy's
fixed summation order keeps every result deterministic.
"""

import numpy as np

from ...dispatch import register
from .elementwise import _HALF, float32_for_half


def _wide(x):
    """`x` as float32 when it is a half type (for kernels whose results are not floats)."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def _int_accumulator(x, dtype):
    """The numpy accumulator for a sum/product of `x` giving `dtype` (None: x's float type)."""
    return dtype.numpy_dtype if x.dtype.kind in "biu" else None


@register("sum", "cpu")
@float32_for_half
def sum_(x, dims, keepdim, dtype):
    """Sum over `dims` giving `dtype` (integer sums accumulate in that integer type)."""
    return np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=_int_accumulator(x, dtype)))


@register("nansum", "cpu")
@float32_for_half
def nansum(x, dims, keepdim, dtype):
    return np.asarray(np.nansum(x, axis=dims, keepdims=keepdim, dtype=_int_accumulator(x, dtype)))


@register("prod", "cpu")
@float32_for_half
def prod(x, dims, keepdim, dtype):
    return np.asarray(np.prod(x, axis=dims, keepdims=keepdim, dtype=_int_accumulator(x, dtype)))


def _mean(x, dims, keepdim):
    """Mean over `dims`; an empty reduction gives nan (0/0), as PyTorch."""
    count = int(np.prod([x.shape[d] for d in dims]))
    return np.sum(x, axis=dims, keepdims=keepdim) / x.dtype.type(count)


@register("mean", "cpu")
@float32_for_half
def mean(x, dims, keepdim):
    return np.asarray(_mean(x, dims, keepdim))


@register("amax", "cpu")
def amax(x, dims, keepdim):
    return np.asarray(np.max(x, axis=dims, keepdims=keepdim))


@register("amin", "cpu")
def amin(x, dims, keepdim):
    return np.asarray(np.min(x, axis=dims, keepdims=keepdim))


def _arg_select(fn, x, dim, keepdim):
    """Index along `dim` (None: of the flattened array) chosen by numpy's `fn` (first on ties)."""
    x = _wide(x)
    if dim is None:
        index = np.asarray(fn(x.reshape(-1)), dtype=np.int64)
        return index.reshape((1,) * x.ndim) if keepdim else index
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    return np.asarray(fn(x, axis=dim, keepdims=keepdim), dtype=np.int64)


@register("argmax", "cpu")
def argmax(x, dim, keepdim):
    return _arg_select(np.argmax, x, dim, keepdim)


@register("argmin", "cpu")
def argmin(x, dim, keepdim):
    return _arg_select(np.argmin, x, dim, keepdim)


def _lower_median_index(x, axis):
    """Index of the lower median along `axis` (NaN counts as the largest, so it propagates)."""
    n = x.shape[axis]
    order = np.argsort(x, axis=axis, kind="stable")
    pick = np.take(order, [(n - 1) // 2], axis=axis)
    if x.dtype.kind == "f":
        first_nan = np.take(order, [n - 1], axis=axis)
        has_nan = np.isnan(np.take_along_axis(x, first_nan, axis=axis))
        nan_pos = np.argmax(np.isnan(x), axis=axis, keepdims=True)
        pick = np.where(has_nan, nan_pos, pick)
    return pick


def _take(x, index, dim, keepdim):
    """(values, indices) of `x` at `index` (keepdim-shaped) along `dim`, squeezed unless keepdim."""
    values = np.take_along_axis(x, index, axis=dim)
    if not keepdim:
        index, values = np.squeeze(index, dim), np.squeeze(values, dim)
    return np.array(values, order="C"), np.array(index, dtype=np.int64, order="C")


def _select_dim(pick, x, dim, keepdim):
    """(values, indices) along `dim` where `pick(wide_x, dim)` gives keepdim-shaped indices."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.int64)
    return _take(x, pick(_wide(x), dim), dim, keepdim)


@register("max_dim", "cpu")
def max_dim(x, dim, keepdim):
    return _select_dim(lambda w, d: np.argmax(w, axis=d, keepdims=True), x, dim, keepdim)


@register("min_dim", "cpu")
def min_dim(x, dim, keepdim):
    return _select_dim(lambda w, d: np.argmin(w, axis=d, keepdims=True), x, dim, keepdim)


@register("median_dim", "cpu")
def median_dim(x, dim, keepdim):
    """(values, indices) of the lower median along `dim`."""
    return _select_dim(_lower_median_index, x, dim, keepdim)


@register("median", "cpu")
def median(x):
    """The lower median of all elements (nan for an empty input)."""
    flat = x.reshape(-1)
    if flat.size == 0:
        return np.full((), np.nan, dtype=x.dtype)
    return np.asarray(flat[_lower_median_index(_wide(flat), 0)[0]])


@register("var", "cpu")
@float32_for_half
def var(x, dims, keepdim, correction, take_sqrt):
    """Variance (its square root when `take_sqrt`) with `correction` subtracted from the count;
    N - correction <= 0 gives inf or nan. Computed in float64 and rounded once, as torch's CPU
    kernel accumulates in double: in float32 the rounded mean swamps the deviations of nearly
    equal values (the variance of a pair 1e-7 apart came out 100% off)."""
    count = int(np.prod([x.shape[d] for d in dims]))
    dtype, x = x.dtype, x.astype(np.float64, copy=False)
    centered = x - _mean(x, dims, True)
    squares = np.sum(centered * centered, axis=dims, keepdims=keepdim)
    out = np.asarray(squares / max(count - correction, 0))
    return np.asarray(np.sqrt(out) if take_sqrt else out).astype(dtype, copy=False)


@register("logsumexp", "cpu")
@float32_for_half
def logsumexp(x, dims, keepdim):
    """log(sum(exp(x))) shifted by the max; all -inf (or empty) gives -inf."""
    shift = np.max(x, axis=dims, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
    out = np.log(np.sum(np.exp(x - shift), axis=dims, keepdims=True)) + shift
    return np.asarray(out if keepdim else np.squeeze(out, dims))


@register("norm", "cpu")
@float32_for_half
def norm(x, dims, keepdim, p):
    """The vector p-norm over `dims` (p may be inf, -inf or 0)."""
    mag = np.abs(x)
    if p == float("inf"):
        out = np.max(mag, axis=dims, keepdims=keepdim)
    elif p == float("-inf"):
        out = np.min(mag, axis=dims, keepdims=keepdim)
    elif p == 0:
        out = np.sum(mag != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
    elif p == 1:
        out = np.sum(mag, axis=dims, keepdims=keepdim)
    elif p == 2:
        out = np.sqrt(np.sum(mag * mag, axis=dims, keepdims=keepdim))
    else:
        out = np.sum(mag ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)
    return np.asarray(out, dtype=x.dtype)


def _scan(fn, x, dim, reverse, dtype):
    """`fn` (np.cumsum or np.cumprod) along `dim`, from the end when `reverse`; a fresh array."""
    if x.ndim == 0:
        return x.astype(dtype.numpy_dtype)
    acc = dtype.numpy_dtype if x.dtype.kind in "biu" else None
    if not reverse:
        return fn(x, axis=dim, dtype=acc)
    flipped = np.flip(x, axis=dim)
    return np.ascontiguousarray(np.flip(fn(flipped, axis=dim, dtype=acc), axis=dim))


@register("cumsum", "cpu")
@float32_for_half
def cumsum(x, dim, reverse, dtype):
    return _scan(np.cumsum, x, dim, reverse, dtype)


@register("cumprod", "cpu")
@float32_for_half
def cumprod(x, dim, dtype):
    return _scan(np.cumprod, x, dim, False, dtype)


@register("any", "cpu")
def any_(x, dims, keepdim):
    return np.asarray(np.any(_wide(x), axis=dims, keepdims=keepdim))


@register("all", "cpu")
def all_(x, dims, keepdim):
    return np.asarray(np.all(_wide(x), axis=dims, keepdims=keepdim))


@register("count_nonzero", "cpu")
def count_nonzero(x, dims):
    return np.asarray(np.count_nonzero(_wide(x), axis=dims), dtype=np.int64)


@register("softmax", "cpu")
@float32_for_half
def softmax(x, dim):
    shifted = x - np.max(x, axis=dim, keepdims=True, initial=-np.inf)
    e = np.exp(shifted)
    return e / np.sum(e, axis=dim, keepdims=True)


@register("log_softmax", "cpu")
@float32_for_half
def log_softmax(x, dim):
    shifted = x - np.max(x, axis=dim, keepdims=True, initial=-np.inf)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
