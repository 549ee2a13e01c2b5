"""Device-agnostic op definitions, one module per family.

Each family module defines its functions (exported through `__all__` to `genesis`) and a
TENSOR_METHODS table; this package binds those tables onto `Tensor`, so `x.sum()` and
`genesis.sum(x)` are the same function.
"""

from ..tensor import Tensor
from . import creation, elementwise, index, linalg, random, reduce, shape
from . import decompositions, matrix_functions  # noqa: F401

FAMILIES = (creation, elementwise, shape, index, reduce, linalg, random, matrix_functions)

for _family in FAMILIES:
    for _name, _fn in _family.TENSOR_METHODS.items():
        setattr(Tensor, _name, _fn)
