"""`Variable`, the pre-0.4 autograd wrapper, kept so that older scripts run: every tensor is a
Variable (isinstance holds), and Variable(t, requires_grad) is a detached alias of t."""

import warnings

from .. import dtypes
from ..device import get_default_device
from ..tensor import Tensor, filled


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data, requires_grad=False): `data` detached (sharing its memory), a leaf that
    requires grad as asked; Variable() is an empty tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", stacklevel=2)
        if data is None:
            empty = filled((0,), 0, dtypes.get_default_dtype(), get_default_device())
            return empty.requires_grad_(requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
