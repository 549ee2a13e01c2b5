"""`nn.Parameter` and `nn.Buffer`: tensors that a Module, assigned them as attributes, registers
as parameters or as buffers; and their uninitialized forms, which lazy modules give a shape on
their first call."""

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


class _Uninitialized:
    """An empty placeholder until `materialize` gives it a shape (and makes it a plain
    Parameter or Tensor)."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Become an uninitialised tensor of `shape` (on this one's device, in its dtype unless
        given), of class `cls_to_become`."""
        from ..ops.creation import empty
        self.data = empty(shape, device=device or self.device, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return type(self), (self.requires_grad,)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape a lazy module infers from its first input."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from ..ops.creation import empty
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape a lazy module infers from its first input."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from ..ops.creation import empty
        data = empty(0, device=device, dtype=dtype)
        buffer = cls._make(data._data, data.device, data.dtype, data._storage, data._offset)
        buffer.requires_grad_(requires_grad)
        buffer.persistent = persistent
        buffer._is_buffer = True
        return buffer

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(tensor):
    """Whether `tensor` is an uninitialized parameter or buffer."""
    return isinstance(tensor, _Uninitialized)
