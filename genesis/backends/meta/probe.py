"""Output dtypes from the CPU's own kernels: a meta kernel runs the CPU kernel of its op on
one-element stand-ins of its arrays (same rank and dtype, every size 1) and takes the dtypes,
and the number, of what comes back. The meta backend so follows the CPU's type rules (promotion,
integer and half-type results, index dtypes) without restating them; only shapes need rules."""

import numpy as np

from ...dispatch import kernel
from .array import MetaArray, dense


def standin(x):
    """A one-element numpy array of `x`'s rank and dtype for a MetaArray, else `x` (lists and
    tuples item by item)."""
    if isinstance(x, MetaArray):
        return np.ones((1,) * x.ndim, x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(standin(item) for item in x)
    return x


def probe(op, args, options=None):
    """What the CPU kernel of `op` returns for the stand-ins of `args` (and keyword
    `options`)."""
    with np.errstate(all="ignore"):
        return kernel(op, "cpu")(*[standin(a) for a in args], **(options or {}))


def outputs_like(found, shapes):
    """Fresh row-major arrays of `shapes` with the dtypes of the probe's outputs `found` (one
    array or a tuple, whose None entries stay None)."""
    if not isinstance(found, tuple):
        return dense(shapes, found.dtype)
    return tuple(None if f is None else dense(s, f.dtype) for f, s in zip(found, shapes))
