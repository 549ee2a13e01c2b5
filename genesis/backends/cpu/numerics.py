"""Special functions numpy lacks, in float64 and exact to the last bit where it matters.

`erf` and `erfc` map libm's `math.erf` and `math.erfc` over the array: exact, about 130 ns an element. Models that need a
fast GELU on the CPU use the tanh form (`gelu_tanh`), as GPT-2 did.
"""

import math

import numpy as np

_erf_scalar = np.frompyfunc(math.erf, 1, 1)
_erfc_scalar = np.frompyfunc(math.erfc, 1, 1)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def erf(x):
    """The error function, elementwise; the result has x's floating dtype."""
    return np.asarray(_erf_scalar(x), dtype=np.float64).astype(x.dtype, copy=False)


def erfc(x):
    """1 - erf(x) without its cancellation: accurate far into the right tail."""
    return np.asarray(_erfc_scalar(x), dtype=np.float64).astype(x.dtype, copy=False)


def gelu_tanh(x):
    """GELU's tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def gelu_tanh_backward(g, v):
    """`g` times d/dv of gelu_tanh: 0.5 (1 + t) + 0.5 v (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 v^2),
    t = tanh(sqrt(2/pi) (v + 0.044715 v^3))."""
    t = np.tanh(_SQRT_2_OVER_PI * (v + 0.044715 * (v * v * v)))
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * (v * v))
    return g * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * d_inner)
