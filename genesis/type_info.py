"""genesis.finfo and genesis.iinfo: the numerical limits of a dtype, as torch.finfo/torch.iinfo.

The values come from ml_dtypes' finfo (numpy's, extended to bfloat16) and numpy's iinfo of the
dtype's storage type, as Python floats and ints. `resolution` is PyTorch's decimal one:
10 ** -floor(-log10(eps)).
"""

import math

import ml_dtypes
import numpy as np

from . import dtypes


class _TypeInfo:
    """What finfo and iinfo share: bits, max, min and the dtype's name, from numpy's limits
    `info` converted by `number` (float or int); equal when they describe the same dtype."""

    def __init__(self, d, info, number):
        self.bits = d.itemsize * 8
        self.max = number(info.max)
        self.min = number(info.min)
        self.dtype = d.name

    def __eq__(self, other):
        return type(other) is type(self) and self.dtype == other.dtype

    __hash__ = None


class finfo(_TypeInfo):
    """Limits of a floating dtype (the default dtype when none is given): bits, eps, max, min,
    tiny (= smallest_normal) and resolution."""

    def __init__(self, type=None):  # noqa: A002  (torch.finfo's parameter name)
        d = dtypes.get_default_dtype() if type is None else dtypes.as_dtype(type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        info = ml_dtypes.finfo(d.numpy_dtype)
        super().__init__(d, info, float)
        self.eps = float(info.eps)
        self.smallest_normal = float(info.smallest_normal)
        self.tiny = self.smallest_normal
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo(_TypeInfo):
    """Limits of an integer dtype: bits, max and min."""

    def __init__(self, type):  # noqa: A002  (torch.iinfo's parameter name)
        d = dtypes.as_dtype(type)
        if d is dtypes.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        super().__init__(d, np.iinfo(d.numpy_dtype), int)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
