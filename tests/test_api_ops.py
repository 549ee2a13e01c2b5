"""The functions of issue 21 (comparison, counting, products, rearranging, statistics, special
functions, windows) against PyTorch, from one op table in the manner of PyTorch's OpInfo.

Each entry gives the op as a function of the library (genesis or torch) and its sample inputs:
torch tensors drawn fresh each run, mirrored into genesis on the test's device, contiguous and
transposed (non-contiguous). Forward values are compared in every dtype the entry lists;
differentiable entries compare gradients with PyTorch's in float64 and pass gradcheck.
"""

import math
import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import genesis
import genesis.special  # noqa: F401  (genesis.special is reached as lib.special below)
from genesis.autograd import gradcheck
from helpers import GENESIS_DTYPES, TORCH_DTYPES, assert_close, from_torch, lay_out

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

FLOATS = (torch.float32, torch.float64)
HALVES = (torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


@dataclass
class Op:
    """`fn(lib, *tensors)`; `samples(rng, dtype)` gives lists of torch tensors; `grad` marks
    which sample tensors are differentiable (indices), empty for none; `half_oracle`: half-type
    results are compared with PyTorch's float32 result rounded once (see `_half_oracle`)."""
    name: str
    fn: object
    samples: object
    dtypes: tuple = FLOATS
    grad: tuple = ()
    layouts: tuple = ("contiguous", "transposed")
    half_oracle: bool = True


def rand(rng, shape, dtype, low=-2.0, high=2.0):
    """Uniform values (integers for integer dtypes) as a torch tensor of `dtype`."""
    if dtype is torch.bool:
        return torch.from_numpy(np.asarray(rng.random(shape) < 0.5))
    if dtype.is_floating_point:
        return torch.from_numpy(np.asarray(rng.uniform(low, high, shape))).to(dtype)
    lo = 0 if dtype is torch.uint8 else int(low) * 3
    return torch.from_numpy(np.asarray(rng.integers(lo, int(high) * 3 + 1, shape))).to(dtype)


def shapes_unary(rng, dtype, low=-2.0, high=2.0):
    return [[rand(rng, s, dtype, low, high)] for s in ((3, 5), (7,), (), (0, 4), (2, 3, 4))]


def unary_op(name, getter, low=-2.0, high=2.0, dtypes=FLOATS + HALVES, grad=(0,)):
    return Op(name, lambda lib, x: getter(lib)(x),
              lambda rng, d: shapes_unary(rng, d, low, high), dtypes, grad)


def _sorted(rng, shape, dtype):
    return torch.sort(rand(rng, shape, dtype, -3, 3), dim=-1).values


def _searchsorted_samples(rng, d):
    return [[_sorted(rng, (9,), d), rand(rng, (4, 5), d, -4, 4)],
            [_sorted(rng, (3, 6), d), rand(rng, (3, 4), d, -4, 4)],
            [_sorted(rng, (1,), d), rand(rng, (), d)],
            [_sorted(rng, (0,), d), rand(rng, (3,), d)]]


def _with_nans(t, rng, fraction=0.3):
    t = t.clone()
    if t.dtype.is_floating_point and t.numel():
        t[torch.from_numpy(rng.random(tuple(t.shape)) < fraction)] = math.nan
    return t


def _nan_row(t, row):
    """`t` with row `row` all nan: a slice whose nan-reduction is nan, and whose gradient is nan
    (0/0), so gradcheck takes a sample without one first."""
    t = t.clone()
    t[row] = math.nan
    return t


def _nan_slices_defined(t):
    """`t` (2-D) with a number at (j % rows, j) for each column j: no row or column is all
    nan, where the index nanmedian returns is whatever PyTorch's selection leaves first."""
    t = t.clone()
    cols = torch.arange(t.shape[1])
    keep = cols % t.shape[0]
    t[keep, cols] = torch.where(t[keep, cols].isnan(), 0.5, t[keep, cols])
    return t


def _no_ties(rng, shape, dtype):
    """Distinct values, so indices of medians and modes are defined."""
    n = int(np.prod(shape))
    return torch.from_numpy(rng.permutation(n).reshape(shape) / 7.0).to(dtype)


def _nudged(a):
    """`a` moved a little (floats, some within isclose's tolerance) or by one (integers)."""
    return a * 1.001 + 0.01 if a.dtype.is_floating_point else a + 1


def _scatter_samples(rng, d):
    return [[rand(rng, (4, 6), d), rand(rng, (4, 3), d)]]


OPS = [
    # comparison
    Op("isclose", lambda lib, a, b: lib.isclose(a, b, rtol=1e-2, atol=1e-3),
       lambda rng, d: [[a, torch.where(rand(rng, a.shape, torch.bool), a, _nudged(a))]
                       for a in (rand(rng, (3, 4), d), rand(rng, (), d))],
       FLOATS + HALVES + INTS, half_oracle=False),
    Op("isclose_nan", lambda lib, a, b: lib.isclose(a, b, equal_nan=True),
       lambda rng, d: [[torch.tensor([1.0, math.nan, math.inf, -math.inf, 2.0], dtype=d),
                        torch.tensor([1.0, math.nan, math.inf, math.inf, math.nan], dtype=d)]]),
    Op("allclose", lambda lib, a, b: lib.allclose(a, b),
       lambda rng, d: [[a, a + 1e-9] for a in (rand(rng, (3, 4), d),)] + [[a, a + 1]
                       for a in (rand(rng, (2,), d),)]),
    Op("equal", lambda lib, a, b: (lib.equal(a, b), lib.equal(a, a), lib.equal(a, a[:1])),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3, 4), d)]], FLOATS + INTS),
    Op("isin", lambda lib, a, b: (lib.isin(a, b), lib.isin(a, b, invert=True)),
       lambda rng, d: [[rand(rng, (4, 5), d), rand(rng, (6,), d)],
                       [rand(rng, (), d), rand(rng, (2, 3), d)],
                       [rand(rng, (3,), d), rand(rng, (0,), d)]], INTS),
    # counting and bucketing
    Op("bincount", lambda lib, x, w: (lib.bincount(x), lib.bincount(x, w, minlength=12)),
       lambda rng, d: [[rand(rng, (20,), torch.int64, 0, 3), rand(rng, (20,), d)],
                       [rand(rng, (0,), torch.int64, 0, 3), rand(rng, (0,), d)]],
       FLOATS + (torch.float16,), half_oracle=False),
    Op("histc", lambda lib, x: (lib.histc(x, bins=7), lib.histc(x, bins=4, min=-1, max=1)),
       lambda rng, d: [[rand(rng, (50,), d)], [rand(rng, (3, 4), d)], [rand(rng, (0,), d)]]),
    Op("histogram", lambda lib, x: (tuple(lib.histogram(x, bins=5)),
                                    tuple(lib.histogram(x, bins=3, range=(-1.0, 1.0),
                                                        density=True))),
       lambda rng, d: [[rand(rng, (40,), d)], [rand(rng, (3, 4), d)]]),
    Op("histogram_edges", lambda lib, x, e: tuple(lib.histogram(x, e)),
       lambda rng, d: [[rand(rng, (40,), d), torch.tensor([-2.0, -0.5, 0.0, 1.5], dtype=d)]]),
    Op("histogramdd", lambda lib, x, w: (
        tuple(lib.histogramdd(x, bins=[3, 4])),
        tuple(lib.histogramdd(x, bins=2, range=[-1.0, 1.0, -2.0, 0.5], weight=w, density=True)),
        tuple(lib.histogramdd(x, bins=[x.new_tensor([-2.0, 0.0, 0.5, 2.0]),
                                       x.new_tensor([-1.0, 1.5])]))),
       lambda rng, d: [[rand(rng, (40, 2), d), rand(rng, (40,), d, 0, 1)],
                       [rand(rng, (3, 4, 2), d), rand(rng, (3, 4), d, 0, 1)],
                       [rand(rng, (0, 2), d), rand(rng, (0,), d)]]),
    Op("searchsorted", lambda lib, s, v: (lib.searchsorted(s, v),
                                          lib.searchsorted(s, v, right=True),
                                          lib.searchsorted(s, v, side="right", out_int32=True)),
       _searchsorted_samples, FLOATS + INTS, layouts=("contiguous",)),
    Op("searchsorted_sorter", lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.argsort(s)),
       lambda rng, d: [[rand(rng, (9,), d), rand(rng, (5,), d)]]),
    Op("bucketize", lambda lib, v, b: (lib.bucketize(v, b), lib.bucketize(v, b, right=True)),
       lambda rng, d: [[rand(rng, (4, 5), d, -4, 4), _sorted(rng, (7,), d)],
                       [rand(rng, (), d), _sorted(rng, (3,), d)]], FLOATS + INTS),
    Op("unique_consecutive", lambda lib, x: (
        lib.unique_consecutive(x), tuple(lib.unique_consecutive(x, True, True)),
        tuple(lib.unique_consecutive(x, return_counts=True, dim=0))),
       lambda rng, d: [[rand(rng, (6, 3), d, 0, 1)], [rand(rng, (9,), d, 0, 1)]], INTS),
    # distances and products
    Op("cdist", lambda lib, a, b: tuple(lib.cdist(a, b, p=p) for p in (0.0, 1.0, 2.0, 3.5, math.inf)),
       lambda rng, d: [[rand(rng, (4, 3), d), rand(rng, (5, 3), d)],
                       [rand(rng, (2, 3, 2), d), rand(rng, (2, 4, 2), d)]], grad=(0, 1)),
    Op("kron", lambda lib, a, b: lib.kron(a, b),
       lambda rng, d: [[rand(rng, (2, 3), d), rand(rng, (3, 2), d)],
                       [rand(rng, (3,), d), rand(rng, (2, 2, 2), d)]], FLOATS + INTS, (0, 1)),
    Op("cartesian_prod", lambda lib, a, b, c: (lib.cartesian_prod(a, b, c), lib.cartesian_prod(a)),
       lambda rng, d: [[rand(rng, (3,), d), rand(rng, (2,), d), rand(rng, (4,), d)]],
       FLOATS + INTS, (0, 1, 2)),
    Op("block_diag", lambda lib, a, b, c: lib.block_diag(a, b, c),
       lambda rng, d: [[rand(rng, (2, 3), d), rand(rng, (4,), d), rand(rng, (), d)]],
       FLOATS + INTS, (0, 1, 2)),
    Op("addr", lambda lib, m, u, v: (lib.addr(m, u, v), lib.addr(m, u, v, beta=0.5, alpha=2)),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3,), d), rand(rng, (4,), d)],
                       [rand(rng, (4,), d), rand(rng, (3,), d), rand(rng, (4,), d)]],
       FLOATS, (0, 1, 2)),
    Op("addbmm", lambda lib, m, a, b: lib.addbmm(m, a, b, beta=0.5, alpha=1.5),
       lambda rng, d: [[rand(rng, (3, 5), d), rand(rng, (2, 3, 4), d), rand(rng, (2, 4, 5), d)]],
       FLOATS + HALVES, (0, 1, 2)),
    Op("chain_matmul", lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c])
       if lib is torch else lib.chain_matmul(a, b, c),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4, 2), d), rand(rng, (2, 5), d)]],
       FLOATS, (0, 1, 2)),
    # reshaping and indexing
    Op("diff", lambda lib, x, p: (lib.diff(x), lib.diff(x, n=2, dim=0, prepend=p)),
       lambda rng, d: [[rand(rng, (4, 5), d), rand(rng, (2, 5), d)]],
       FLOATS + INTS + (torch.bool,), (0, 1)),
    Op("rot90", lambda lib, x: tuple(lib.rot90(x, k, dims) for k in (-1, 0, 1, 2, 3, 5)
                                     for dims in ((0, 1), (2, 0))),
       lambda rng, d: [[rand(rng, (2, 3, 4), d)]], FLOATS + INTS, (0,)),
    Op("tril_triu_indices", lambda lib: tuple(
        f(r, c, o) for f in (lib.tril_indices, lib.triu_indices)
        for r, c, o in ((4, 6, 0), (5, 3, -1), (3, 3, 2), (0, 2, 0))),
       lambda rng, d: [[]], (torch.float32,)),
    Op("unfold", lambda lib, x: (x.unfold(0, 2, 1), x.unfold(1, 3, 2), x.unfold(-1, 5, 5)),
       lambda rng, d: [[rand(rng, (4, 5), d)]], FLOATS + INTS, (0,)),
    Op("slice_scatter", lambda lib, x, s: lib.slice_scatter(x, s, 1, 0, 6, 2),
       _scatter_samples, FLOATS + INTS, (0, 1)),
    Op("select_scatter", lambda lib, x, s: lib.select_scatter(x, s[:, 0], 1, -2),
       _scatter_samples, FLOATS, (0, 1)),
    Op("diagonal_scatter", lambda lib, x, s: lib.diagonal_scatter(x, s[:, 0], 2),
       _scatter_samples, FLOATS, (0, 1)),
    Op("as_strided_scatter", lambda lib, x, s: lib.as_strided_scatter(x, s[:2], (2, 3), (6, 2), 1),
       _scatter_samples, FLOATS, (1,), layouts=("contiguous",)),
    Op("index_reduce", lambda lib, x, s, i: tuple(
        x.index_reduce(1, i, s, r, include_self=inc)
        for r in ("prod", "mean", "amax", "amin") for inc in (True, False)),
       lambda rng, d: [[rand(rng, (3, 5), d), rand(rng, (3, 4), d),
                        torch.tensor([0, 4, 4, 2])]], FLOATS, (0, 1)),
    Op("scatter_reduce", lambda lib, x, s, i: tuple(
        x.scatter_reduce(0, i, s, r, include_self=inc)
        for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)),
       lambda rng, d: [[rand(rng, (4, 5), d), rand(rng, (3, 4), d),
                        torch.from_numpy(rng.integers(0, 4, (3, 4)))],
                       [rand(rng, (), d), rand(rng, (), d), torch.tensor(0)]], FLOATS, (0, 1)),
    Op("scatter_reduce_int", lambda lib, x, s, i: tuple(
        lib.scatter_reduce(x, 1, i, s, r, include_self=inc)
        for r in ("sum", "prod", "amax", "amin") for inc in (True, False)),
       lambda rng, d: [[rand(rng, (3, 5), d), rand(rng, (3, 4), d),
                        torch.from_numpy(rng.integers(0, 5, (3, 4)))]], INTS),
    Op("put", lambda lib, x, s, i: (x.put(i, s), x.put(i[:2], s[:2], accumulate=True)),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3,), d), torch.tensor([1, -2, 7])]],
       FLOATS + INTS, (0, 1)),
    # statistics
    Op("cov", lambda lib, x, fw, aw: (lib.cov(x), lib.cov(x, correction=0),
                                      lib.cov(x, fweights=fw, aweights=aw)),
       lambda rng, d: [[rand(rng, (3, 6), d), rand(rng, (6,), torch.int64, 1, 2),
                        rand(rng, (6,), d, 0.1, 1.0)]], FLOATS, (0, 2)),
    Op("corrcoef", lambda lib, x: (lib.corrcoef(x), lib.corrcoef(x[0])),
       lambda rng, d: [[rand(rng, (3, 6), d)]], FLOATS, (0,)),
    Op("quantile", lambda lib, x, q: tuple(
        f(x, q, dim=dim, keepdim=k, interpolation=m)
        for f in (lib.quantile, lib.nanquantile) for dim in (None, 1) for k in (False, True)
        for m in ("linear", "lower", "higher", "midpoint", "nearest")),
       lambda rng, d: [[_no_ties(rng, (3, 7), d), torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0],
                                                               dtype=d)],
                       [_no_ties(rng, (4, 6), d), torch.tensor(0.3, dtype=d)]], FLOATS, (0,)),
    Op("quantile_nan", lambda lib, x: (lib.quantile(x, 0.4, dim=1),
                                       lib.nanquantile(x, 0.4, dim=1), lib.nanquantile(x, 0.7)),
       lambda rng, d: [[_with_nans(_no_ties(rng, (5, 6), d), rng)]], FLOATS),
    Op("nanmean", lambda lib, x: (lib.nanmean(x), lib.nanmean(x, 1, keepdim=True)),
       lambda rng, d: [[_nan_slices_defined(_with_nans(rand(rng, (4, 6), d), rng))],
                       [_nan_row(_with_nans(rand(rng, (4, 6), d), rng), 2)]],
       FLOATS + HALVES, (0,)),
    Op("nanmedian", lambda lib, x: (lib.nanmedian(x), tuple(lib.nanmedian(x, 1)),
                                    tuple(lib.nanmedian(x, 0, keepdim=True))),
       lambda rng, d: [[_nan_slices_defined(_with_nans(_no_ties(rng, (4, 7), d), rng, 0.2))]],
       FLOATS),
    Op("mode", lambda lib, x: (tuple(lib.mode(x)), tuple(lib.mode(x, 0, keepdim=True))),
       lambda rng, d: [[rand(rng, (4, 9), d, 0, 1)], [rand(rng, (), d, 0, 1)]],
       INTS + FLOATS),
    Op("logcumsumexp", lambda lib, x: (lib.logcumsumexp(x, 0), lib.logcumsumexp(x * 300, -1)),
       lambda rng, d: [[rand(rng, (5, 9), d)], [rand(rng, (0, 3), d)], [rand(rng, (), d)]],
       FLOATS, (0,)),
    Op("cummax_cummin", lambda lib, x: (tuple(lib.cummax(x, 1)), tuple(lib.cummin(x, 0))),
       lambda rng, d: [[_no_ties(rng, (4, 9), d)], [rand(rng, (1, 0), d)]], FLOATS + INTS, (0,)),
    Op("cummax_nan", lambda lib, x: (tuple(lib.cummax(x, 0)), tuple(lib.cummin(x, 0))),
       lambda rng, d: [[torch.tensor([1.0, 3.0, 3.0, math.nan, 2.0, math.nan, 0.0], dtype=d)]]),
    # special functions (inputs kept away from the poles, where both sides are ill-conditioned)
    unary_op("lgamma", lambda lib: lib.lgamma, 0.05, 20),
    unary_op("lgamma_negative", lambda lib: lib.lgamma, -9.9, -9.1, FLOATS),
    unary_op("digamma", lambda lib: lib.digamma, 0.05, 30),
    unary_op("digamma_negative", lambda lib: lib.digamma, -4.9, -4.1, FLOATS),
    Op("polygamma", lambda lib, x: tuple(lib.polygamma(n, x) for n in (0, 1, 2, 3)),
       lambda rng, d: shapes_unary(rng, d, 0.2, 15), FLOATS, (0,)),
    Op("mvlgamma", lambda lib, x: (lib.mvlgamma(x, 1), lib.mvlgamma(x, 3)),
       lambda rng, d: shapes_unary(rng, d, 1.1, 8), FLOATS, (0,)),
    unary_op("erfinv", lambda lib: lib.erfinv, -0.999, 0.999),
    unary_op("i0", lambda lib: lib.i0, -40, 40),
    unary_op("i0e", lambda lib: lib.special.i0e, -40, 40),
    unary_op("i1", lambda lib: lib.special.i1, -40, 40),
    unary_op("i1e", lambda lib: lib.special.i1e, -40, 40),
    Op("igamma_igammac", lambda lib, a, x: (lib.igamma(a, x), lib.igammac(a, x),
                                            lib.special.gammainc(a, x),
                                            lib.special.gammaincc(a, x)),
       lambda rng, d: [[rand(rng, (3, 4), d, 0.05, 12), rand(rng, (4,), d, 0.01, 25)],
                       [rand(rng, (), d, 0.5, 40), rand(rng, (2, 3), d, 0.01, 60)],
                       [rand(rng, (5,), d, 100, 300), rand(rng, (5,), d, 90, 320)],
                       [torch.tensor([0.0, 0.0, 1.0, -1.0, 1.0, 2.0, math.inf, math.nan, 3.0,
                                      math.inf], dtype=d),
                        torch.tensor([1.0, 0.0, 0.0, 1.0, -1.0, math.inf, 1.0, 1.0, math.nan,
                                      math.inf], dtype=d)],
                       [rand(rng, (0, 3), d, 1, 2), rand(rng, (3,), d, 1, 2)]],
       FLOATS + HALVES, (1,)),
    unary_op("ndtr", lambda lib: lib.special.ndtr, -6, 6),
    unary_op("ndtri", lambda lib: lib.special.ndtri, 0.001, 0.999),
    unary_op("log_ndtr", lambda lib: lib.special.log_ndtr, -40, 5, FLOATS),
    unary_op("logit", lambda lib: lib.logit, 0.01, 0.99),
    Op("logit_eps", lambda lib, x: lib.logit(x, eps=0.1),
       lambda rng, d: shapes_unary(rng, d, 0.0, 1.0), FLOATS, (0,)),
    unary_op("sinc", lambda lib: lib.sinc, -3, 3),
    unary_op("entr", lambda lib: lib.special.entr, 0.01, 3),
    unary_op("expit", lambda lib: lib.special.expit),
    Op("xlog1py", lambda lib, x, y: lib.special.xlog1py(x, y),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4,), d, -0.9, 3)],
                       [torch.zeros(3, dtype=d), rand(rng, (3,), d, -0.9, 3)]], FLOATS, (0, 1)),
    Op("special_aliases", lambda lib, x: (lib.special.gammaln(x), lib.special.psi(x),
                                          lib.special.multigammaln(x, 2),
                                          lib.special.log_softmax(x, 0),
                                          lib.special.logsumexp(x, 0)),
       lambda rng, d: [[rand(rng, (3, 4), d, 1.0, 5.0)]], FLOATS, (0,)),
    unary_op("special_int_input", lambda lib: lib.special.i0, 0, 5, INTS, ()),
    # ops that existed before issue 21, checked here for the forms it lists
    Op("einsum", lambda lib, a, b, c: (
        lib.einsum("bij,jk->bik", a, b), lib.einsum("...ij,jk->...ik", a, b),
        lib.einsum("bii->bi", a), lib.einsum("bii", a), lib.einsum("ij->", b),
        lib.einsum("...j,j", a, c), lib.einsum("i,j->ij", c, c), lib.einsum("iij->j", a[0:1].
                                                                            expand(3, 3, 3)),
        lib.einsum(a, [0, 1, 2], b, [2, 3], [0, 1, 3]), lib.einsum(a, [Ellipsis, 1, 1],
                                                                   [Ellipsis, 1])),
       lambda rng, d: [[rand(rng, (2, 3, 3), d), rand(rng, (3, 4), d), rand(rng, (3,), d)]],
       FLOATS, (0, 1, 2)),
    Op("tensordot_outer", lambda lib, a, b: (lib.tensordot(a, b, 1), lib.tensordot(a, b,
                                                                               ([0], [1]))),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4, 3), d)]], FLOATS, (0, 1)),
    Op("outer_baddbmm_addmv", lambda lib, m, a, b, v: (
        lib.outer(v, v), lib.baddbmm(m, a, b, beta=0.5, alpha=2), lib.addmv(v, m, v)),
       lambda rng, d: [[rand(rng, (3, 3), d), rand(rng, (2, 3, 4), d), rand(rng, (2, 4, 3), d),
                        rand(rng, (3,), d)]], FLOATS, (0, 1, 2, 3)),
    Op("roll", lambda lib, x: (lib.roll(x, 2), lib.roll(x, (1, -2), (0, 1)), lib.roll(x, -1, 1)),
       lambda rng, d: [[rand(rng, (3, 5), d)]], FLOATS + INTS, (0,)),
    Op("masked_scatter", lambda lib, x, m, s: x.masked_scatter(m, s),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4,), torch.bool),
                        rand(rng, (12,), d)]], FLOATS + INTS, (0, 2)),
    Op("aminmax_var_mean", lambda lib, x: (tuple(lib.aminmax(x)), tuple(lib.aminmax(x, dim=1)),
                                           tuple(lib.var_mean(x, 1)), tuple(lib.std_mean(x)),
                                           lib.nansum(x), lib.xlogy(x, x.abs())),
       lambda rng, d: [[rand(rng, (3, 5), d)]], FLOATS, (0,)),
    # smaller numeric and shape functions
    unary_op("deg2rad", lambda lib: lib.deg2rad, -400, 400, FLOATS),
    unary_op("rad2deg", lambda lib: lib.rad2deg, -7, 7, FLOATS),
    unary_op("fix", lambda lib: lib.fix, -7, 7, FLOATS + INTS, ()),
    unary_op("arcsinh", lambda lib: lib.arcsinh, -3, 3, FLOATS),
    Op("isposinf_isneginf", lambda lib, x: (lib.isposinf(x), lib.isneginf(x), lib.positive(x)),
       lambda rng, d: [[torch.tensor([1.0, math.inf, -math.inf, math.nan, 0.0], dtype=d)]],
       FLOATS + HALVES),
    Op("logaddexp2", lambda lib, a, b: lib.logaddexp2(a, b),
       lambda rng, d: [[rand(rng, (3, 4), d, -80, 80), rand(rng, (4,), d, -80, 80)]],
       FLOATS, (0, 1)),
    Op("ldexp", lambda lib, a, b: lib.ldexp(a, b),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4,), d, -3, 3)]],
       FLOATS, (0, 1)),
    Op("frexp", lambda lib, x: tuple(lib.frexp(x)),
       lambda rng, d: shapes_unary(rng, d, -1e3, 1e3) + [[torch.tensor(
           [0.0, -0.0, 1.0, 0.5, 0.75, -8.0, 1e-6, math.inf, -math.inf, math.nan], dtype=d)]],
       FLOATS + HALVES, (0,), half_oracle=False),
    Op("nextafter", lambda lib, a, b: lib.nextafter(a, b),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4,), d)],
                       [torch.tensor([0.0, -0.0, 1.0, 0.5, math.inf, -math.inf, math.nan, 2.0],
                                     dtype=d),
                        torch.tensor([1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0], dtype=d)]],
       FLOATS + HALVES, (0,), half_oracle=False),
    Op("gcd_lcm", lambda lib, a, b: (lib.gcd(a, b), lib.lcm(a, b)),
       lambda rng, d: [[rand(rng, (4, 5), d, -9, 9), rand(rng, (5,), d, -9, 9)],
                       [rand(rng, (0,), d), rand(rng, (0,), d)]], (torch.int64, torch.int32)),
    Op("trace_inner_dist", lambda lib, a, b: (lib.trace(a), lib.inner(a, b), lib.dist(a[1:], b),
                                              lib.dist(a[1:], b, p=1),
                                              lib.dist(a[1:], b, p=math.inf)),
       lambda rng, d: [[rand(rng, (4, 4), d), rand(rng, (3, 4), d)]], FLOATS, (0, 1)),
    Op("renorm", lambda lib, x: (lib.renorm(x, 2, 0, 1.0), lib.renorm(x, 1, -1, 0.5),
                                 lib.renorm(x, 3, 1, 2.5)),
       lambda rng, d: [[rand(rng, (3, 4), d)], [rand(rng, (2, 5, 3), d)]], FLOATS, (0,)),
    Op("trapezoid", lambda lib, y, x: (lib.trapezoid(y), lib.trapezoid(y, x), lib.trapz(y, dx=0.5),
                                       lib.trapezoid(y, dim=0), lib.cumulative_trapezoid(y, x),
                                       lib.cumulative_trapezoid(y, dx=2.0, dim=0)),
       lambda rng, d: [[rand(rng, (3, 5), d), torch.sort(rand(rng, (5,), d)).values]],
       FLOATS, (0, 1)),
    Op("vander", lambda lib, x: (lib.vander(x), lib.vander(x, 3, True)),
       lambda rng, d: [[rand(rng, (4,), d)]], FLOATS + (torch.int64,)),
    Op("diagflat", lambda lib, x: (lib.diagflat(x), lib.diagflat(x, -1)),
       lambda rng, d: [[rand(rng, (2, 2), d)]], FLOATS + (torch.int64,), (0,)),
    Op("splits", lambda lib, x: (lib.hsplit(x, 2), lib.vsplit(x, [1, 3]), lib.dsplit(x, 3),
                                 lib.split_with_sizes(x, [1, 3], 0),
                                 lib.unsafe_chunk(x, 2, 1), lib.unsafe_split(x, 2, 2)),
       lambda rng, d: [[rand(rng, (4, 6, 3), d)]], FLOATS + INTS, (0,)),
    Op("unravel_index", lambda lib, i: lib.unravel_index(i, (3, 4, 5)),
       lambda rng, d: [[rand(rng, (2, 7), d, 0, 19)]], (torch.int64,)),
    Op("broadcast_tensors", lambda lib, a, b: lib.broadcast_tensors(a, b),
       lambda rng, d: [[rand(rng, (3, 1), d), rand(rng, (4,), d)]], FLOATS + INTS, (0, 1)),
    Op("combinations", lambda lib, x: (lib.combinations(x), lib.combinations(x, 3),
                                       lib.combinations(x, 2, with_replacement=True)),
       lambda rng, d: [[rand(rng, (5,), d)]], FLOATS + INTS, (0,)),
    Op("rsub", lambda lib, a, b: (lib.rsub(a, b), lib.rsub(a, b, alpha=2), lib.rsub(a, 3)),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (4,), d)]], FLOATS + INTS, (0, 1)),
    Op("method_extras", lambda lib, x, y, c: (x.type_as(y), x.where(c, y), x.sum_to_size(1, 4),
                                              x.sum_to_size(4), x.is_signed(),
                                              x.is_same_size(y), x[0, :1].is_nonzero()),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3, 4), torch.float64),
                        rand(rng, (3, 4), torch.bool)]], FLOATS + INTS, (0,)),
    Op("inplace_methods", lambda lib, x, s: (x.clone().addr_(s[0, :3], s[1]),
                                             x.clone().lgamma_(), x.clone().cumsum_(1),
                                             x.clone().deg2rad_(), x.clone().swapaxes_(0, 1),
                                             x.clone().fill_diagonal_(7.0),
                                             lib.abs_(x.clone()), lib.sigmoid_(x.clone())),
       lambda rng, d: [[rand(rng, (3, 4), d, 0.5, 3), rand(rng, (2, 4), d)]], FLOATS),
    Op("fill_diagonal_wrap", lambda lib, x: x.clone().fill_diagonal_(5, wrap=True),
       lambda rng, d: [[rand(rng, (7, 3), d)]], FLOATS + INTS),
    Op("gradient", lambda lib, x, c: (
        lib.gradient(x), lib.gradient(x, spacing=2.0, dim=1, edge_order=2),
        lib.gradient(x, spacing=[0.5, 3.0]), lib.gradient(x, spacing=(c,), dim=-1),
        lib.gradient(x, spacing=(c,), dim=1, edge_order=2)),
       lambda rng, d: [[rand(rng, (4, 5), d), torch.cumsum(rand(rng, (5,), d, 0.5, 1.5), 0)],
                       [rand(rng, (3, 5), d), torch.cumsum(rand(rng, (5,), d, 0.5, 1.5), 0)]],
       FLOATS, (0, 1)),
    Op("gradient_int", lambda lib, x: (lib.gradient(x), lib.gradient(x, dim=0, edge_order=2)),
       lambda rng, d: [[rand(rng, (3, 4), d)]], (torch.int64, torch.int32)),
    Op("frobenius_nuclear_norm", lambda lib, x, y: (
        lib.frobenius_norm(x, (0, 1)), lib.frobenius_norm(x, 1, True), lib.nuclear_norm(x),
        lib.nuclear_norm(x, True), lib.nuclear_norm(y, (1, 2))),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (2, 3, 4), d)]], FLOATS, (0, 1)),
    Op("norm_except_dim", lambda lib, v: (lib.norm_except_dim(v, 2, 0),
                                          lib.norm_except_dim(v, 3, 1),
                                          lib.norm_except_dim(v, 2, -1),
                                          lib.norm_except_dim(v, 2, 2)),
       lambda rng, d: [[rand(rng, (3, 4, 5), d)]], FLOATS, (0,)),
    # the torch-namespace forms of nn.functional's ops (ATen's argument orders)
    Op("nn_dropout_eval", lambda lib, x: (
        lib.dropout(x, 0.5, False), lib.dropout(x, 0.0, True), lib.dropout(x, 1.0, True),
        lib.alpha_dropout(x, 0.3, False), lib.feature_alpha_dropout(x, 0.3, False),
        lib.feature_dropout(x, 0.3, False), lib.feature_dropout(x, 1.0, True)),
       lambda rng, d: [[rand(rng, (2, 3, 4), d)]], FLOATS, (0,)),
    Op("nn_embedding", lambda lib, w, i: (lib.embedding(w, i), lib.embedding(w, i, -1)),
       lambda rng, d: [[rand(rng, (6, 3), d), rand(rng, (2, 4), torch.int64, 0, 1)]],
       FLOATS, (0,)),
    Op("nn_embedding_padding", lambda lib, w, i: lib.embedding(w, i, 2),
       lambda rng, d: [[rand(rng, (6, 3), d), rand(rng, (2, 4), torch.int64, 0, 1)]], FLOATS),
    Op("nn_embedding_renorm_", lambda lib, w, i: lib.embedding_renorm_(w.clone(), i, 1.0, 2.0),
       lambda rng, d: [[rand(rng, (6, 3), d), rand(rng, (2, 4), torch.int64, 0, 1)]], FLOATS),
    Op("nn_batch_instance_norm", lambda lib, x, w, b, m, v: (
        lib.batch_norm(x, w, b, m, v, False, 0.1, 1e-5, False),
        lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
        lib.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)),
       lambda rng, d: [[rand(rng, (4, 3, 5), d), rand(rng, (3,), d), rand(rng, (3,), d),
                        rand(rng, (3,), d), rand(rng, (3,), d, 0.5, 2.0)]], FLOATS, (0, 1, 2)),
    Op("nn_pad_pool1d", lambda lib, x: (
        lib.constant_pad_nd(x, (1, 2, 0, 1), 3.0), lib.max_pool1d(x, 3),
        lib.max_pool1d(x, 2, 1, 1), lib.avg_pool1d(x, 3, [], 1),
        lib.avg_pool1d(x, 2, 2, 0, True, False), lib.adaptive_avg_pool1d(x, 4),
        lib.adaptive_max_pool1d(x, 4)),
       lambda rng, d: [[rand(rng, (2, 3, 9), d)]], FLOATS, (0,)),
    Op("nn_pool2d_3d", lambda lib, x, y: (lib.max_pool2d(x, 2), lib.max_pool2d(x, 3, 2, 1, 1, True),
                                          lib.max_pool3d(y, 2), lib.max_pool3d(y, 2, [])),
       lambda rng, d: [[rand(rng, (1, 2, 6, 7), d), rand(rng, (1, 2, 4, 4, 4), d)]],
       FLOATS, (0, 1)),
    Op("nn_losses", lambda lib, x, y, z: (
        lib.kl_div(x, y.abs(), 1), lib.kl_div(x, y, log_target=True), lib.kl_div(x, y.abs(), 2),
        lib.binary_cross_entropy_with_logits(x, lib.sigmoid(y), None, None, 2),
        lib.binary_cross_entropy_with_logits(x, lib.sigmoid(y), lib.sigmoid(z),
                                             lib.sigmoid(z[0]), 0),
        lib.hinge_embedding_loss(x, lib.sign(y), 0.5, 1),
        lib.margin_ranking_loss(x, y, lib.sign(z), 0.2, 2),
        lib.poisson_nll_loss(x, y.abs(), True, False, 1e-8, 1),
        lib.poisson_nll_loss(x.abs(), y.abs() * 3, False, True, 1e-8, 0)),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3, 4), d), rand(rng, (3, 4), d)]],
       FLOATS, (0, 1)),
    Op("nn_embedding_losses", lambda lib, a, b, c: (
        lib.cosine_embedding_loss(a, b, lib.sign(c[:, 0]), 0.1, 1),
        lib.triplet_margin_loss(a, b, c),
        lib.triplet_margin_loss(a, b, c, 0.5, 1.0, 1e-6, True, 1)),
       lambda rng, d: [[rand(rng, (4, 5), d), rand(rng, (4, 5), d), rand(rng, (4, 5), d)]],
       FLOATS, (0, 1, 2)),
    Op("nn_ctc_loss", lambda lib, lp, tg: (
        lib.ctc_loss(lp.log_softmax(2), tg % 3 + 1, [6, 6], [3, 3]),
        lib.ctc_loss(lp.log_softmax(2), tg % 3 + 1, [6, 5], [3, 2], 0, 2, True),
        lib.ctc_loss(lp.log_softmax(2), tg % 3 + 1, [6, 5], [3, 2], 0, 1)),
       lambda rng, d: [[rand(rng, (6, 2, 4), d), rand(rng, (2, 3), torch.int64, 0, 1)]],
       FLOATS, (0,)),
    Op("nn_activations", lambda lib, x, w: (
        lib.threshold(x, 0.1, 20.0), lib.threshold_(x.clone(), 0.0, -1.0), lib.selu_(x.clone()),
        lib.celu_(x.clone(), 0.5), lib.rrelu(x, 0.1, 0.3), lib.rrelu_(x.clone()),
        lib.prelu(x, w), x.prelu(w), x.hardshrink(0.3)),
       lambda rng, d: [[rand(rng, (2, 3, 4), d), rand(rng, (3,), d)]], FLOATS, (0, 1)),
    Op("nn_distances", lambda lib, a, b: (
        lib.cosine_similarity(a, b), lib.cosine_similarity(a, b, 0, 1e-6),
        lib.pairwise_distance(a, b), lib.pairwise_distance(a, b, 1.0, 1e-6, True),
        lib.pdist(a), lib.pdist(a, 3.0)),
       lambda rng, d: [[rand(rng, (4, 5), d), rand(rng, (4, 5), d)]], FLOATS, (0, 1)),
    Op("nn_bilinear_shuffles", lambda lib, a, b, w, bias, x: (
        lib.bilinear(a, b, w, bias), lib.pixel_shuffle(x, 2), lib.pixel_unshuffle(x, 2),
        lib.channel_shuffle(x, 2)),
       lambda rng, d: [[rand(rng, (3, 4), d), rand(rng, (3, 5), d), rand(rng, (2, 4, 5), d),
                        rand(rng, (2,), d), rand(rng, (1, 8, 2, 4), d)]], FLOATS, (0, 1, 2, 3, 4)),
    Op("nn_convs", lambda lib, x, w, y, wt: (
        lib.conv3d(x, w), lib.conv3d(x, w, None, 1, 1), lib.conv_transpose1d(y, wt),
        lib.conv_transpose2d(y.unsqueeze(-1), wt.unsqueeze(-1), None, 2),
        lib.conv_transpose3d(y[..., None, None], wt[..., None, None])),
       lambda rng, d: [[rand(rng, (1, 2, 4, 4, 4), d), rand(rng, (3, 2, 2, 2, 2), d),
                        rand(rng, (1, 2, 5), d), rand(rng, (2, 3, 3), d)]], FLOATS, (0, 1, 2, 3)),
    Op("nn_convolution", lambda lib, x, w, b, y, wt: (
        lib.convolution(x, w, b, [1, 2], [1, 0], [1, 1], False, [0, 0], 1),
        lib.convolution(x, w[:, :1], None, [1, 1], [0, 0], [2, 1], False, [0, 0], 2),
        lib.convolution(y, wt, None, [2], [1], [1], True, [1], 1),
        lib.convolution(y, w[..., 0, :], b, [1], [0], [1], False, [0], 1)),
       lambda rng, d: [[rand(rng, (2, 2, 5, 6), d), rand(rng, (4, 2, 3, 3), d), rand(rng, (4,), d),
                        rand(rng, (1, 2, 5), d), rand(rng, (2, 3, 3), d)]],
       FLOATS, (0, 1, 2, 3, 4)),
    Op("nn_grid_sampler", lambda lib, x, theta, g: (
        lib.affine_grid_generator(theta, (2, 3, 4, 5), False),
        lib.grid_sampler(x, lib.affine_grid_generator(theta, (2, 3, 4, 5), True), 0, 0, True),
        lib.grid_sampler_2d(x, g, 1, 1, False), lib.grid_sampler(x, g, 2, 2, False)),
       lambda rng, d: [[rand(rng, (2, 3, 6, 5), d), rand(rng, (2, 2, 3), d, -0.6, 0.6),
                        rand(rng, (2, 4, 5, 2), d, -1.2, 1.2)]], FLOATS, (0, 1)),
    Op("new_empty_strided", lambda lib, x: x.new_empty_strided((2, 3), (1, 2)).fill_(1.5),
       lambda rng, d: [[rand(rng, (3, 4), d)]], FLOATS),
    Op("nn_cells", lambda lib, x, h, c, w4, u4, b4, w3, u3, b3, w1, u1, b1: (
        lib.rnn_tanh_cell(x, h, w1, u1, b1, b1), lib.rnn_relu_cell(x, h, w1, u1),
        lib.lstm_cell(x, (h, c), w4, u4, b4, b4), lib.gru_cell(x, h, w3, u3, b3, b3),
        lib.gru_cell(x, h, w3, u3)),
       lambda rng, d: [[rand(rng, s, d) for s in ((2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,),
                                                  (12, 3), (12, 4), (12,), (4, 3), (4, 4), (4,))]],
       FLOATS, tuple(range(12))),
]

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _mirror(t, device, layout):
    g = from_torch(t, device=device)
    return lay_out(g, layout) if t.ndim >= 2 and layout != "contiguous" else g


