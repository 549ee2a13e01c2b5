"""genesis.return_types, as torch.return_types: the named tuples ops return (values and indices
of max, U, S and V of svd, ...), each printed field by field as PyTorch prints them."""

import collections


def return_type(name, fields):
    """The named tuple `genesis.return_types.<name>` with `fields`, made an attribute of this
    module so it can be named, checked with isinstance and pickled."""
    cls = collections.namedtuple(name, fields, module=__name__)
    cls.__repr__ = _repr
    globals()[name] = cls
    return cls


def _repr(self):
    return (f"genesis.return_types.{type(self).__name__}(\n"
            + ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")")
