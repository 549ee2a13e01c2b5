"""Device-agnostic op definitions, one module per family.

Each family module defines its functions (exported through `__all__` to `genesis`) and a
TENSOR_METHODS table; this package binds those tables onto `Tensor`, so `x.sum()` and
`genesis.sum(x)` are the same function.
"""

from ..tensor import Tensor
from . import creation, elementwise, index, linalg, random, reduce, shape
from . import compare, counting, legacy, numeric, products, random_fills, rearrange, special
from . import statistics, windows

FAMILIES = (creation, elementwise, shape, index, reduce, linalg, random)
FAMILIES += (compare, counting, products, rearrange, statistics, special, legacy, numeric)
FAMILIES += (random_fills,)

for _family in FAMILIES:
    for _name, _fn in _family.TENSOR_METHODS.items():
        setattr(Tensor, _name, _fn)
