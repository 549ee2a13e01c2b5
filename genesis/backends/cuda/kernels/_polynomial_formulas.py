"""The formulas of kernels/special.py's orthogonal polynomials: backends/cpu/polynomials.py's
evaluations (PyTorch's), lane by lane. Special cases and closed forms are chosen per lane by
`tl.where`; the three-term recurrence runs until no lane of the block needs another step,
each lane stopping after its own n - 1 steps or when its value turns NaN. As there, float32
data evaluates each recurrence step and each closed form in float64 and rounds it to float32
once; branch points stay float32's.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ._special_formulas import any_lane

# The degree limit of the Hermite polynomials (PyTorch's): NaN beyond it.
_HERMITE_LIMIT_32 = tl.constexpr(128)
_HERMITE_LIMIT_64 = tl.constexpr(512)
_INT64_RANGE = tl.constexpr(2.0 ** 63)


@triton.jit
def degree(n):
    """n truncated to int64; -1 (a negative degree) for NaN, +-inf and values out of int64's
    range, which PyTorch's CPU conversion turns into the most negative int64."""
    valid = (n == n) & (tl.abs(n) < _INT64_RANGE)
    return tl.where(valid, libdevice.trunc(tl.where(valid, n, 0.0)), -1.0).to(tl.int64)


@triton.jit
def polynomial(OP: tl.constexpr, x, n, live):
    """p_n(x) of the polynomial family OP, for float x and int64 degrees n."""
    if OP == "chebyshev_polynomial_t":
        r = _chebyshev(x, x, n, live, "t", 7)
    elif OP == "chebyshev_polynomial_u":
        r = _chebyshev(x, x, n, live, "u", 9)
    elif OP == "chebyshev_polynomial_v":
        r = _chebyshev(x, x, n, live, "v", 9)
    elif OP == "chebyshev_polynomial_w":
        r = _chebyshev(x, x, n, live, "w", 9)
    elif OP == "shifted_chebyshev_polynomial_t":
        r = _chebyshev(x, x + x - 1.0, n, live, "t", 7)
    elif OP == "shifted_chebyshev_polynomial_u":
        r = _chebyshev(x, x + x - 1.0, n, live, "u", 7)
    elif OP == "shifted_chebyshev_polynomial_v":
        r = _chebyshev(x, x + x - 1.0, n, live, "v", 7)
    elif OP == "shifted_chebyshev_polynomial_w":
        r = _chebyshev(x, x + x - 1.0, n, live, "shifted_w", 5)
    elif OP == "hermite_polynomial_h":
        r = _hermite(x, n, live, x + x, "hermite_h")
    elif OP == "hermite_polynomial_he":
        r = _hermite(x, n, live, x, "hermite_he")
    elif OP == "laguerre_polynomial_l":
        r = _recurrence(x, 1.0 - x, n, live & (x != 0), "laguerre")
        r = tl.where(n == 0, 1.0, r)
        r = tl.where(x == 0, 1.0, r)
        r = tl.where(n < 0, 0.0, r)
    else:
        tl.static_assert(OP == "legendre_polynomial_p", "unknown polynomial")
        edge = tl.abs(x) == 1.0
        r = _recurrence(x, x, n, live & ~edge, "legendre")
        r = tl.where(n == 0, 1.0, r)
        r = tl.where(edge, tl.where((x > 0) | (n % 2 == 0), 1.0, -1.0), r)
        r = tl.where(n < 0, 0.0, r)
    return r


@triton.jit
def _alternating(n, magnitude):
    """magnitude for even n, -magnitude for odd n."""
    return tl.where(n % 2 == 0, magnitude, -magnitude)


