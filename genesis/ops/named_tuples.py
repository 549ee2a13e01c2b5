"""The named tuples ops return, as torch.return_types' (values and indices of max, U, S and V
of svd, ...): each prints field by field as PyTorch prints them and is listed in REGISTRY, which
genesis.return_types exposes, so it can be named, checked with isinstance and pickled."""

import collections

REGISTRY = {}


def return_type(name, fields):
    """The named tuple `genesis.return_types.<name>` with `fields`."""
    cls = collections.namedtuple(name, fields, module="genesis.return_types")
    cls.__repr__ = _repr
    REGISTRY[name] = cls
    return cls


def _repr(self):
    return (f"genesis.return_types.{type(self).__name__}(\n"
            + ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")")
