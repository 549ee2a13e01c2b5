"""Statistics over tensors: cov, corrcoef, quantile/nanquantile, nanmean, nanmedian, mode,
logcumsumexp, cummax/cummin.

All are compositions of differentiable ops (sort, gather, matmul, logaddexp), so their
gradients and devices come from those. The scans (logcumsumexp, cummax, cummin) run as
doubling scans: ceil(log2(n)) rounds, each combining every element with the one 2^k before it.
"""

import builtins
import math

import numpy as np

from .. import dtypes
from ..tensor import Tensor, wrap_dim
from .creation import full, tensor
from .elementwise import isnan, lerp, logaddexp, logical_not, logical_or, where
from .gather_scatter import gather
from .linalg import mm
from .named_tuples import return_type
from .ranges import arange
from .reduce import amax, amin, any as any_, nansum, sum
from .shape import flatten, movedim, narrow, reshape
from .shape_copies import cat, diag
from .sorting import sort

_CUMMAX = return_type("cummax", ("values", "indices"))
_CUMMIN = return_type("cummin", ("values", "indices"))
_NANMEDIAN = return_type("nanmedian", ("values", "indices"))
_MODE = return_type("mode", ("values", "indices"))


def _observation_weights(fweights, aweights, n):
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is not None and (w.ndim > 1 or w.numel() != n):
            raise RuntimeError(f"cov(): expected {name} to have one dimension and the same "
                               f"number of observations as input, but got {list(w.shape)}")
    if fweights is not None and fweights.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                           f"{fweights.dtype.name}")
    if fweights is None:
        return aweights
    return fweights if aweights is None else fweights * aweights


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in the rows of `input` (columns are observations)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    n = x.shape[1]
    w = _observation_weights(fweights, aweights, n)
    if w is None:
        total, mean = n, x.mean(dim=1, keepdim=True)
        dof = n - correction
    else:
        w = w.to(x.dtype)
        total = sum(w)
        mean = sum(x * w, dim=1, keepdim=True) / total
        dof = total - correction if aweights is None else \
            total - correction * sum(w * aweights.to(x.dtype)) / total
    if not isinstance(dof, Tensor):
        dof = builtins.max(dof, 0)
    centered = x - mean
    weighted = centered if w is None else centered * w
    out = mm(centered, weighted.t()) / dof
    return out.squeeze() if input.ndim < 2 else out


def corrcoef(input):
    """Pearson correlation coefficients of the rows of `input`, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = diag(c).sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_quantile_args(op, input, q, interpolation):
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint "
                           f"or nearest. Got {interpolation}")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        values = q.tolist() if q.ndim else [q.item()]
    else:
        values = [q]
    bad = next((v for v in values if not 0 <= v <= 1), None)
    if bad is not None:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {bad}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")


def _pick(sorted_x, ranks, interpolation):
    """Values at fractional `ranks` of the sorted last dim, combined by `interpolation`."""
    last = builtins.max(sorted_x.shape[-1] - 1, 0)
    if interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().clamp(0, last).long()
    above = ranks.ceil().clamp(0, last).long()
    low, high = gather(sorted_x, -1, below), gather(sorted_x, -1, above)
    if interpolation in ("lower", "nearest"):
        return low
    if interpolation == "higher":
        return high
    weight = 0.5 if interpolation == "midpoint" else ranks - below.to(ranks.dtype)
    return lerp(low, high, weight)


def _ranks(sorted_x, qs, ignore_nan):
    """The fractional ranks (..., Q) of the quantiles `qs` in the sorted last dim, nans last,
    as torch's: a slice holding a nan takes its last element (quantile: the nan), and one of
    nans alone its first (nanquantile), so that the result is nan and its gradient goes to a
    nan element, as torch's does."""
    nans = isnan(sorted_x.detach())
    last = sorted_x.shape[-1] - 1
    if ignore_nan:
        count = (sorted_x.shape[-1] - sum(nans, dim=-1, keepdim=True)).to(sorted_x.dtype)
        return (qs * (count - 1)).clamp(min=0)
    return where(any_(nans, dim=-1, keepdim=True), float(last), qs * last)


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    _check_quantile_args(op, input, q, interpolation)
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    qs = q.detach().reshape(-1) if isinstance(q, Tensor) else tensor([float(q)], dtype=input.dtype,
                                                                     device=input.device)
    x = flatten(input) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, builtins.max(input.ndim, 1), op)
    x = movedim(reshape(x, (1,)) if x.ndim == 0 else x, d, -1)
    s = sort(x, dim=-1).values                                    # nans last
    out = _pick(s, _ranks(s, qs, ignore_nan), interpolation)      # (..., Q)
    out = movedim(out, -1, 0)
    if keepdim:
        kept = [1] * input.ndim if dim is None else list(input.shape)
        if dim is not None and input.ndim:
            kept[d] = 1
        out = reshape(out, (out.shape[0],) + tuple(kept))
    return out[0] if scalar_q else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of `input` along `dim` (all elements by default); nan where the slice
    holds a nan."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring nans (nan only where a slice is all nan)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of the non-nan elements along `dim`."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.name}")
    count = sum(logical_not(isnan(input)), dim=dim, keepdim=keepdim)
    return nansum(input, dim=dim, keepdim=keepdim, dtype=dtype) / count


