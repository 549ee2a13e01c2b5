"""Device-agnostic op definitions, one module per family.

Each family module defines its functions (exported through `__all__` to `genesis`) and its
Tensor methods as a mixin class of explicit definitions (`ElementwiseMethods`, `ShapeMethods`...).
`Tensor` lives in the layer below and cannot inherit from these classes, so `bind` copies each
one's methods onto it: `x.sum()` and `genesis.sum(x)` are then the same function.
"""

from ..tensor import Tensor
from . import activation, creation, elementwise, index, linalg, random, reduce, shape
from . import compare, counting, legacy, numeric, products, random_fills, rearrange, special
from . import decompositions, gather_scatter, matrix_functions, shape_copies, sorting, statistics
from . import python_calls, random_counts, sharing, windows
from . import copies, ranges, resizing

# Attributes Python gives a class that are not methods (`__hash__` is None in a class that
# defines `__eq__`; Tensor hashes by identity).
_CLASS_ATTRIBUTES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                     "__firstlineno__", "__static_attributes__", "__hash__"}

METHODS = (creation.CreationMethods, copies.CopyMethods, resizing.ResizeMethods,
           elementwise.ElementwiseMethods, shape.ShapeMethods, shape_copies.ShapeCopyMethods,
           index.IndexMethods, gather_scatter.GatherScatterMethods, sorting.SortingMethods,
           reduce.ReduceMethods, linalg.LinalgMethods, random.RandomMethods,
           compare.CompareMethods, counting.CountingMethods, products.ProductsMethods,
           rearrange.RearrangeMethods, statistics.StatisticsMethods, special.SpecialMethods,
           legacy.LegacyMethods, numeric.NumericMethods, random_fills.RandomFillsMethods,
           matrix_functions.MatrixFunctionsMethods, activation.ActivationMethods,
           python_calls.PythonCallsMethods, sharing.SharingMethods)


def bind(methods):
    """Put a mixin class's own methods and properties on Tensor."""
    for name, value in vars(methods).items():
        if name not in _CLASS_ATTRIBUTES:
            setattr(Tensor, name, value)


for _methods in METHODS:
    bind(_methods)
