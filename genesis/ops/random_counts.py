"""Random counts: `poisson` and `binomial` samples, by PyTorch's algorithms (its CPU sampler's).

Poisson(rate): for rate >= 10 Hormann's transformed rejection (PTRS), else the product of
uniforms until it falls below e^-rate. Binomial(count, prob), with prob folded to p <= 1/2 (the
count of failures then): for count * p >= 10 Hormann's BTRS, else the inversion that adds
geometric gaps until they pass count. Every element draws at once from genesis.rand, so the
samplers run on every device and its generator; each rejection round redraws the elements still
waiting, until none is (one host check per round). Values are computed in float32 for the half
types and float32, in float64 for float64.
"""

import math

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from .common import broadcast_shapes
from .creation import ones_like, tensor, zeros_like
from .elementwise import abs, exp, floor, log, log1p, sqrt, where
from .gather_scatter import take
from .random import rand
from .special import lgamma

_HALF = (dtypes.float16, dtypes.bfloat16)


def _uniform(like, generator):
    return rand(*like.shape, generator=generator, dtype=like.dtype, device=like.device)


def _until_done(done, step):
    """Run `step(done) -> newly done` until every element is done."""
    while not bool(done.all()):
        done = done | step(done)


def _poisson_small(rate, generator):
    """Poisson counts for rate < 10: how many uniforms multiply to more than e^-rate."""
    limit = exp(-rate)
    count, product = zeros_like(rate), ones_like(rate)

    def step(done):
        nonlocal count, product
        product = product * _uniform(rate, generator)
        above = product > limit
        count = where(done, count, count + above.to(rate.dtype))
        return ~above
    _until_done(rate == 0, step)
    return count


def _transformed_rejection(a, b, shift, accepts, generator):
    """Hormann's transformed rejection: k = floor((2a / us + b) u + shift) for u uniform on
    [-1/2, 1/2), us = 1/2 - |u| and v uniform on [0, 1); each element keeps its first k that
    `accepts(k, us, v)`."""
    out = zeros_like(shift)

    def step(done):
        nonlocal out
        u = _uniform(shift, generator) - 0.5
        v = _uniform(shift, generator)
        us = (0.5 - abs(u)).clamp(min=1e-30)
        k = floor((2 * a / us + b) * u + shift)
        accept = accepts(k, us, v)
        out = where(done | ~accept, out, k)
        return accept
    _until_done(zeros_like(shift).bool(), step)
    return out


def _poisson_ptrs(rate, generator):
    """Poisson counts for rate >= 10 by transformed rejection with squeeze (PTRS)."""
    slam, loglam = sqrt(rate), log(rate)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2)

    def accepts(k, us, v):
        squeeze = (us >= 0.07) & (v <= vr)
        rejected = (k < 0) | ((us < 0.013) & (v > us))
        bound = -rate + k * loglam - lgamma(k.clamp(min=0) + 1)
        return squeeze | (~rejected & (log(v) + log_inv_alpha - log(a / (us * us) + b)
                                       <= bound))
    return _transformed_rejection(a, b, rate + 0.43, accepts, generator)


def _poisson(rate, generator):
    large = rate >= 10
    small = _poisson_small(where(large, 0.0, rate), generator)
    if not bool(large.any()):
        return small
    return where(large, _poisson_ptrs(where(large, rate, 10.0), generator), small)


_STIRLING_TAILS = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                   0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                   0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                   0.00833056343336287)


def _stirling_tail(k):
    """log(k!) less Stirling's approximation of it: tabled up to 9, by its series above."""
    table = tensor(_STIRLING_TAILS, dtype=k.dtype, device=k.device)
    small = take(table, k.clamp(0, 9).long())
    kp1 = k + 1
    kp1sq = kp1 * kp1
    series = (1 / 12 - (1 / 360 - 1 / 1260 / kp1sq) / kp1sq) / kp1
    return where(k <= 9, small, series)


def _binomial_btrs(n, p, generator):
    """Binomial counts for n p >= 10, p <= 1/2, by transformed rejection (BTRS)."""
    stddev = sqrt(n * p * (1 - p))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1 - p)
    alpha = (2.83 + 5.1 / b) * stddev
    m = floor((n + 1) * p)
    mode_terms = ((m + 0.5) * log((m + 1) / (r * (n - m + 1))) + _stirling_tail(m)
                  + _stirling_tail(n - m))

    def accepts(k, us, v):
        inside = (k >= 0) & (k <= n)
        kk = where(inside, k, 0.0)
        squeeze = (us >= 0.07) & (v <= v_r)
        bound = (mode_terms + (n + 1) * log((n - m + 1) / (n - kk + 1))
                 + (kk + 0.5) * log(r * (n - kk + 1) / (kk + 1))
                 - _stirling_tail(kk) - _stirling_tail(n - kk))
        return inside & (squeeze | (log(v * alpha / (a / (us * us) + b)) <= bound))
    return _transformed_rejection(a, b, c, accepts, generator)


def _binomial_inversion(n, p, generator):
    """Binomial counts for n p < 10: geometric gaps between successes, added until they pass
    n."""
    log_q = log1p(-p)
    gaps, count = zeros_like(n), zeros_like(n)

    def step(done):
        nonlocal gaps, count
        gaps = gaps + (log(_uniform(n, generator)) / log_q).ceil()
        passed = gaps > n
        count = where(done | passed, count, count + 1)
        return passed
    _until_done((n <= 0) | (p <= 0), step)
    return count


def _binomial(count, prob, generator):
    flip = prob > 0.5
    p = where(flip, 1 - prob, prob)
    valid = (count > 0) & (p > 0)
    n, p = where(valid, count, 0.0), where(valid, p, 0.0)
    large = n * p >= 10
    k = _binomial_inversion(where(large, 0.0, n), where(large, 0.0, p), generator)
    if bool(large.any()):
        k = where(large, _binomial_btrs(where(large, n, 20.0), where(large, p, 0.5), generator), k)
    k = where(valid, where(flip, n - k, k), where(prob >= 1, count.clamp(min=0), 0.0))
    return where(prob != prob, math.nan, k)


class Sample(Function):
    """Samples of a distribution whose parameters are `params`: PyTorch gives Poisson rates a
    zero gradient and binomial parameters none (an error)."""

    @staticmethod
    def forward(ctx, name, sampler, generator, *params):
        ctx.name = name
        compute = dtypes.float64 if params[0].dtype is dtypes.float64 else dtypes.float32
        return sampler(*(p.to(compute) for p in params), generator).to(params[0].dtype)

    @staticmethod
    def backward(ctx, g):
        if ctx.name == "binomial":
            raise RuntimeError("derivative for aten::binomial is not implemented")
        return None, None, None, zeros_like(g)


def _check_tensor(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def poisson(input, generator=None):
    """Samples of Poisson(input) elementwise, in input's floating type."""
    _check_tensor("poisson", "input", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_{input.device.type}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(input.dtype)}'")
    if input.numel() and not bool((input.detach() >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return Sample.apply("poisson", _poisson, generator, input)


def binomial(count, prob, generator=None):
    """Samples of Binomial(count, prob) elementwise (broadcast together), in count's floating
    type, which prob must share."""
    _check_tensor("binomial", "count", count)
    _check_tensor("binomial", "prob", prob)
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype.name}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.name} but expected {count.dtype.name}")
    if count.dtype in _HALF:
        raise NotImplementedError(f"\"binomial_{count.device.type}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(count.dtype)}'")
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape), op="binomial")
    return Sample.apply("binomial", _binomial, generator, count.expand(shape),
                        prob.expand(shape))


__all__ = ["poisson", "binomial"]
