"""`nn.Parameter`: a tensor that a Module registers as one of its parameters."""

from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor sharing `data`'s memory, with requires_grad=True by default.

    Assigning one as a Module attribute registers it in the module's `parameters()`.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        param = cls._make(data._data, data.device, data.dtype, data._storage, data._offset,
                          version=data._version_counter)
        param.requires_grad_(requires_grad)
        return param

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach(), self.requires_grad))
