"""Window functions of length M, as torch.signal.windows (and scipy.signal.windows): each is
sampled from a linspace of the window's argument on the device, so `requires_grad` gives a
window differentiable in that argument, as torch's.

`sym=True` gives the symmetric window (filter design); `sym=False` the periodic one (spectral
analysis), which is the symmetric window of length M + 1 without its last sample.
"""

import math
from collections.abc import Iterable

from .. import dtypes
from ..layouts import strided
from ..ops import creation, ranges
from ..ops import elementwise as ew
from ..special import i0

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checked_dtype(name, M, dtype, layout):
    """The window's dtype (the default one for None); torch's errors for a bad M, layout or
    dtype."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M, dtype, device, requires_grad):
    """The window of length 0 (empty) or 1 (a one); None for longer ones."""
    if M == 0:
        return creation.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return creation.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _samples(start, step, M, dtype, device, requires_grad):
    """M points start, start + step, ...: the window's argument."""
    return ranges.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device,
                           requires_grad=requires_grad)


def _span(M, sym):
    """The denominator of the window's argument: M - 1 symmetric, M periodic."""
    return M - 1 if sym else M


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau)."""
    dtype = _checked_dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _samples(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return ew.exp(-ew.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M): the sine window."""
    dtype = _checked_dtype("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return ew.sin(_samples(0.5 * constant, constant, M, dtype, device, requires_grad))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None,
             requires_grad=False):
    """exp(-(n - (M - 1)/2)^2 / (2 std^2))."""
    dtype = _checked_dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    constant = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _samples(start * constant, constant, M, dtype, device, requires_grad)
    return ew.exp(-(k ** 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None,
           requires_grad=False):
    """I0(beta sqrt(1 - (2n / span - 1)^2)) / I0(beta), with beta's arithmetic in the window's
    dtype, as torch's."""
    dtype = _checked_dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    beta = creation.tensor(beta, dtype=dtype, device=device)
    start = -beta
    end = ew.minimum(beta, start + (M - 1) * (2.0 * beta / _span(M, sym)))
    k = ranges.linspace(start, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return i0(ew.sqrt(beta * beta - k ** 2)) / i0(beta)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None,
                   requires_grad=False):
    """sum_i (-1)^i a_i cos(2 pi i n / span): the cosine-sum windows (Hann, Blackman...)."""
    dtype = _checked_dtype("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _samples(0.0, 2 * math.pi / _span(M, sym), M, dtype, device, requires_grad)
    a_i = creation.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                          requires_grad=requires_grad)
    i = ranges.arange(a_i.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (a_i.unsqueeze(-1) * ew.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / span)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hamming window: general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hann window: general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Blackman window: cosine sum with 0.42, 0.5, 0.08."""
    dtype = _checked_dtype("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """1 - |2n / span - 1|: the triangular window reaching zero at its ends."""
    dtype = _checked_dtype("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _samples(-1.0, 2 / _span(M, sym), M, dtype, device, requires_grad)
    return 1 - ew.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Nuttall window: a four-term cosine sum."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)
