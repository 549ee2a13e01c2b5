"""Helpers the distributions share: broadcasting parameters, probabilities <-> logits,
lazily computed parameters, and log-gamma / digamma for positive arguments."""

import math
import numbers

import numpy as np

import genesis
from ..ops.common import broadcast_shapes

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_SHIFT = 10  # recurrence steps before the asymptotic series (its error is then < 1e-14)


def broadcast_all(*values):
    """Tensors and Python numbers broadcast to one shape; numbers take the tensors' dtype and
    device (the default dtype when there are no tensors)."""
    tensors = [v for v in values if isinstance(v, genesis.Tensor)]
    if not tensors and not all(isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "genesis.Tensor or objects implementing __torch_function__.")
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None else genesis.get_default_dtype()
    device = like.device if like is not None else None
    out = [v if isinstance(v, genesis.Tensor) else
           genesis.tensor(float(v), dtype=dtype, device=device) for v in values]
    return broadcast_tensors(*out)


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape."""
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return [t if tuple(t.shape) == shape else t.expand(*shape) for t in tensors]


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def clamp_probs(probs):
    """Probabilities kept eps away from 0 and 1 (so their logits are finite)."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def finfo(dtype):
    """numpy's finfo of a genesis floating dtype."""
    return np.finfo(dtype.numpy_dtype)


def tiny(dtype):
    return float(finfo(dtype).tiny)


def eps(dtype):
    return float(finfo(dtype).eps)


class lazy_property:
    """A property computed on first access and then stored on the instance."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        setattr(instance, self.fn.__name__, value)
        return value


def _shifted(x):
    """(x + _SHIFT, sum over k < _SHIFT of f(x + k)) helpers for the recurrences."""
    return x + _SHIFT, [x + k for k in range(_SHIFT)]


def lgamma(x):
    """log Gamma(x) for x > 0: the recurrence Gamma(x) = Gamma(x + 10) / (x (x+1) ... (x+9))
    and Stirling's series at x + 10; differentiable (its derivative is `digamma`)."""
    z, steps = _shifted(x)
    r = 1 / (z * z)
    series = (1 / 12 + r * (-1 / 360 + r * (1 / 1260 + r * (-1 / 1680 + r / 1188)))) / z
    stirling = (z - 0.5) * z.log() - z + _HALF_LOG_2PI + series
    return stirling - sum(s.log() for s in steps)


def digamma(x):
    """d/dx log Gamma(x) for x > 0: the recurrence psi(x) = psi(x + 10) - sum 1/(x + k) and the
    asymptotic series at x + 10."""
    z, steps = _shifted(x)
    r = 1 / (z * z)
    series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * 5 / 660))))
    return z.log() - 0.5 / z - series - sum(1 / s for s in steps)


def _tril_positions(n, diag):
    """Flat (row-major) positions of the entries of an n x n matrix on or below `diag`."""
    rows, cols = np.tril_indices(n, diag)
    return rows * n + cols


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular entries (on or below `diag`) of (batched) square matrices, row by
    row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = genesis.tensor(_tril_positions(n, diag), dtype=genesis.int64, device=mat.device)
    return mat.reshape(*mat.shape[:-2], n * n).index_select(-1, index)


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of `tril_matrix_to_vec`: vectors laid out as lower-triangular matrices."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > eps(vec.dtype):
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    source = np.zeros(n * n, dtype=np.int64)
    source[_tril_positions(n, diag)] = np.arange(1, m + 1)
    padded = genesis.cat([genesis.zeros(*vec.shape[:-1], 1, dtype=vec.dtype, device=vec.device),
                          vec], -1)
    index = genesis.tensor(source, dtype=genesis.int64, device=vec.device)
    return padded.index_select(-1, index).reshape(*vec.shape[:-1], n, n)
