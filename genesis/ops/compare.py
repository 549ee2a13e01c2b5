"""Whole-tensor and elementwise comparisons: isclose, allclose, equal, isin."""

from .. import dtypes
from ..tensor import Tensor
from .creation import tensor
from .elementwise import abs, eq, isfinite, isnan, logical_and, logical_not, logical_or
from .reduce import all as all_, any as any_
from .shape import reshape


def _check_same_dtype(op, a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}(): {a.dtype.name} did not match {b.dtype.name}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise; equal values (infinities too) are
    close, and nans are close to each other only with `equal_nan`."""
    _check_same_dtype("isclose", input, other)
    if rtol < 0:
        raise RuntimeError(f"isclose(): rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose(): atol must be greater than or equal to zero, but got {atol}")
    same = eq(input, other)
    if not input.dtype.is_floating_point:
        if rtol == 0 and atol == 0:
            return same
        # PyTorch measures booleans' distance in the default dtype.
        wider = dtypes.get_default_dtype() if input.dtype is dtypes.bool_ else dtypes.float64
        input, other = input.to(wider), other.to(wider)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(input), isnan(other)))
    finite = logical_and(isfinite(input), isfinite(other))
    near = abs(input - other) <= atol + rtol * abs(other)
    return logical_or(same, logical_and(finite, near))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of `input` is close to `other`'s (see isclose)."""
    return bool(all_(isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input, other):
    """True when the tensors have the same shape and the same values."""
    if input.device != other.device:
        raise RuntimeError(f"equal(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {input.device} and {other.device}!")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(all_(eq(input, other)).item())


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` occurs in `test_elements` (either may be a scalar)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected at least one of elements and test_elements to be a "
                        "Tensor")
    device = (elements if isinstance(elements, Tensor) else test_elements).device
    if not isinstance(elements, Tensor):
        elements = tensor(elements, device=device)
    if not isinstance(test_elements, Tensor):
        test_elements = tensor(test_elements, device=device)
    shape = tuple(elements.shape)
    pairs = eq(reshape(elements, (-1, 1)), reshape(test_elements, (1, -1)))
    found = reshape(any_(pairs, dim=1), shape)
    return logical_not(found) if invert else found


class CompareMethods:
    """Tensor methods of this family."""

    isclose = isclose
    allclose = allclose
    equal = equal

__all__ = ["isclose", "allclose", "equal", "isin"]