@triton.jit
def _chebyshev(x, y, n, live, KIND: tl.constexpr, FIRST: tl.constexpr):
    """A Chebyshev polynomial of KIND ("t", "u", "v", "w"; "shifted_w" is W but for its value
    where the half angle vanishes) in y (x, or 2x - 1 when shifted): 0 for n < 0, its values at
    y = +-1, its closed form in t = acos(y) for n >= FIRST on |y| < 1, 1 at n = 0, else the
    recurrence r = 2y q - p from (1, q0), which gives q0 at n = 1."""
    t = libdevice.acos(y.to(tl.float64))
    nf = n.to(tl.float64)
    if KIND == "t":
        q0 = y
        top = tl.zeros_like(n) + 1
        bottom = _alternating(n, 1)
        closed = libdevice.cos(nf * t)
    elif KIND == "u":
        q0 = y + y
        top = n + 1
        bottom = _alternating(n, n + 1)
        closed = libdevice.sin((nf + 1.0) * t) / libdevice.sin(t)
    elif KIND == "v":
        q0 = y + y - 1.0
        top = tl.zeros_like(n) + 1
        bottom = _alternating(n, n + n + 1)
        closed = libdevice.cos((nf + 0.5) * t) / libdevice.cos(t * 0.5)
        vanishing = libdevice.sin(libdevice.acos(y) * 0.5) == 1.0
        closed = tl.where(vanishing, bottom.to(tl.float64), closed)
    else:
        q0 = y + y + 1.0
        top = n + n + 1
        bottom = _alternating(n, 1)
        if KIND == "w":
            vanished = tl.where(x > 0, top, bottom)
        else:
            vanished = bottom
        closed = libdevice.sin((nf + 0.5) * t) / libdevice.sin(t * 0.5)
        vanishing = libdevice.cos(libdevice.acos(y) * 0.5) == 1.0
        closed = tl.where(vanishing, vanished.to(tl.float64), closed)
    use_closed = (n >= FIRST) & (tl.abs(y) < 1.0)
    edge = tl.abs(y) == 1.0
    r = _recurrence(y + y, q0, n, live & ~edge & ~use_closed & (n >= 0), "chebyshev")
    r = tl.where(n == 0, 1.0, r)
    r = tl.where(use_closed, closed.to(y.dtype), r)
    r = tl.where(edge, tl.where(y > 0, top, bottom).to(y.dtype), r)
    return tl.where(n < 0, 0.0, r)


@triton.jit
def _hermite(x, n, live, q0, FAMILY: tl.constexpr):
    """0 for n < 0, 1 at n = 0, NaN past the dtype's degree limit, else the recurrence."""
    if x.dtype == tl.float64:
        limit = _HERMITE_LIMIT_64
    else:
        limit = _HERMITE_LIMIT_32
    beyond = n > limit
    r = _recurrence(x, q0, n, live & ~beyond, FAMILY)
    r = tl.where(beyond, float("nan"), r)
    r = tl.where(n == 0, 1.0, r)
    return tl.where(n < 0, 0.0, r)


@triton.jit
def _recurrence(x, q0, n, lanes, FAMILY: tl.constexpr):
    """q after n - 1 steps (p, q) <- (q, r) from (1, q0) on `lanes` (q0 elsewhere), r being
    FAMILY's recurrence at step j = 1, 2, ... ("chebyshev": x is 2y there), computed in
    float64 and rounded to q0's dtype."""
    p = tl.zeros_like(q0) + 1.0
    q = q0
    steps = n - 1
    live = lanes & (steps >= 1) & (q0 == q0)
    if FAMILY == "laguerre":
        a = (1.0 - x).to(tl.float64)
    else:
        a = x.to(tl.float64)
    j = 1
    while any_lane(live):
        k = (tl.zeros_like(n) + j).to(tl.float64)
        pw = p.to(tl.float64)
        qw = q.to(tl.float64)
        if FAMILY == "chebyshev":
            r = a * qw - pw
        elif FAMILY == "hermite_h":
            r = (a + a) * qw - (k + k) * pw
        elif FAMILY == "hermite_he":
            r = a * qw - k * pw
        elif FAMILY == "laguerre":
            r = (((k + k) + a) * qw - k * pw) / (k + 1.0)
        else:
            r = ((k + k + 1.0) * a * qw - k * pw) / (k + 1.0)
        p = tl.where(live, q, p)
        q = tl.where(live, r.to(q0.dtype), q)
        live = live & (steps > j) & (q == q)
        j += 1
    return q
