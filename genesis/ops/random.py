"""Random numbers: fills in place (`uniform_`, `normal_`, `random_`, `exponential_`,
`bernoulli_`) and the random creation functions (`rand`, `randn`, `randint`, `randperm`, `normal`,
`bernoulli`, `multinomial` and their `_like` forms).

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
from ..autograd.views import rebase_history
from ..device import factory_device, resolve
from ..dispatch import has_kernel, kernel
from ..random import generator_for, rng_for
from ..tensor import Tensor
from .common import _finfo, wrap
from .creation import _from_host, _like, empty, laid_out_like, tensor
from .inplace import check_inplace_target
from .size_args import _arg_type, _shape_arg, _sizes, count_arg


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
    values = np.asarray(low + (high - low) * _uniform_bits(rng, shape, dtype)).astype(
        dtype.numpy_dtype)  # an array even for a 0-d shape, so it can be written into
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
    device = resolve(factory_device(device))
    if not has_kernel(op, device.type):
        return None
    out = empty(shape, dtype=dtype, device=device)
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
        noise = empty(shape, dtype=ref.dtype, device=device)
        noise.normal_(generator=generator)
        return noise * std + mean


def _device_randperm(n, generator, dtype, device, requires_grad):
    """A random permutation of 0..n-1 where `device` draws its own numbers (None elsewhere):
    the order that sorts n random 63-bit keys (sorted on the device when it has a "sort"
    kernel, else on the host)."""
    device = resolve(factory_device(device))
    if n == 0:
        return draw("random_", (0,), dtype or dtypes.int64, device, generator, requires_grad, 0, 1)
    keys = draw("random_", (n,), dtypes.int64, device, generator, False, 0, 2 ** 63)
    if keys is None:
        return None
    if has_kernel("sort", device.type):
        order = wrap(kernel("sort", device.type)(keys._data, 0, False, True)[1], device,
                     dtypes.int64)
    else:
        order = tensor(np.argsort(keys.numpy(), kind="stable"), device=device)
    order = order.to(dtype or dtypes.int64)
    return order.requires_grad_(True) if requires_grad else order


def _random(shape, dtype, device, requires_grad, draw):
    """Draw `shape` values on the host with numpy and place them on `device`."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = np.asarray(draw(shape))
    return _from_host(values.astype(dtype.numpy_dtype), factory_device(device), dtype,
                      requires_grad)