def _compare(g, t, op):
    """Compare a genesis result with torch's: tensors, tuples of them, or plain values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(g, genesis.Tensor), f"{op}: got {type(g).__name__}"
        dtype = GENESIS_DTYPES[t.dtype]
        assert_close(g, t, dtype=dtype if dtype.is_floating_point else None)
    elif isinstance(t, (tuple, list)):
        assert len(g) == len(t), f"{op}: {len(g)} results, torch gives {len(t)}"
        for a, b in zip(g, t):
            _compare(a, b, op)
    else:
        assert g == t, f"{op}: {g!r} != {t!r}"


CASES = [(op, d) for op in OPS for d in op.dtypes]


def _half_oracle(compute, dtype):
    """`compute(dtype)`, except that half types are computed in float32 and rounded once: the
    design's rule for half precision (PyTorch rounds intermediates of some half ops, such as its
    windows, logit and ndtr, by a few ulps)."""
    if dtype not in HALVES:
        return compute(dtype)
    return _rounded(compute(torch.float32), dtype)


def _rounded(out, dtype):
    if isinstance(out, (tuple, list)):
        return type(out)(_rounded(o, dtype) for o in out)
    if isinstance(out, torch.Tensor) and out.dtype is torch.float32:
        return out.to(dtype)
    return out


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o.name}-{str(d)[6:]}" for o, d in CASES])
def test_forward(op, dtype, device, rng):
    for tensors in op.samples(rng, dtype):
        wide = [t.float() if t.dtype in HALVES else t for t in tensors]
        expected = _rounded(op.fn(torch, *wide), dtype) if dtype in HALVES and op.half_oracle else \
            op.fn(torch, *tensors)
        for layout in op.layouts:
            got = op.fn(genesis, *(_mirror(t, device, layout) for t in tensors))
            _compare(got, expected, op.name)


GRAD_OPS = [op for op in OPS if op.grad]


def _scalar(out, weights):
    """sum(out * w) over every floating tensor in `out` (a tensor or nested tuple)."""
    if isinstance(out, (tuple, list)):
        parts = [_scalar(o, w) for o, w in zip(out, weights)]
        parts = [p for p in parts if p is not None]
        return sum(parts[1:], parts[0]) if parts else None
    if not isinstance(out, torch.Tensor | genesis.Tensor) or not out.dtype.is_floating_point:
        return None
    return (out * weights).sum()


def _weights_like(out, rng):
    if isinstance(out, (tuple, list)):
        return [_weights_like(o, rng) for o in out]
    if not isinstance(out, torch.Tensor):
        return None
    return torch.from_numpy(rng.standard_normal(tuple(out.shape)))


def _to_genesis_weights(w, device):
    if isinstance(w, list):
        return [_to_genesis_weights(v, device) for v in w]
    return None if w is None else from_torch(w, device=device)


@pytest.mark.parametrize("op", GRAD_OPS, ids=[o.name for o in GRAD_OPS])
def test_gradient(op, device, rng):
    for tensors in op.samples(rng, torch.float64):
        leaves = [t.clone().requires_grad_(i in op.grad and t.dtype.is_floating_point)
                  for i, t in enumerate(tensors)]
        expected = op.fn(torch, *leaves)
        weights = _weights_like(expected, rng)
        loss = _scalar(expected, weights)
        if loss is None or not loss.requires_grad:
            continue
        try:
            loss.backward()
        except RuntimeError as e:  # e.g. aminmax, differentiable only from PyTorch 2.13
            if "is not implemented" not in str(e):
                raise
            pytest.skip(f"the oracle, torch {torch.__version__}, cannot differentiate {op.name}")
        mine = [from_torch(t.detach(), device=device).requires_grad_(t.requires_grad)
                for t in leaves]
        _scalar(op.fn(genesis, *mine), _to_genesis_weights(weights, device)).backward()
        for g, t in zip(mine, leaves):
            if t.requires_grad:
                expected_grad = t.grad if t.grad is not None else torch.zeros_like(t)
                got = g.grad if g.grad is not None else genesis.zeros_like(g)
                assert_close(got, expected_grad)


@pytest.mark.parametrize("op", GRAD_OPS, ids=[o.name for o in GRAD_OPS])
def test_gradcheck(op, rng):
    tensors = op.samples(rng, torch.float64)[0]
    inputs = [from_torch(t).requires_grad_(i in op.grad and t.dtype.is_floating_point)
              for i, t in enumerate(tensors)]
    if not any(x.requires_grad for x in inputs):
        pytest.skip("no differentiable input in this sample")

    def fn(*xs):
        out = op.fn(genesis, *xs)
        flat = out if isinstance(out, (tuple, list)) else (out,)
        flat = [o for o in _flatten(flat)
                if isinstance(o, genesis.Tensor) and o.dtype.is_floating_point]
        return tuple(flat) if len(flat) > 1 else flat[0]
    assert gradcheck(fn, tuple(inputs))


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("q", [0.3, [0.0, 0.6, 1.0]])
def test_quantile_of_a_nan_slice_sends_its_gradient_to_a_nan(name, q, rng):
    """A slice holding a nan (quantile) or only nans (nanquantile) gives nan, and its gradient
    goes to the nan, as torch's; the other slices' gradients are as usual."""
    x = rng.uniform(-2, 2, (4, 5))
    x[0, 2] = x[1, 4] = np.nan
    single = np.array([[np.nan], [0.5]])
    for values in (x, single):
        g = genesis.tensor(values, requires_grad=True)
        t = torch.tensor(values, requires_grad=True)
        weights = rng.uniform(0.5, 2, (len(q),) if isinstance(q, list) else ())
        got = getattr(genesis, name)(g, genesis.tensor(q, dtype=genesis.float64), dim=1)
        expected = getattr(torch, name)(t, torch.tensor(q, dtype=torch.float64), dim=1)
        assert_close(got, expected)
        (got * genesis.tensor(weights).reshape(-1, *[1] * (got.ndim - 1))).sum().backward()
        (expected * torch.tensor(weights).reshape(-1, *[1] * (expected.ndim - 1))).sum().backward()
        assert_close(g.grad, t.grad)


def _flatten(items):
    for item in items:
        if isinstance(item, (tuple, list)):
            yield from _flatten(item)
        else:
            yield item


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.float16,
                                   genesis.bfloat16])
def test_windows(name, dtype, device):
    for length in (0, 1, 2, 5, 8, 33):
        for periodic in (True, False):
            got = getattr(genesis, name)(length, periodic, dtype=dtype, device=device)
            assert_close(got, _half_oracle(lambda d: getattr(torch, name)(length, periodic,
                                                                          dtype=d),
                                           TORCH_DTYPES[dtype]))
    default = getattr(genesis, name)(4, device=device)
    assert default.dtype is genesis.float32 and default.device.type == device
    with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
        getattr(genesis, name)(4, dtype=genesis.int64)


def test_window_options(device):
    assert_close(genesis.hamming_window(7, False, 0.5, 0.5, device=device, dtype=genesis.float64),
                 torch.hamming_window(7, False, 0.5, 0.5, dtype=torch.float64))
    assert_close(genesis.kaiser_window(9, True, 3.0, device=device),
                 torch.kaiser_window(9, True, 3.0))
    assert genesis.hann_window(5, requires_grad=True, device=device).requires_grad


def test_as_strided_scatter_gradient_of_input():
    """PyTorch's gradient for as_strided_scatter's input is wrong (it keeps the overwritten
    region instead of zeroing it), so the input's gradient is checked by gradcheck alone."""
    x = genesis.randn(4, 6, dtype=genesis.float64, requires_grad=True)
    s = genesis.randn(2, 3, dtype=genesis.float64, requires_grad=True)
    assert gradcheck(lambda a, b: genesis.as_strided_scatter(a, b, (2, 3), (6, 2), 1), (x, s))
    genesis.as_strided_scatter(x, s, (2, 3), (6, 2), 1).sum().backward()
    expected = np.ones((4, 6))
    expected.reshape(-1)[1:12:2] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_nonzero_as_tuple_and_take_along_dim(device, rng):
    t = rand(rng, (3, 4), torch.int64, 0, 1)
    g = from_torch(t, device=device)
    _compare(genesis.nonzero(g, as_tuple=True), torch.nonzero(t, as_tuple=True), "nonzero")
    idx = torch.from_numpy(rng.integers(0, 4, (3, 2)))
    _compare(genesis.take_along_dim(g, from_torch(idx, device=device), 1),
             torch.take_along_dim(t, idx, 1), "take_along_dim")


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (2, 1, 4)), (3, (2, 4)),
                                    ([2, 3], [3], [4]), ((2, 1), (1, 3), (4, 3)),
                                    ((2, -1), (2, 3)), ((2, 3), 4), ((0,), (2,))], ids=str)
