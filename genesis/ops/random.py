"""Random fills in place (`uniform_`, `normal_`, `random_`, `exponential_`, `bernoulli_`) and the
on-device draws behind the random creation functions.

On a device whose backend registers a kernel named after the fill (CUDA: counter-based Philox,
backends/cuda/kernels/random.py) the values are made where they are stored, from the device's
generator: each fill reserves one Philox counter per element (genesis.random). Elsewhere (the
CPU) they are drawn on the host with the numpy generator and copied in. A view is filled where it
lies; the old values get no gradient, as in PyTorch.
"""

import ml_dtypes
import numpy as np

from .. import dtypes
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..device import as_device, resolve
from ..dispatch import has_kernel, kernel
from ..random import generator_for, rng_for
from ..tensor import Tensor
from . import creation
from .common import wrap
from .inplace import check_inplace_target, rebase_history


def philox_args(device, generator, count):
    """(seed, offset) of `count` fresh counters of `generator` (default: `device`'s own)."""
    return generator_for(generator, resolve(device)).philox_reserve(count)


def _fill(self, op, generator, params, host_draw):
    """Write `op`'s values into `self`: by the device's `op` kernel (given `params`, seed and
    offset) where there is one, else `host_draw(numpy_generator, shape)` drawn on the host."""
    check_inplace_target(self, op)
    device = self.device
    if has_kernel(op, device.type):
        kernel(op, device.type)(self._data, *params, *philox_args(device, generator,
                                                                    self.numel()))
    else:
        values = host_draw(rng_for(generator), tuple(self.shape))
        kernel("copy_", device.type)(self._data, np.asarray(values))
    self._bump_version()
    base = self._base
    if is_grad_enabled() and (self._requires_grad or (base is not None and base._requires_grad)):
        rebase_history(self, self.detach())
    return self


def _check_float(self, op):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {self.dtype.name}")


def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with values uniform on [from_, to)."""
    _check_float(self, "uniform_")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    return _fill(self, "uniform_", generator, (from_, to),
                 lambda rng, shape: _host_uniform(rng, shape, self.dtype, from_, to))


def _host_uniform(rng, shape, dtype, low, high):
    """low + (high - low) * u for u on the dtype's mantissa grid, rounded to dtype; a value that
    rounds to high becomes low (the rule the CUDA kernel follows)."""
    values = (low + (high - low) * creation._uniform_bits(rng, shape, dtype)).astype(
        dtype.numpy_dtype)
    values[values == dtype.numpy_dtype.type(high)] = low
    return values


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with Normal(mean, std**2) values."""
    _check_float(self, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, "normal_", generator, (mean, std),
                 lambda rng, shape: rng.normal(mean, std, shape))


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with Exponential(lambd) values (density lambd * exp(-lambd * x))."""
    _check_float(self, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, "exponential_", generator, (lambd,),
                 lambda rng, shape: rng.exponential(1.0 / lambd, shape))


def _dtype_top(dtype):
    """The default exclusive upper bound of random_: 2**digits + 1 for floats (every integer up
    to 2**digits is exact), max + 1 for integers, 2 for bool."""
    if dtype is dtypes.bool_:
        return 2
    if dtype.is_floating_point:
        return 2 ** (ml_dtypes.finfo(dtype.numpy_dtype).nmant + 1) + 1
    return int(np.iinfo(dtype.numpy_dtype).max) + 1


def random_(self, from_=None, to=None, *, generator=None):
    """Fill with integers uniform on [from_, to); `random_(to)`: [0, to); `random_()`: the
    dtype's range ([0, 2**mantissa_digits] for floats), stored in self's dtype."""
    if to is None:
        from_, to = 0, _dtype_top(self.dtype) if from_ is None else from_
    low, high = int(from_), int(to)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    return _fill(self, "random_", generator, (low, high),
                 lambda rng, shape: _host_integers(rng, low, high, shape))


def _host_integers(rng, low, high, shape):
    if low >= -2 ** 63 and high - 1 < 2 ** 63:
        return rng.integers(low, high, shape, dtype=np.int64)
    return rng.integers(low, high, shape, dtype=np.uint64)


def _check_probabilities(p, op):
    bad = (p < 0) | (p > 1) | p.isnan()
    if bool(bad.any()):
        raise RuntimeError(f"{op}: all elements of input must be in [0, 1]")


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 where a uniform draw falls below `p` (a float, or a tensor broadcast to
    self's shape), 0 elsewhere."""
    if isinstance(p, Tensor):
        probs = p.detach().to(device=self.device)
        if probs._storage is self._storage:
            probs = probs.clone()
        if not probs.dtype.is_floating_point:
            probs = probs.to(dtypes.float32)
        _check_probabilities(probs, "bernoulli_")
        probs = probs.expand(tuple(self.shape))
        return _fill(self, "bernoulli_", generator, (probs._data,),
                     lambda rng, shape: rng.random(shape) < probs._host().astype(np.float64))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, "bernoulli_", generator, (float(p),),
                 lambda rng, shape: rng.random(shape) < p)


def draw(op, shape, dtype, device, generator, requires_grad, *params):
    """A new tensor of `shape` filled by `op` where `device`'s backend has `op`'s kernel; None
    elsewhere (the caller then draws on the host)."""
    device = resolve(as_device(device))
    if not has_kernel(op, device.type):
        return None
    out = creation.empty(shape, dtype=dtype, device=device)
    FILLS[op](out, *params, generator=generator)
    return out.requires_grad_(True) if requires_grad else out


def normal_tensors(mean, std, generator):
    """`genesis.normal` with a tensor mean and/or std where the device draws its own numbers
    (None elsewhere): mean + std * N(0, 1), broadcast, not differentiable."""
    ref = mean if isinstance(mean, Tensor) else std
    device = resolve(ref.device)
    if not has_kernel("normal_", device.type):
        return None
    if isinstance(std, Tensor) and bool((std < 0).any()):
        raise RuntimeError("normal: std must be >= 0.0")
    with no_grad():
        shape = np.broadcast_shapes(tuple(getattr(mean, "shape", ())),
                                    tuple(getattr(std, "shape", ())))
        noise = creation.empty(shape, dtype=ref.dtype, device=device)
        noise.normal_(generator=generator)
        return noise * std + mean


def randperm(n, generator, dtype, device, requires_grad):
    """A random permutation of 0..n-1 where `device` draws its own numbers (None elsewhere):
    the order that sorts n random 63-bit keys (sorted on the device when it has a "sort"
    kernel, else on the host)."""
    device = resolve(as_device(device))
    if n == 0:
        return draw("random_", (0,), dtype or dtypes.int64, device, generator, requires_grad, 0, 1)
    keys = draw("random_", (n,), dtypes.int64, device, generator, False, 0, 2 ** 63)
    if keys is None:
        return None
    if has_kernel("sort", device.type):
        order = wrap(kernel("sort", device.type)(keys._data, 0, False, True)[1], device,
                     dtypes.int64)
    else:
        order = creation.tensor(np.argsort(keys.numpy(), kind="stable"), device=device)
    order = order.to(dtype or dtypes.int64)
    return order.requires_grad_(True) if requires_grad else order


FILLS = {"uniform_": uniform_, "normal_": normal_, "exponential_": exponential_,
         "random_": random_, "bernoulli_": bernoulli_}

TENSOR_METHODS = dict(FILLS, bernoulli=lambda self, p=None, *, generator=None:
                      creation.bernoulli(self, p, generator=generator))

__all__ = []
