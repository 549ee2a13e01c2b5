"""torch.special's orthogonal polynomials on numpy, vectorised: p_n(x) for arrays x and n of one
floating dtype, with PyTorch's CPU evaluation of each (its special cases in its order, its
closed forms for large n on (-1, 1), its three-term recurrence otherwise), so results round as
PyTorch's do.

n is truncated to an integer as PyTorch's CPU kernels convert it; a NaN, infinite or
out-of-range n converts to the most negative int64 there, a negative degree, whose value is 0.
The recurrence runs on the elements that need it, stops for each after its own n - 1 steps
or when its value turns NaN (NaN stays NaN, so that only saves time), and drops finished
elements as it goes. Where PyTorch's recurrence returns an unset variable (x NaN and n >= 2,
for most of them) the result here is NaN.

float32 data: each recurrence step and each closed form is evaluated in float64 and rounded to
float32 once, as PyTorch's vectorised CPU builds round a step that they compute with fused
multiply-adds (and near enough to it that the cancellation in these sums does not tell the
two apart); the branch points (and each step's overflow) stay float32's.
"""

import numpy as np

from .special import branches, numpy_kernel

_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}


def degree(n):
    """n truncated to int64, -1 where PyTorch's conversion gives the most negative int64."""
    valid = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
    return np.where(valid, np.trunc(np.where(valid, n, 0)), -1).astype(np.int64)


def recurrence(q0, n, step, *constants):
    """q after n - 1 steps (p, q) <- (q, step(j, p, q, *constants)) for j = 1, 2, ... from
    (1, q0), for 1-D arrays (q0 where n <= 1)."""
    q = q0.copy()
    live = np.flatnonzero((n > 1) & ~np.isnan(q0))
    p, value = np.ones_like(q0[live]), q0[live]
    steps, constants = n[live] - 1, [c[live].astype(np.float64) for c in constants]
    j = 1
    while live.size:
        wide = step(j, p.astype(np.float64), value.astype(np.float64), *constants)
        p, value = value, wide.astype(q0.dtype)
        done = (steps <= j) | np.isnan(value)
        q[live[done]] = value[done]
        keep = ~done
        live, p, value, steps = live[keep], p[keep], value[keep], steps[keep]
        constants = [c[keep] for c in constants]
        j += 1
    return q


def _polynomial(name):
    """Register fn(x, n) (1-D x, int64 degrees n) as the CPU kernel `name` of (x, n)."""
    def decorate(fn):
        def evaluate(x, n):
            return fn(x.reshape(-1), degree(n).reshape(-1)).reshape(x.shape)
        evaluate.__name__, evaluate.__doc__ = fn.__name__, fn.__doc__
        numpy_kernel(name)(evaluate)
        return fn
    return decorate


def _alternating(n, magnitude):
    """magnitude for even n, -magnitude for odd n."""
    return np.where(n % 2 == 0, magnitude, -magnitude)


def _chebyshev_step(j, p, q, two_y):
    return two_y * q - p


def _closed_form(kind):
    """kind's closed form in t = acos(y), in float64: cos(n t); sin((n+1) t) / sin t (never
    0 on |y| < 1); cos((n+1/2) t) / cos(t/2); sin((n+1/2) t) / sin(t/2)."""
    def form(n, y):
        t = np.arccos(y.astype(np.float64))
        if kind == "t":
            return np.cos(n * t)
        if kind == "u":
            return np.sin((n + 1) * t) / np.sin(t)
        if kind == "v":
            return np.cos((n + 0.5) * t) / np.cos(t / 2.0)
        return np.sin((n + 0.5) * t) / np.sin(t / 2.0)
    return form


# kind: (q0(y), value at y = 1, value at y = -1), of n
_CHEBYSHEV = {
    "t": (lambda y: y, lambda n: np.ones_like(n), lambda n: _alternating(n, 1)),
    "u": (lambda y: y + y, lambda n: n + 1, lambda n: _alternating(n, n + 1)),
    "v": (lambda y: y + y - 1.0, lambda n: np.ones_like(n), lambda n: _alternating(n, n + n + 1)),
    "w": (lambda y: y + y + 1.0, lambda n: n + n + 1, lambda n: _alternating(n, 1)),
}