def test_broadcast_shapes_refusals_as_torch(shapes):
    """Each shape read from its last dim into the common shape, with torch's texts."""
    with pytest.raises((RuntimeError, ValueError)) as expected:
        torch.broadcast_shapes(*shapes)
    with pytest.raises(expected.type, match=re.escape(str(expected.value))):
        genesis.broadcast_shapes(*shapes)


def test_scalar_helpers():
    assert genesis.broadcast_shapes((3, 1), (4,), 4) == torch.broadcast_shapes((3, 1), (4,), 4)
    assert_close(genesis.scalar_tensor(2), torch.scalar_tensor(2))
    assert_close(genesis.scalar_tensor(2, dtype=genesis.int16), torch.scalar_tensor(
        2, dtype=torch.int16))
    x = genesis.ones(2, 3, dtype=genesis.int16)
    assert x.new(4).dtype is genesis.int16 and tuple(x.new(4).shape) == (4,)
    assert_close(x.new([1, 2]), torch.ones(1, dtype=torch.int16).new([1, 2]))
    assert_close(genesis.range(1, 4, 0.5), torch.arange(1, 4.5, 0.5))
    assert_close(genesis.range(5, dtype=genesis.int64), torch.arange(6))
    strided = genesis.empty_strided((2, 3), (1, 2))
    assert tuple(strided.shape) == (2, 3) and strided.stride() == (1, 2)
    assert_close(genesis.fill(genesis.ones(2, dtype=genesis.int32), 3),
                 torch.fill(torch.ones(2, dtype=torch.int32), 3))
    t = genesis.ones(3)
    assert genesis.asarray(t) is t and genesis.asarray(t, copy=True) is not t
    assert_close(genesis.asarray([1, 2], dtype=genesis.float64), torch.asarray([1, 2],
                                                                               dtype=torch.float64))
    with pytest.raises(ValueError, match="copy=False"):
        genesis.asarray(t, dtype=genesis.float64, copy=False)
    assert not genesis.is_inference_mode_enabled()
    with genesis.inference_mode():
        assert genesis.is_inference_mode_enabled()
    with pytest.raises(RuntimeError, match="ambiguous"):
        genesis.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="not expandable to size"):
        genesis.ones(2, 3).sum_to_size(2)