def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1)."""
    size = _sizes(args, size, "rand")
    if (drawn := draw("uniform_", _shape_arg(size, "rand"), dtype, device, generator,
                             requires_grad, 0.0, 1.0)) is not None:
        return drawn
    rng = rng_for(generator)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _random(_shape_arg(size, "rand"), dtype, device, requires_grad,
                   lambda s: _uniform_bits(rng, s, dtype))


def _uniform_bits(rng, shape, dtype):
    """k / 2**digits for k uniform below 2**digits, digits the dtype's mantissa bits (as
    PyTorch): every value is exact in the dtype, so rounding can never reach 1."""
    digits = _finfo(dtype).nmant + 1
    return rng.integers(0, 1 << digits, shape, dtype=np.int64) * 2.0 ** -digits


def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal."""
    size = _sizes(args, size, "randn")
    if (drawn := draw("normal_", _shape_arg(size, "randn"), dtype, device, generator,
                             requires_grad, 0.0, 1.0)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg(size, "randn"), dtype, device, requires_grad,
                   lambda s: rng.standard_normal(s))


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high); `randint(high, size)` and `randint(high=h, size=s)`
    start at 0."""
    given = (low, high, size)
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low is None:
        low = 0
    if high is None or size is None:
        missing = "high" if high is None else "size"
        raise TypeError(f"randint() missing 1 required positional argument: '{missing}'")
    low, high = _randint_bounds(low, high, given)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if (drawn := draw("random_", _shape_arg((size,), "randint"), dtype or dtypes.int64,
                             device, generator, requires_grad, low, high)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg((size,), "randint"), dtype or dtypes.int64, device,
                   requires_grad, lambda s: rng.integers(low, high, s))


_RANDINT_KEYWORDS = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                     "torch.device device = None, bool pin_memory = False, bool requires_grad = "
                     "False")


def _randint_bounds(low, high, given):
    """randint's bounds as ints, else PyTorch's TypeError: for `randint(high, size)` naming
    `high`, for `randint(low, high, size)` the call's types against its signatures."""
    bounds = count_arg(low), count_arg(high)
    if None not in bounds:
        return bounds
    if given[2] is None:
        raise TypeError(f"randint(): argument 'high' (position 1) must be int, not "
                        f"{_arg_type(high)}")
    signatures = "".join(
        f"\n * ({head}tuple of ints size, *, {generator}{_RANDINT_KEYWORDS})"
        for head in ("int high, ", "int low, int high, ")
        for generator in ("torch.Generator generator, ", ""))
    raise TypeError(f"randint() received an invalid combination of arguments - got "
                    f"({', '.join(_arg_type(v) for v in given)}), but expected one of:"
                    f"{signatures}\n")


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0 .. n-1."""
    count = count_arg(n)
    if count is None:
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if count < 0:
        raise RuntimeError(f"randperm: Trying to create tensor with negative dimension {count}: "
                           f"[{count}]")
    n = count
    if (drawn := _device_randperm(n, generator, dtype, device, requires_grad)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random((n,), dtype or dtypes.int64, device, requires_grad,
                   lambda s: rng.permutation(n))


def rand_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, *,
              generator=None):
    """Uniform on [0, 1), with `t`'s size, dtype and device unless given (layout: see
    empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(rand(shape, generator=generator, dtype=dtype, device=device), t,
                         memory_format, requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, *,
               generator=None):
    """Standard normal, with `t`'s size, dtype and device unless given (layout: see
    empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    return laid_out_like(randn(shape, generator=generator, dtype=dtype, device=device), t,
                         memory_format, requires_grad)


def randint_like(t, low, high=None, dtype=None, device=None, requires_grad=False,
                 memory_format=None, *, generator=None):
    """Integers uniform on [low, high), with `t`'s size, dtype and device unless given (layout:
    see empty_like)."""
    shape, dtype, device = _like(t, dtype, device)
    drawn = randint(low, high, shape, generator=generator, dtype=dtype, device=device)
    return laid_out_like(drawn, t, memory_format, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples; `mean` and `std` may be tensors (broadcast together) or floats."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if (drawn := normal_tensors(mean, std, generator)) is not None:
            return drawn
        rng = rng_for(generator)
        ref = mean if isinstance(mean, Tensor) else std
        m = mean.detach()._host() if isinstance(mean, Tensor) else mean
        s = std.detach()._host() if isinstance(std, Tensor) else std
        if np.any(np.asarray(s) < 0):
            raise RuntimeError("normal: std must be >= 0.0")
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        values = rng.standard_normal(shape) * np.asarray(s, np.float64) + np.asarray(m, np.float64)
        return _from_host(values.astype(ref.dtype.numpy_dtype), ref.device, ref.dtype)
    if std < 0:
        raise RuntimeError(f"normal: expected std >= 0.0, got {std}")
    if size is None:
        raise TypeError("normal: size is required when mean and std are floats")
    if (drawn := draw("normal_", _shape_arg((size,), "normal"), dtype, device, generator,
                             requires_grad, mean, std)) is not None:
        return drawn
    rng = rng_for(generator)
    return _random(_shape_arg((size,), "normal"), dtype, device, requires_grad,
                   lambda s: rng.standard_normal(s) * std + mean)


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples with probability `input` (or the float `p`) of a 1, in `input`'s dtype."""
    if (drawn := draw("bernoulli_", tuple(input.shape), input.dtype, input.device,
                             generator, False, input if p is None else p)) is not None:
        return drawn
    rng = rng_for(generator)
    probs = np.full(input.shape, p, np.float64) if p is not None \
        else input.detach()._host().astype(np.float64)
    if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
        raise RuntimeError("bernoulli: all elements of input must be in [0, 1]")
    values = np.asarray(rng.random(probs.shape) < probs)
    return _from_host(values.astype(input.dtype.numpy_dtype), input.device, input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the rows of `input` (non-negative weights, need not sum to 1)."""
    rng = rng_for(generator)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape "
                           f"{list(input.shape)}")
    weights = input.detach()._host().astype(np.float64).reshape(-1, input.shape[-1])
    if np.any(weights < 0) or np.any(~np.isfinite(weights)):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if not replacement and num_samples > weights.shape[1]:
        raise RuntimeError(f"multinomial: cannot sample n_sample={num_samples} > "
                           f"prob_dist.size(-1)={weights.shape[1]} samples without replacement")
    rows = []
    for w in weights:
        if w.sum() <= 0:
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement and np.count_nonzero(w) < num_samples:
            raise RuntimeError("multinomial: invalid multinomial distribution (with "
                               "replacement=False, "
                               "not enough non-negative category to sample)")
        rows.append(rng.choice(len(w), size=num_samples, replace=replacement, p=w / w.sum()))
    out = np.array(rows, dtype=np.int64).reshape(*input.shape[:-1], num_samples)
    return _from_host(out, input.device, dtypes.int64)


FILLS = {"uniform_": uniform_, "normal_": normal_, "exponential_": exponential_,
         "random_": random_, "bernoulli_": bernoulli_}


class RandomMethods:
    """Tensor methods of this family: random fills in place, and `bernoulli`."""

    uniform_ = uniform_
    normal_ = normal_
    exponential_ = exponential_
    random_ = random_
    bernoulli_ = bernoulli_

    def bernoulli(self, p=None, *, generator=None):
        """0/1 samples with probability `self` (or the float `p`) of a 1, in this dtype."""
        return bernoulli(self, p, generator=generator)


__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
           "normal", "bernoulli", "multinomial"]