def nanmedian(input, dim=None, keepdim=False):
    """Lower median of the non-nan elements (nan when all are nan); with `dim`, (values,
    indices)."""
    if dim is None:
        return nanmedian(flatten(input), 0).values.reshape(())
    d = wrap_dim(dim, builtins.max(input.ndim, 1), "nanmedian")
    x = reshape(input, (1,)) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    s, order = sort(movedim(x, d, -1), dim=-1)
    count = x.shape[d] - sum(isnan(s.detach()), dim=-1, keepdim=True)
    middle = ((count - 1) // 2).clamp(min=0)
    values, indices = gather(s, -1, middle), gather(order, -1, middle)
    return _NANMEDIAN(*(_reduced(t, d, keepdim, input.ndim) for t in (values, indices)))


def _reduced(t, dim, keepdim, ndim):
    """A (..., 1) result moved back to `dim`, kept or squeezed."""
    t = movedim(t, -1, dim)
    if not keepdim or ndim == 0:
        t = t.squeeze(dim)
    return t


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along `dim` (the smallest among equally
    frequent ones) and the index of its last occurrence."""
    d = wrap_dim(dim, builtins.max(input.ndim, 1), "mode")
    x = reshape(input, (1,)) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    rows = movedim(x.detach(), d, -1)
    counts = sum(rows.unsqueeze(-1) == rows.unsqueeze(-2), dim=-1)
    best = counts == amax(counts, dim=-1, keepdim=True)
    top = where(best, rows, _largest(rows.dtype))
    value = amin(top, dim=-1, keepdim=True)
    positions = arange(rows.shape[-1], device=x.device)
    index = amax(where(rows == value, positions, -1), dim=-1, keepdim=True)
    values = gather(movedim(x, d, -1), -1, index)
    return _MODE(*(_reduced(t, d, keepdim, input.ndim) for t in (values, index)))


def _largest(dtype):
    if dtype.is_floating_point:
        return math.inf
    if dtype is dtypes.bool_:
        return True
    return int(np.iinfo(dtype.numpy_dtype).max)


def _doubling_scan(x, dim, combine):
    """Inclusive scan of `x` along `dim` under the associative `combine(earlier, later)`,
    applied to tuples of tensors."""
    n = x[0].shape[dim]
    shift = 1
    while shift < n:
        earlier = tuple(narrow(t, dim, 0, n - shift) for t in x)
        later = tuple(narrow(t, dim, shift, n - shift) for t in x)
        merged = combine(earlier, later)
        x = tuple(cat([narrow(t, dim, 0, shift), m], dim) for t, m in zip(x, merged))
        shift *= 2
    return x


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along `dim`, computed without overflow."""
    if input.ndim == 0:
        wrap_dim(dim, 0, "logcumsumexp")
        return input.clone()
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    dim = wrap_dim(dim, x.ndim, "logcumsumexp")
    return _doubling_scan((x,), dim, lambda a, b: (logaddexp(a[0], b[0]),))[0]


def _cumulative_extremum(op, input, dim, take_later, result):
    d = wrap_dim(dim, builtins.max(input.ndim, 1), op)
    x = reshape(input, (1,)) if input.ndim == 0 else input
    if x.numel() == 0:
        return result(x.clone(), full(tuple(x.shape), 0, dtype=dtypes.int64, device=x.device))
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    positions = reshape(arange(x.shape[d], device=x.device), tuple(shape)).expand(*x.shape)

    def combine(earlier, later):
        later_wins = take_later(earlier[0], later[0])
        return tuple(where(later_wins, b, a) for a, b in zip(earlier, later))

    _, index = _doubling_scan((x.detach(), positions), d, combine)
    values = gather(x, d, index)
    return result(*(reshape(t, tuple(input.shape)) for t in (values, index)))


def cummax(input, dim):
    """(values, indices) of the running maximum along `dim` (nan wins; ties go to the later)."""
    return _cumulative_extremum("cummax", input, dim,
                                lambda a, b: logical_or(isnan(b), b >= a), _CUMMAX)


def cummin(input, dim):
    """(values, indices) of the running minimum along `dim` (nan wins; ties go to the later)."""
    return _cumulative_extremum("cummin", input, dim,
                                lambda a, b: logical_or(isnan(b), b <= a), _CUMMIN)


class StatisticsMethods:
    """Tensor methods of this family: every function above."""

    cov = cov
    corrcoef = corrcoef
    quantile = quantile
    nanquantile = nanquantile
    nanmean = nanmean
    nanmedian = nanmedian
    mode = mode
    logcumsumexp = logcumsumexp
    cummax = cummax
    cummin = cummin


__all__ = ["cov", "corrcoef", "quantile", "nanquantile", "nanmean", "nanmedian", "mode",
           "logcumsumexp", "cummax", "cummin"]
