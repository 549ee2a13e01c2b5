"""Elementwise math with broadcasting, Python scalars and PyTorch's type promotion.

Each op is a Function whose forward broadcasts and casts its operands once (for every device) and
calls one kernel, and whose backward is written with genesis ops. Dtypes that PyTorch does not
implement an op for are rejected before any kernel runs, with the exception PyTorch raises
(NotImplementedError, a RuntimeError). The family in modules, each importing only those before it:

- core: the runner `elementwise` (check, promote, broadcast, one kernel) and shared helpers;
- selection: where, clamp, lerp, addcmul/addcdiv;
- unary: the table of one-operand ops with their derivatives;
- binary: arithmetic, extrema, comparisons, logical and bitwise ops;
- inplace_plans: the in-place forms, written in one kernel where they can be;
- methods: `ElementwiseMethods`, the Tensor methods and operators.
"""

from .binary import *  # noqa: F401,F403
from .binary import __all__ as _binary
from .core import elementwise  # noqa: F401
from .inplace_plans import _inplace  # noqa: F401
from .methods import ElementwiseMethods  # noqa: F401
from .selection import *  # noqa: F401,F403
from .selection import __all__ as _selection
from .unary import *  # noqa: F401,F403
from .unary import UnarySpec  # noqa: F401
from .unary import __all__ as _unary

__all__ = _binary + _unary + _selection
