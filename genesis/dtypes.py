"""Data types and PyTorch's type-promotion rules.

A `dtype` names an element type once for every backend; `numpy_dtype` is its CPU storage type
(bfloat16 comes from `ml_dtypes`). Promotion follows PyTorch: the category (bool < integer <
floating) decides first, then tensors with dimensions outrank 0-d tensors, which outrank Python
scalars of the same category.
"""

import math

import ml_dtypes
import numpy as np


class dtype:
    """An element type: its name, size in bytes and numpy storage type."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "numpy_dtype", "_rank")

    def __init__(self, name, numpy_dtype, is_floating_point, is_signed, rank):
        self.name = name
        self.numpy_dtype = np.dtype(numpy_dtype)
        self.itemsize = self.numpy_dtype.itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self._rank = rank

    is_complex = False

    def __repr__(self):
        return f"genesis.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        return self

    @property
    def category(self):
        """0 for bool, 1 for integers, 2 for floating point: promotion compares these first."""
        if self is bool_:
            return 0
        return 2 if self.is_floating_point else 1


bool_ = dtype("bool", np.bool_, False, False, 0)
uint8 = dtype("uint8", np.uint8, False, False, 1)
int8 = dtype("int8", np.int8, False, True, 2)
int16 = dtype("int16", np.int16, False, True, 3)
int32 = dtype("int32", np.int32, False, True, 4)
int64 = dtype("int64", np.int64, False, True, 5)
float16 = dtype("float16", np.float16, True, True, 6)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, True, True, 7)
float32 = dtype("float32", np.float32, True, True, 8)
float64 = dtype("float64", np.float64, True, True, 9)

all_dtypes = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
floating_dtypes = (float16, bfloat16, float32, float64)
half_dtypes = (float16, bfloat16)
integer_dtypes = (uint8, int8, int16, int32, int64)

_BY_NAME = {d.name: d for d in all_dtypes}
_BY_NUMPY = {d.numpy_dtype: d for d in all_dtypes}
NUMPY_DTYPE_TYPES = frozenset(type(d.numpy_dtype) for d in all_dtypes)  # a set lookup is
# cheaper than isinstance(x, np.dtype) (numpy's metaclass: about 70 ns)


_PYTHON_TYPES = {float: float64, int: int64, bool: bool_}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The genesis dtype stored as `np_dtype`; TypeError for types Genesis does not support."""
    found = _BY_NUMPY.get(np_dtype) if type(np_dtype) in NUMPY_DTYPE_TYPES else None
    if found is not None:  # a numpy dtype object, the usual case: no conversion
        return found
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"numpy dtype {np.dtype(np_dtype)} is not supported by genesis; "
                        f"supported: {', '.join(d.name for d in all_dtypes)}") from None