def test_empty_permuted_get_device_to_dlpack(device):
    for size, layout in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,)), ((), ())):
        got = genesis.empty_permuted(size, layout, dtype=genesis.float64, device=device)
        want = torch.empty_permuted(size, layout, dtype=torch.float64)
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
        assert got.dtype is genesis.float64 and got.device.type == device
    assert genesis.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad
    x = genesis.arange(6, device=device).reshape(2, 3)
    assert genesis.get_device(x) == x.get_device() == (-1 if device == "cpu" else 0)
    assert_close(genesis.from_dlpack(genesis.to_dlpack(x)), torch.arange(6).reshape(2, 3))


@pytest.mark.parametrize("inplace", [False, True])
def test_feature_dropout_drops_whole_channels(inplace, device):
    """Training-mode feature dropout: each (N, C) channel is all zeros or all x / (1 - p), and
    about p of them are zeros."""
    genesis.manual_seed(0)
    x = genesis.ones(64, 32, 3, 2, device=device)
    fn = genesis.feature_dropout_ if inplace else genesis.feature_dropout
    out = fn(x.clone(), 0.25, True).cpu().numpy().reshape(64, 32, 6)
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert (out.min(axis=2) == out.max(axis=2)).all()
    assert abs((out[..., 0] == 0).mean() - 0.25) < 0.05


