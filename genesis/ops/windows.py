"""Window functions for spectral analysis: hann, hamming, blackman, bartlett, kaiser.

A periodic window of length N is the symmetric window of length N + 1 without its last point.
Values are computed in the requested floating type (float32 for half types, rounded once).
"""

import math

from .. import dtypes
from .creation import full, ones, zeros
from .elementwise import abs, cos, sqrt
from .ranges import arange
from .special import i0


def _window(op, length, periodic, dtype, device, requires_grad, shape):
    """`shape(n, m)` over n = 0..N-1 with m = N - 1 (N + 1 points when periodic, last dropped)."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype.name}")
    if length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length="
                           f"{length}")
    if length <= 1:
        make = ones if length == 1 else zeros
        return make(length, dtype=dtype, device=device, requires_grad=requires_grad)
    work = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
    m = length if periodic else length - 1
    n = arange(length, dtype=work, device=device)
    out = shape(n, m).to(dtype)
    return out.requires_grad_(True) if requires_grad else out


def _cosine_sum(*coefficients):
    """a0 - a1 cos(2 pi n / m) + a2 cos(4 pi n / m) - ...: the generalized cosine window."""
    def shape(n, m):
        out = coefficients[0]
        for k, a in enumerate(coefficients[1:], 1):
            out = out + (-1) ** k * a * cos(2 * math.pi * k * n / m)
        return out
    return shape


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The triangle 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: 1 - abs(2 * n / m - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)."""
    def shape(n, m):
        r = 2 * n / m - 1
        return i0(beta * sqrt((1 - r * r).clamp(min=0))) / i0(full((), beta, dtype=n.dtype, device=n.device))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, shape)


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]
