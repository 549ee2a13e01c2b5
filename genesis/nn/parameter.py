"""`nn.Parameter` and `nn.Buffer`: tensors that a Module, assigned them as attributes, registers
as parameters or as buffers."""

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


class _BufferMeta(type):
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Buffer(data, persistent=True): `data` detached and marked, so that assigning it as a
    Module attribute registers it as a buffer (in the state dict unless not `persistent`).
    The result is a plain Tensor; isinstance(t, Buffer) tells the marked ones."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        buffer = data.detach().requires_grad_(data.requires_grad)
        buffer.persistent = persistent
        buffer._is_buffer = True
        return buffer
