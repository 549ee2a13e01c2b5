"""The elementwise kernels on meta arrays: one rule for all of them. Operands arrive broadcast
to one shape (the ops layer does that for every device), so the result has that shape, the
dtype the CPU kernel gives (`probe`) and the layout of an elementwise result of its operands."""

import numpy as np

from ...dispatch import register
from ..cpu.elementwise import ACTIVATIONS, BINARY, DERIVATIVES, UNARY
from ..cpu.special import ELEMENTWISE
from .array import MetaArray, elementwise_result
from .probe import probe

# the CPU's elementwise kernels registered outside its tables
_OTHERS = ("elu", "leaky_relu", "hardshrink", "softshrink", "round", "softplus", "clamp",
           "where", "nan_to_num", "lerp", "addcmul", "addcdiv")


def elementwise(op):
    """The meta kernel of elementwise op `op`."""
    def run(*args, **options):
        arrays = [a for a in args if isinstance(a, MetaArray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        return elementwise_result(shape, probe(op, args, options).dtype, arrays)
    run.__name__ = run.__qualname__ = op
    return run


for _name in (*BINARY, *UNARY, *DERIVATIVES, *ACTIVATIONS, *ELEMENTWISE, *_OTHERS):
    register(_name, "meta")(elementwise(_name))


@register("elementwise_into", "meta")
def elementwise_into(op, out, operands, params=()):
    """An in-place elementwise op: `out` keeps its metadata."""
    return out
