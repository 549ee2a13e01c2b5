"""Test helpers, as torch.testing: `assert_close` and `make_tensor`.

`assert_close` walks nested sequences and mappings and compares the leaves as PyTorch does: None
with None, booleans by identity, Python and numpy numbers within the tolerances of their type,
tensor-likes (Tensors, numpy arrays) by attributes and then values. Every message is PyTorch's.
Mismatch statistics are computed on the host, in the compared dtype, as PyTorch computes them.
"""

import cmath
import collections.abc
import contextlib
import functools
import math
import operator
import warnings

import numpy as np

from . import dtypes
from .ops.creation import as_tensor, empty
from .ops.compare import isclose
from .ops.random import randint
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

# {dtype: (rtol, atol)}; other dtypes compare exactly.
_DTYPE_PRECISIONS = {
    dtypes.float16: (0.001, 1e-5),
    dtypes.bfloat16: (0.016, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
}

# Python number types and the tolerances of the dtypes they stand for (int64, float64, complex128).
_NUMBER_PRECISIONS = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7)}


class _ErrorMeta(Exception):
    """A comparison failure: the exception type to raise, its message and the item it is about."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """Raised by a pair type that does not handle the given inputs: the next one is tried."""


def _tolerances(precisions, rtol, atol, id):
    """(rtol, atol): the given pair, or the loosest defaults of `precisions`."""
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                     f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*precisions)
    return max(rtols), max(atols)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    """'<identifier> are not close!' (or 'equal' with zero tolerances) with the statistics."""
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                         rel_diff, None, rtol)


def _greatest(values, shape):
    """(the greatest of `values` (NaN first), its index unravelled to `shape`)."""
    flat = int(np.argmax(values)) if values.size else 0
    index = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
    return values[flat].item(), index


def _tensor_mismatch_msg(actual, expected, matches, rtol, atol):
    """'Tensor-likes are not close!' with the count of mismatches and the greatest absolute and
    relative differences among them, computed in the tensors' dtype (integers through int64,
    their ratios in float32) as PyTorch computes them."""
    shape = tuple(matches.shape)
    matches = matches.ravel()
    total = matches.size - int(matches.sum())
    extra = f"Mismatched elements: {total} / {matches.size} ({total / matches.size:.1%})"
    a, e = actual.ravel(), expected.ravel()
    if not np.issubdtype(a.dtype, np.floating) and a.dtype.kind != "V":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[matches] = 0
        if abs_diff.dtype == np.int64:
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(e)
    rel_diff[matches] = 0
    abs_max, abs_idx = _greatest(abs_diff, shape)
    rel_max, rel_idx = _greatest(rel_diff, shape)
    return _mismatch_msg("Tensor-likes", extra, abs_max, abs_idx, atol, rel_max, rel_idx, rtol)


def _host(t):
    return t.detach().cpu().numpy()


class _Pair:
    """Two leaves to compare; constructing one raises _Unsupported if its type does not fit."""

    def __init__(self, actual, expected, *, id=(), **_):
        self.actual, self.expected, self.id = actual, expected, id

    def _fail(self, msg, type=AssertionError):
        raise _ErrorMeta(type, msg, id=self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, **options):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), **options)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **options):
        if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        super().__init__(actual, expected, id=id)
        self.rtol, self.atol = _tolerances([_NUMBER_PRECISIONS[type(x)] for x in (actual, expected)],
                                           rtol, atol, id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            self._fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        self._fail(_scalar_mismatch_msg(actual, expected, self.rtol, self.atol))


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **options):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id=id)
        self.rtol, self.atol = _tolerances(
            [_DTYPE_PRECISIONS.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)], rtol, atol,
            id)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype, self.check_stride = (check_device, check_dtype,
                                                                  check_stride)

    @staticmethod
    def _to_tensor(tensor_like):
        if isinstance(tensor_like, Tensor):
            return tensor_like
        try:
            return as_tensor(tensor_like)
        except Exception:
            raise _Unsupported from None

    def compare(self):
        self._compare_attributes(self.actual, self.expected)
        self._compare_values(*self._equalize_attributes(self.actual, self.expected))

    def _compare_attributes(self, actual, expected):
        """Shape always; stride, device and dtype as the check_* flags ask (every Genesis tensor
        is strided, so layouts always agree)."""
        checks = [("shape", True, lambda t: t.shape),
                  ("stride()", self.check_stride, lambda t: t.stride()),
                  ("device", self.check_device, lambda t: t.device),
                  ("dtype", self.check_dtype, lambda t: t.dtype)]
        for name, enabled, get in checks:
            if enabled and get(actual) != get(expected):
                self._fail(f"The values for attribute '{name}' do not match: {get(actual)} != "
                           f"{get(expected)}.")

    @staticmethod
    def _equalize_attributes(actual, expected):
        """Both on the CPU when their devices differ; both in their promoted dtype when their
        dtypes differ."""
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype != expected.dtype:
            dtype = dtypes.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(dtype), expected.to(dtype)
        return actual, expected

    def _compare_values(self, actual, expected):
        matches = isclose(actual.detach(), expected.detach(), rtol=self.rtol, atol=self.atol,
                          equal_nan=self.equal_nan)
        if bool(matches.all()):
            return
        if actual.dim() == 0:
            self._fail(_scalar_mismatch_msg(actual.item(), expected.item(), self.rtol, self.atol))
        self._fail(_tensor_mismatch_msg(_host(actual), _host(expected), _host(matches),
                                        self.rtol, self.atol))


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _originate_pairs(actual, expected, id=(), **options):
    """The leaf pairs of two (possibly nested) sequences or mappings, each tagged with its path."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, "The length of the sequences mismatch: "
                                             f"{len(actual)} != {len(expected)}", id=id)
        return [pair for idx in range(len(actual))
                for pair in _originate_pairs(actual[idx], expected[idx], (*id, idx), **options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected,
                                                                  collections.abc.Mapping):
        return _mapping_pairs(actual, expected, id, **options)
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, "No comparison pair was able to handle inputs of type "
                                f"{type(actual)} and {type(expected)}.", id=id)