def test_tensor_methods_bound():
    x = genesis.ones(2, 3)
    for name in ("isclose", "allclose", "equal", "bincount", "histc", "histogram", "kron", "addr",
                 "addbmm", "diff", "rot90", "unfold", "slice_scatter", "select_scatter",
                 "diagonal_scatter", "as_strided_scatter", "index_reduce", "index_reduce_",
                 "put", "put_", "cov", "corrcoef", "quantile", "nanquantile", "nanmean",
                 "nanmedian", "mode", "logcumsumexp", "cummax", "cummin", "lgamma", "digamma",
                 "polygamma", "mvlgamma", "erfinv", "i0", "logit", "sinc", "unique_consecutive"):
        assert callable(getattr(x, name)), name
    assert_close(x.polygamma(1), torch.ones(2, 3).polygamma(1))


def test_inplace_variants(rng):
    t = rand(rng, (3, 4), torch.float64)
    g = from_torch(t)
    g.put_(genesis.tensor([0, 5]), genesis.tensor([7.0, 8.0], dtype=genesis.float64))
    assert_close(g, t.clone().put_(torch.tensor([0, 5]), torch.tensor([7.0, 8.0],
                                                                        dtype=torch.float64)))
    src, idx = rand(rng, (3, 2), torch.float64), torch.tensor([1, 1])
    g.index_reduce_(1, from_torch(idx), from_torch(src), "amax")
    assert_close(g, t.clone().put_(torch.tensor([0, 5]), torch.tensor([7.0, 8.0],
                                                                        dtype=torch.float64))
                 .index_reduce_(1, idx, src, "amax"))