def _chebyshev(name, kind, first, shifted=False):
    """Register the Chebyshev polynomial of `kind` ("t", "u", "v", "w"), in y = x (or 2x - 1
    when `shifted`), as the CPU kernel `name`: 0 for n < 0, its values at y = +-1, its closed
    form for n >= `first` on |y| < 1, 1 at n = 0, else the recurrence r = 2y q - p from
    (1, q0), which gives q0 at n = 1.

    Where the half angle's cosine (V) or sine (W) rounds, in y's dtype, to 1 (y next to -1 for
    V, to 1 for W: the closed form's denominator vanishes), PyTorch returns the value at y = -1
    for V and the shifted W, W's value at the nearer end (sign of x) for W."""
    q0, top, bottom = _CHEBYSHEV[kind]

    def closed(x, n, y):
        value = _closed_form(kind)(n, y)
        if kind in "tu":
            return value
        half = np.arccos(y) / 2.0
        if kind == "v":
            return np.where(np.sin(half) == 1.0, bottom(n).astype(np.float64), value)
        edge = bottom(n) if shifted else np.where(x > 0, top(n), bottom(n))
        return np.where(np.cos(half) == 1.0, edge.astype(np.float64), value)

    def evaluate(x, n):
        """The polynomial of degree n at x."""
        y = x + x - 1.0 if shifted else x
        return branches((x, n, y), (n < 0, 0.0), (y == 1.0, lambda x, n, y: top(n)),
                        (y == -1.0, lambda x, n, y: bottom(n)),
                        ((n >= first) & (np.abs(y) < 1.0), closed), (n == 0, 1.0),
                        (None, lambda x, n, y: recurrence(q0(y), n, _chebyshev_step, y + y)))
    _polynomial(name)(evaluate)


_chebyshev("chebyshev_polynomial_t", "t", 7)
_chebyshev("chebyshev_polynomial_u", "u", 9)
_chebyshev("chebyshev_polynomial_v", "v", 9)
_chebyshev("chebyshev_polynomial_w", "w", 9)
_chebyshev("shifted_chebyshev_polynomial_t", "t", 7, shifted=True)
_chebyshev("shifted_chebyshev_polynomial_u", "u", 7, shifted=True)
_chebyshev("shifted_chebyshev_polynomial_v", "v", 7, shifted=True)
_chebyshev("shifted_chebyshev_polynomial_w", "w", 5, shifted=True)


def _hermite(x, n, q0, step):
    """0 for n < 0, 1 at n = 0, q0 at n = 1, NaN past the dtype's degree limit (PyTorch's),
    else the recurrence."""
    limit = _HERMITE_LIMIT[x.dtype]
    return branches((x, n), (n < 0, 0.0), (n == 0, 1.0), (n == 1, lambda x, n: q0(x)),
                    (n > limit, np.nan), (None, lambda x, n: recurrence(q0(x), n, step, x)))


@_polynomial("hermite_polynomial_h")
def _hermite_h(x, n):
    """The physicists' Hermite polynomial H_n(x)."""
    return _hermite(x, n, lambda x: x + x,
                    lambda j, p, q, x: (x + x) * q - (2 * j) * p)


@_polynomial("hermite_polynomial_he")
def _hermite_he(x, n):
    """The probabilists' Hermite polynomial He_n(x)."""
    return _hermite(x, n, lambda x: x, lambda j, p, q, x: x * q - j * p)


@_polynomial("laguerre_polynomial_l")
def _laguerre_l(x, n):
    """L_n(x): 1 at x = 0."""
    def step(j, p, q, one_minus_x):
        return ((2 * j + one_minus_x) * q - j * p) / (j + 1)
    return branches((x, n), (n < 0, 0.0), (np.abs(x) == 0.0, 1.0), (n == 0, 1.0),
                    (None, lambda x, n: recurrence(1.0 - x, n, step, 1.0 - x)))


@_polynomial("legendre_polynomial_p")
def _legendre_p(x, n):
    """P_n(x)."""
    def step(j, p, q, x):
        return ((2 * j + 1) * x * q - j * p) / (j + 1)
    return branches((x, n), (n < 0, 0.0),
                    (np.abs(x) == 1.0, lambda x, n: np.where(x > 0, 1, _alternating(n, 1))),
                    (n == 0, 1.0), (None, lambda x, n: recurrence(x.copy(), n, step, x)))
