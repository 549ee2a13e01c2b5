"""In-place random fills with other distributions, drawn by transforming the uniform and normal
fills of ops/random.py (so every device and generator that has those has these): log_normal_,
cauchy_, geometric_."""

import math

from .. import dtypes
from ..autograd.grad_mode import no_grad
from .creation import empty_like
from .elementwise import ceil, clamp_min, log, tan
from .random import normal_, uniform_


def _check_float(self, op):
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(self.dtype)}'")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std**2)) values."""
    _check_float(self, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    with no_grad():
        return self.copy_(normal_(empty_like(self), mean, std, generator=generator).exp())


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy(median, sigma) values: median + sigma tan(pi (u - 1/2))."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {self.dtype.name}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    with no_grad():
        u = uniform_(empty_like(self), generator=generator)
        return self.copy_(median + sigma * tan(math.pi * (u - 0.5)))


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with no_grad():
        u = uniform_(empty_like(self, dtype=_draw_dtype(self)), generator=generator)
        trials = clamp_min(ceil(log(1 - u) / math.log1p(-p)), 1)
        return self.copy_(trials)


def _draw_dtype(self):
    """float64 draws for float64 tensors, float32 for every other type."""
    return self.dtype if self.dtype in (dtypes.float32, dtypes.float64) else dtypes.float32


class RandomFillsMethods:
    """Tensor methods of this family."""

    log_normal_ = log_normal_
    cauchy_ = cauchy_
    geometric_ = geometric_