def _mapping_pairs(actual, expected, id, **options):
    actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
    if actual_keys != expected_keys:
        raise _ErrorMeta(AssertionError, "The keys of the mappings do not match:\n"
                         f"Missing keys in the actual mapping: "
                         f"{sorted(expected_keys - actual_keys)}\n"
                         f"Additional keys in the actual mapping: "
                         f"{sorted(actual_keys - expected_keys)}", id=id)
    keys = actual_keys
    with contextlib.suppress(Exception):
        keys = sorted(keys)
    return [pair for key in keys
            for pair in _originate_pairs(actual[key], expected[key], (*id, key), **options)]


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless `actual` and `expected` are close: same structure, and leaf by
    leaf |actual - expected| <= atol + rtol * |expected| (defaults by dtype), with PyTorch's
    messages. `msg` replaces the message (a string) or rewrites it (a callable)."""
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol,
                                 atol=atol, equal_nan=equal_nan, check_device=check_device,
                                 check_dtype=check_dtype, check_layout=check_layout,
                                 check_stride=check_stride)
    except _ErrorMeta as error_meta:
        raise error_meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as error_meta:
            raise error_meta.to_error(msg) from None


_BOOL_OR_INTEGRAL = (dtypes.bool_, *dtypes.integer_dtypes)


def _finfo(dtype):
    """numpy's (or ml_dtypes', for bfloat16) finfo of a floating dtype."""
    return dtypes.ml_dtypes.finfo(dtype.numpy_dtype)


def _value_range(dtype):
    """([lowest, highest) representable, default [low, high)) for make_tensor's draws."""
    if dtype is dtypes.bool_:
        return (0, 2), (0, 2)
    if dtype in dtypes.integer_dtypes:
        info = np.iinfo(dtype.numpy_dtype)
        # randint cannot draw int64's maximum: its exclusive bound would overflow.
        return (int(info.min), int(info.max) + (dtype is not dtypes.int64)), (-9, 10)
    if dtype in dtypes.floating_dtypes:
        info = _finfo(dtype)
        return (float(info.min), float(info.max)), (-9, 9)
    raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                    "torch.testing.make_tensor(). To request support, file an issue at: "
                    "https://github.com/pytorch/pytorch/issues")


def _low_high(low, high, dtype):
    """The interval to draw from: defaults filled in, checked, clamped to what `dtype` holds
    (and ceiled for integral dtypes, whose upper bound is exclusive)."""
    (lowest, highest), (default_low, default_high) = _value_range(dtype)
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype in dtypes.floating_dtypes:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex "
                      "types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype in _BOOL_OR_INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape, low, high, dtype, device):
    """Uniform draws in [low, high); a range wider than the dtype's maximum is drawn halved and
    doubled."""
    result = empty(shape, dtype=dtype, device=device)
    if high - low >= float(_finfo(dtype).max):
        return result.uniform_(low / 2, high / 2).mul_(2)
    return result.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` with values drawn uniformly from [low, high): by default [0, 2) for
    bool, [-9, 10) for integers (clamped to the dtype's range) and [-9, 9) for floating types.
    `noncontiguous` gives a strided view of a twice-as-wide tensor; `exclude_zero` replaces zeros
    with 1 (bool, integers) or the dtype's smallest normal number."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in _BOOL_OR_INTEGRAL:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got {dtype=}")
    noncontiguous = noncontiguous and functools.reduce(operator.mul, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    low, high = _low_high(low, high, dtype)
    if dtype in _BOOL_OR_INTEGRAL:
        result = randint(low, high, shape, device=device, dtype=dtype)
    else:
        result = _uniform(shape, low, high, dtype, device)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOL_OR_INTEGRAL else float(_finfo(dtype).tiny)
    if dtype in dtypes.floating_dtypes:
        result.requires_grad = requires_grad
    return result