def test_igamma_frexp_nextafter_methods_and_autograd(rng, device):
    a, x = rand(rng, (3, 4), torch.float64, 0.5, 5), rand(rng, (3, 4), torch.float64, 0.1, 8)
    for name in ("igamma", "igammac", "nextafter"):
        ours = from_torch(a, device=device)
        assert getattr(ours, name + "_")(from_torch(x, device=device)) is ours
        assert_close(ours, getattr(a.clone(), name + "_")(x))
        assert_close(getattr(from_torch(a, device=device), name)(from_torch(x, device=device)),
                     getattr(a, name)(x))
        half = from_torch(a.half(), device=device)
        getattr(half, name + "_")(from_torch(x, device=device))  # float64 other, as PyTorch
        assert half.dtype is genesis.float16
    for name in ("igamma", "igammac"):
        leaves = [from_torch(t, device=device).requires_grad_() for t in (a, x)]
        out = getattr(genesis, name)(*leaves)
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{name}: input' is not implemented"):
            out.sum().backward()
    m = from_torch(a, device=device).frexp()
    expected = a.frexp()
    assert m.exponent.dtype is genesis.int32 and type(m).__name__ == "frexp"
    assert_close(m.mantissa, expected.mantissa)
    assert_close(m.exponent, expected.exponent)
    assert not m.exponent.requires_grad


