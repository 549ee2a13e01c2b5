"""Alpha dropout (for SELU networks): dropped values are set to SELU's negative saturation and
the result is affinely rescaled, so a zero-mean unit-variance input keeps its mean and variance.
"""

from ...ops import creation, random
from .dropout import _check_p

_ALPHA = 1.7580993408473766  # -SELU's scale * alpha: where SELU saturates


def _alpha_dropout(input, p, training, inplace, noise_shape):
    _check_p(p)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    probe = creation.empty(noise_shape, dtype=input.dtype, device=input.device)
    keep = random.bernoulli(probe, 1.0 - p)
    a = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5
    shift = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    result = input * (keep * a) + shift
    return input.copy_(result) if inplace else result


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Each element kept with probability 1 - p, the others set to -alpha, then a x + b."""
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one draw per (N, C)."""
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 "
                           f"dimensions in the input, got {input.ndim}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, shape)
