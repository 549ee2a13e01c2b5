"""Ranges of values: arange, linspace and logspace, computed as PyTorch computes them (the count
from the arguments as given, the accumulation types, two-sided linspace), with its checks."""

import math

import numpy as np

from .. import dtypes
from ..device import factory_device, factory_resolve
from ..dispatch import has_kernel, kernel
from ..tensor import Tensor, fresh
from .common import _finfo
from .creation import _finish, _from_host
from .size_args import _arg_type, count_arg


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from `start` to `end` (exclusive) by `step`; int64 if all arguments are integers
    (Python's or numpy's).

    As PyTorch: the count comes from the arguments as given (in float64, or in integers for
    int64), values are start + i * step in the dtype's accumulation type, which for integer dtypes
    means start and step truncated to integers first.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if dtype is None:
        is_int = all(isinstance(x, (int, np.integer)) for x in (start, end, step))
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    dtype = dtypes.as_dtype(dtype)
    if dtype is dtypes.int64:
        start, end, step = int(start), int(end), int(step)
    _check_arange(start, end, step)
    if dtype is dtypes.int64:
        count = (end - start + step - (1 if step > 0 else -1)) // step
    else:
        count = max(0, math.ceil((float(end) - float(start)) / float(step)))
    if not dtype.is_floating_point:
        start, step = int(start), int(step)
    device = factory_resolve(device)
    if has_kernel("arange", device.type):
        data = kernel("arange", device.type)(count, start, step, dtype.numpy_dtype, device.index)
        return _finish(fresh(data, device, dtype), requires_grad)
    acc = np.float64 if dtype.is_floating_point and dtype.itemsize > 2 else \
        np.float32 if dtype.is_floating_point else np.int64
    values = acc(start) + np.arange(count, dtype=acc) * acc(step)
    return _from_host(values.astype(dtype.numpy_dtype), device, dtype, requires_grad)


def _check_arange(start, end, step):
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")


def _check_representable(op, dtype, *values):
    """RuntimeError (as PyTorch) for a finite value beyond the range of floating `dtype`."""
    limit = float(_finfo(dtype).max)
    for v in values:
        if math.isfinite(v) and abs(v) > limit:
            raise RuntimeError(f"{op}: value {v} cannot be converted to type {dtype.name} "
                               "without overflow")


_SPACE_KEYWORDS = ("*, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                   "torch.device device = None, bool pin_memory = False, bool requires_grad = "
                   "False")


def _space_steps(op, start, end, steps, keywords, extra=""):
    """linspace's and logspace's `steps` as an int, else PyTorch's TypeError for the call
    (`keywords`: the keyword arguments given, `extra`: the signature's parameters between
    steps and the keywords)."""
    count = count_arg(steps)
    if count is not None:
        return count
    given = [_arg_type(v) for v in (start, end, steps)]
    given += [f"{k}={_arg_type(v)}" for k, v in sorted(keywords.items()) if v is not None]
    signatures = "".join(f"\n * ({a} start, {b} end, int steps{extra}, {_SPACE_KEYWORDS})"
                         for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"),
                                      ("Tensor", "Number"), ("Number", "Number")))
    raise TypeError(f"{op}() received an invalid combination of arguments - got "
                    f"({', '.join(given)}), but expected one of:{signatures}\n")


def _linear_steps(start, end, steps, dtype, op):
    """PyTorch's two-sided linspace: start + i*step below halfway, end - (n-1-i)*step above.

    Half types compute in their own arithmetic (rounding after every operation, as PyTorch's
    CPU kernel does); other floats in float64; integer dtypes truncate start and end first and
    step in float64.
    """
    if steps < 0:
        raise RuntimeError(f"{op}: number of steps must be non-negative, got {steps}")
    steps = int(steps)
    if dtype.is_floating_point:
        acc = dtype.numpy_dtype.type if dtype.itemsize == 2 else np.float64
        _check_representable(op, dtype, start, end)
        start, end = acc(start), acc(end)
    else:
        acc = np.float64
        start, end = acc(int(start)), acc(int(end))
    if steps == 1:
        return np.array([start], dtype=acc)
    step = (end - start) / acc(steps - 1)
    index = np.arange(steps).astype(acc)
    low = start + step * index
    high = end - step * (acc(steps - 1) - index)
    return np.where(np.arange(steps) < steps // 2, low, high)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """`steps` values evenly spaced from `start` to `end`, both included."""
    steps = _space_steps("linspace", start, end, steps, {"dtype": dtype, "device": device})
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    values = _linear_steps(start, end, steps, dtype, "linspace")
    return _from_host(values.astype(dtype.numpy_dtype), factory_device(device), dtype,
                      requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 and rounded once (integer
    dtypes truncate start and end first, as PyTorch)."""
    steps = _space_steps("logspace", start, end, steps, {"dtype": dtype, "device": device},
                         ", float base = 10.0")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if dtype.is_floating_point:
        _check_representable("logspace", dtype, start, end)
    exponent_dtype = dtypes.float64 if dtype.is_floating_point else dtype
    exponents = _linear_steps(start, end, steps, exponent_dtype, "logspace")
    values = np.power(np.float64(base), exponents)
    return _from_host(values.astype(dtype.numpy_dtype), factory_device(device), dtype,
                      requires_grad)


__all__ = ["arange", "linspace", "logspace"]