ERRORS = [
    (lambda lib: lib.bincount(lib.tensor([-1, 2])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs"),
    (lambda lib: lib.bincount(lib.ones(3)), NotImplementedError, "not implemented for"),
    (lambda lib: lib.bincount(lib.tensor([1, 2]), lib.ones(3)), RuntimeError,
     "weights should be 1-d and have the same length as input"),
    (lambda lib: lib.histc(lib.tensor([1, 2])), NotImplementedError, "not implemented for"),
    (lambda lib: lib.isclose(lib.ones(2), lib.ones(2, dtype=lib.float64)), RuntimeError,
     "did not match"),
    (lambda lib: lib.searchsorted(lib.ones(2, 3), lib.ones(3, 3)), RuntimeError,
     "boundaries tensor should be 1 dimension or the first N-1 dimensions"),
    (lambda lib: lib.searchsorted(lib.ones(3), lib.ones(3), side="middle"), RuntimeError,
     "side can only be 'left' or 'right'"),
    (lambda lib: lib.quantile(lib.ones(3), 1.5), RuntimeError, r"q must be in the range \[0, 1\]"),
    (lambda lib: lib.quantile(lib.ones(3), 0.5, interpolation="cubic"), RuntimeError,
     "interpolation must be one of linear, lower, higher, midpoint or nearest"),
    (lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5), RuntimeError,
     "input tensor must be either float or double dtype"),
    (lambda lib: lib.cov(lib.ones(2, 2, 2)), RuntimeError,
     "expected input to have two or fewer dimensions"),
    (lambda lib: lib.diff(lib.tensor(1.0)), RuntimeError,
     "diff expects input to be at least one-dimensional"),
    (lambda lib: lib.rot90(lib.ones(2, 2), 1, [0, 0]), RuntimeError,
     "expected rotation dims to be different"),
    (lambda lib: lib.ones(4).unfold(0, 5, 1), RuntimeError,
     "maximum size for tensor at dimension 0 is 4 but size is 5"),
    (lambda lib: lib.slice_scatter(lib.ones(4, 4), lib.ones(4, 3), 1, 0, 4, 2), RuntimeError,
     "expected src to have a size equal to the slice of self"),
    (lambda lib: lib.ones(3).index_reduce(0, lib.tensor([0]), lib.ones(1), "sum"), RuntimeError,
     "reduce"),
    (lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1]), lib.ones(3, 2), "amax"),
     RuntimeError, r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"),
    (lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0]), lib.ones(1, 3), "amax"),
     RuntimeError, "source tensor shape must match self tensor shape, excluding the specified "
     "dimension"),
    (lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([0]), lib.ones(1), "median"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin"),
    (lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([3]), lib.ones(1), "sum"),
     RuntimeError, "out of bounds"),
    (lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 4)), RuntimeError,
     "X1 and X2 must have the same number of columns"),
    (lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 3, dtype=lib.int32)), RuntimeError,
     "^cdist only supports floating-point dtypes, X2 got: Int$"),
    (lambda lib: lib.block_diag(lib.ones(2, 2, 2)), RuntimeError,
     "Input tensors must have 2 or fewer dimensions"),
    (lambda lib: lib.ones(3).put(lib.tensor([5]), lib.ones(1)), IndexError, "out of range"),
    (lambda lib: lib.gradient(lib.ones(1, 4)), RuntimeError,
     r"expected each dimension size to be at least edge_order\+1"),
    (lambda lib: lib.gradient(lib.ones(3), edge_order=3), RuntimeError,
     "only supports edge_order=1 and edge_order=2"),
    (lambda lib: lib.gradient(lib.ones(3, 3), spacing=[1.0, 2.0], dim=1), RuntimeError,
     "a spacing argument of length 2 and a dim argument of length 1"),
    (lambda lib: lib.gradient(lib.ones(3, 3), spacing=[lib.tensor(2.0)], dim=1), RuntimeError,
     "expected each element of spacing to have one dimension"),
    (lambda lib: lib.frobenius_norm(lib.ones(2, 2, 2), (0, 1, 2)), RuntimeError,
     "Expected at most 2 dimensions, but got 3 dimensions instead"),
    (lambda lib: lib.empty_permuted((2, 3, 4), (0, 2)), RuntimeError,
     "does not match the length of the physical_layout"),
    (lambda lib: lib.kl_div(lib.ones(2), lib.ones(2), "mean"), TypeError,
     "argument 'reduction' .*must be int, not str"),
    (lambda lib: lib.feature_dropout(lib.ones(3), 0.5, True), RuntimeError,
     "Feature dropout requires at least 2 dimensions in the input"),
    (lambda lib: lib.igamma(lib.tensor([1, 2]), lib.tensor([1, 2])), NotImplementedError,
     "\"igamma_cpu\" not implemented for"),
    (lambda lib: lib.igammac(lib.ones(2), 2.0), TypeError,
     "igammac\\(\\): argument 'other' .*must be Tensor, not float"),
    (lambda lib: lib.frexp(lib.tensor([1, 2])), RuntimeError,
     "frexp\\(\\) only supports floating-point dtypes"),
    (lambda lib: lib.nextafter(lib.tensor([1]), lib.tensor([2])), NotImplementedError,
     "\"nextafter_cpu\" not implemented for"),
    (lambda lib: lib.histogramdd(lib.ones(4, 2), bins=[2]), RuntimeError,
     "The size of bins must be equal to the innermost dimension of the input"),
    (lambda lib: lib.histogramdd(lib.ones(4, 2), bins=2, range=[0.0, 1.0]), RuntimeError,
     "for a 2-dimensional histogram range should have 4 elements, but got 2"),
    (lambda lib: lib.histogramdd(lib.ones(4, 2), bins=0), RuntimeError,
     "bins must be > 0, but got 0 for dimension 0"),
    (lambda lib: lib.histogramdd(lib.ones(4, 2), bins=2, range=(1.0, 0.0, 0.0, 1.0)),
     RuntimeError, "min should not exceed max, but got min 1 max 0 for dimension 0"),
    (lambda lib: lib.histogramdd(lib.ones(4), bins=2), RuntimeError,
     "input tensor should have at least 2 dimensions"),
    (lambda lib: lib.histogramdd(lib.ones(4, 2), bins=2, weight=lib.ones(3)), RuntimeError,
     "should have the same shape as the input tensor excluding its innermost dimension"),
    (lambda lib: lib.histogramdd(lib.tensor([[math.inf, 1.0]]), bins=2), RuntimeError,
     "dimension 0's range \\[inf, inf\\] is not finite"),
    (lambda lib: lib.histogramdd(lib.tensor([[1, 2]]), bins=2), NotImplementedError,
     "\"histogramdd\" not implemented for"),
    (lambda lib: lib.pca_lowrank(lib.ones(4, 3), q=5), ValueError,
     "q\\(=5\\) must be non-negative integer and not greater than min\\(m, n\\)=3"),
    (lambda lib: lib.pca_lowrank(lib.ones(4, 3), niter=-1), ValueError,
     "niter\\(=-1\\) must be non-negative integer"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    make, error, message = ERRORS[case]
    with pytest.raises(error, match=message):
        make(torch)
    with pytest.raises(error, match=message):
        make(genesis)


@pytest.mark.parametrize("name,low,high", [("lgamma", 0.1, 8), ("digamma", 0.1, 8),
                                           ("erfinv", -0.9, 0.9), ("i0", -5, 5),
                                           ("sinc", -2, 2), ("logit", 0.1, 0.9)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_gradients(name, low, high, dtype, device, rng):
    """Half-type gradients: computed in float32 and rounded once, against PyTorch's float64
    gradient rounded to the half type (its float32 one cancels near some zeros, as sinc's at 0)."""
    base = rand(rng, (4, 5), torch.float32, low, high).to(dtype)
    wide = base.double().requires_grad_(True)
    getattr(torch, name)(wide).sum().backward()
    x = from_torch(base, device=device).requires_grad_(True)
    getattr(genesis, name)(x).sum().backward()
    assert x.grad.dtype is GENESIS_DTYPES[dtype]
    assert_close(x.grad, wide.grad.to(dtype))