def as_dtype(value):
    """Accept a genesis dtype, a numpy dtype or a name such as "float32"."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value in _PYTHON_TYPES:
        return _PYTHON_TYPES[value]
    try:
        return from_numpy_dtype(value)
    except TypeError:
        raise TypeError(f"{value!r} is not a genesis dtype") from None


_default_dtype = float32


def get_default_dtype():
    """The floating dtype that Python floats and new floating tensors take (float32 at start)."""
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating point types are supported, got {d}")
    _default_dtype = d


def _promote_pair(a, b):
    """The smallest dtype that holds both a and b (PyTorch's promoteTypes table)."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.is_floating_point:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    if a is bool_ or b is bool_:
        return a if b is bool_ else b
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a._rank > b._rank else b


def promote_types(a, b):
    """PyTorch's `torch.promote_types`."""
    return _promote_pair(as_dtype(a), as_dtype(b))


def scalar_dtype(value):
    """The dtype a Python scalar takes when it stands alone: bool, int64 or the default float.
    A numpy scalar counts as the Python number PyTorch reads it as (np.bool_ as a float)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating, np.bool_)):
        return _default_dtype
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def _combine_tiers(higher, lower):
    """Merge a higher tier's dtype with a lower tier's (PyTorch's combine_categories)."""
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return _promote_pair(higher, lower)
    return higher


def result_type(*operands):
    """The dtype of an op over tensors and Python scalars, by PyTorch's three-tier rule.

    Tensors with dimensions, 0-d tensors and Python scalars are promoted within their tier; a
    lower tier changes the result only when its category (bool < int < float) is higher.
    A Python float counts as the default dtype, a Python int as int64. Tensors that all share
    one dtype (the common case) return it at once.
    """
    first = getattr(operands[0], "dtype", None) if operands else None
    if type(first) is dtype and all(getattr(x, "dtype", None) is first for x in operands[1:]):
        return first
    tiers = [None, None, None]
    for x in operands:
        if isinstance(x, (bool, int, float, np.generic)):
            tier, d = 2, scalar_dtype(x)
        elif isinstance(getattr(x, "dtype", None), dtype):
            tier, d = (0 if x.ndim > 0 else 1), x.dtype
        else:
            raise TypeError(f"expected Tensor or Number operands, got {type(x).__name__}")
        tiers[tier] = d if tiers[tier] is None else _promote_pair(tiers[tier], d)
    return _combine_tiers(tiers[0], _combine_tiers(tiers[1], tiers[2]))


_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                      "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                      "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def scalar_type_name(d):
    """PyTorch's C++ name of dtype `d` ("Float", "Long"), as its error messages print it."""
    return _SCALAR_TYPE_NAMES.get(d.name, d.name)


_TYPE_META_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                    "int16": "short int", "int32": "int", "int64": "long int",
                    "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                    "float64": "double", "complex64": "c10::complex<float>",
                    "complex128": "c10::complex<double>"}


def type_meta_name(d):
    """The C++ type name PyTorch prints for a tensor's dtype in its messages ("float",
    "long int", "c10::BFloat16")."""
    return _TYPE_META_NAMES.get(d.name, d.name)


_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                 "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                 "float32": "float", "float64": "double"}


_HALF_NUMPY = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def half_source(array, numpy_dtype):
    """The numpy `array` to convert into `numpy_dtype`: itself, or, for a half type, the array
    in float32 first, as c10 converts into a half type through float (a float64 or a wide
    integer is rounded twice, and may differ from one rounding in its last bit)."""
    if np.dtype(numpy_dtype) in _HALF_NUMPY and array.dtype not in _HALF_NUMPY + (
            np.dtype(np.float32),):
        with np.errstate(over="ignore"):  # beyond float32's range: inf, as in c10
            return array.astype(np.float32)
    return array


def round_to_half(value, d):
    """The Python number `value` as the half type `d` holds it, a float: rounded to float32
    first, then to `d`, as c10 converts a double (two roundings, which can differ from one)."""
    if not -65504.0 <= value <= 65504.0:  # may overflow to inf: numpy would warn
        with np.errstate(over="ignore"):
            return float(d.numpy_dtype.type(np.float32(value)))
    return float(d.numpy_dtype.type(np.float32(value)))


def storable_scalar(value, d):
    """The Python number `value` as a fill of dtype `d` stores it (a half type's value as
    `round_to_half` gives it), or RuntimeError with PyTorch's text when it overflows: beyond an
    integer type's range, or a finite value beyond a floating type's. A negative value wraps
    into uint8 (-1 is 255), as c10 allows."""
    if d is bool_ or type(value) not in (int, float):
        return value
    if d.is_floating_point:
        fits = not math.isfinite(value) or abs(value) <= float(ml_dtypes.finfo(d.numpy_dtype).max)
    elif not math.isfinite(value):
        fits = False
    else:
        info = np.iinfo(d.numpy_dtype)
        low = -int(info.max) if info.min == 0 else int(info.min)
        fits = low <= int(value) <= int(info.max)
        if fits and int(value) < 0 and info.min == 0:
            value = int(value) + int(info.max) + 1
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES[d.name]} without "
                           "overflow")
    return round_to_half(value, d) if d in half_dtypes else value


def can_cast(from_, to):
    """PyTorch's `torch.can_cast`: same-kind casting (no float to int, nothing to bool)."""
    from_, to = as_dtype(from_), as_dtype(to)
    return from_.category <= to.category


def check_result_cast(result, output):
    """PyTorch's error for an op whose `result` dtype an in-place or out= `output` dtype cannot
    hold (a float result written to an int64 tensor)."""
    if not can_cast(result, output):
        raise RuntimeError(f"result type {scalar_type_name(as_dtype(result))} can't be cast to "
                           f"the desired output type {scalar_type_name(as_dtype(output))}")
