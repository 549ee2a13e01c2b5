"""`Variable`, PyTorch's wrapper from before tensors carried autograd state, kept for old scripts:
calling it gives a tensor, and every tensor is an instance of it."""

import warnings

from ..device import factory_resolve
from ..dtypes import get_default_dtype


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        from ..tensor import Tensor
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """`Variable(data, requires_grad=False)`: `data` detached (sharing its memory), requiring
    grad as asked; `volatile` has no effect any more and warns, as in PyTorch."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from ..tensor import Tensor, filled
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            data = filled((0,), 0, get_default_dtype(), factory_resolve(None))
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
