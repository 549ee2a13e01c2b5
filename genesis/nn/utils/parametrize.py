"""Parametrizations: a module's parameter or buffer recomputed from other tensors on access.

`register_parametrization(module, "weight", P)` moves `module.weight` to
`module.parametrizations.weight.original` (or `original0`, `original1`... when P's
`right_inverse` returns several tensors) and makes `module.weight` a property evaluating
P(original) on each access (once per `cached()` block). Assigning `module.weight = X` stores
right_inverse(X). As in torch, the module's class is swapped for a subclass
`Parametrized<Class>` carrying the properties.
"""

from contextlib import contextmanager

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

_cache_depth = 0
_cache = {}


@contextmanager
def cached():
    """Within this block each parametrized tensor is computed once, on first access."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_tensor(module, name, value):
    """`value` as parameter `name` of `module` if it is a Parameter, else as a buffer."""
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_value(original, value):
    """Write `value` into the tensor `original` (resized to it if the shape differs)."""
    with no_grad():
        if tuple(original.shape) == tuple(value.shape) and original.dtype is value.dtype:
            original.copy_(value)
        else:
            original.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to `original` (or to the tensors
    `original0`, `original1`...), with their right inverses applied in reverse on assignment."""

    def __init__(self, modules, original, unsafe=False):
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            _set_value(original, new)
            _register_tensor(self, "original", original)
            return
        for i, value in enumerate(new):
            value = value.detach()
            if isinstance(original, Parameter):
                value = Parameter(value, original.requires_grad)
            _register_tensor(self, f"original{i}", value)

    def right_inverse(self, value):
        """Store the tensor(s) whose parametrization gives `value`."""
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
            if self.is_tensor:
                _set_value(self.original, value)
                return
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                _set_value(getattr(self, f"original{i}"), tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_value(module, name):
    if not _cache_depth:
        return module.parametrizations[name]()
    key = (id(module), name)
    if key not in _cache:
        _cache[key] = module.parametrizations[name]()
    return _cache[key]


def _inject_property(module, name):
    def getter(self):
        return _parametrized_value(self, name)

    def setter(self, value):
        self.parametrizations[name].right_inverse(value)
    setattr(module.__class__, name, property(getter, setter))


def _inject_new_class(module):
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _check_safe(module, name, parametrization):
    """The errors torch raises when a new parametrization changes the tensor's shape or dtype."""
    current = getattr(module, name)
    out = parametrization(current)
    if not isinstance(out, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(out).__name__}.")
    for what, a, b in (("dtype", current.dtype, out.dtype),
                       ("shape", tuple(current.shape), tuple(out.shape))):
        if a != b:
            raise ValueError(f"Registering a parametrization may not change the {what} of the "
                             f"tensor, unless the `unsafe` flag is enabled.\nmodule.{name}."
                             f"{what}: {a}\nparametrization(module.{name}).{what}: {b}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make `module.<tensor_name>` the output of `parametrization` (see the module docstring);
    a second registration on the same tensor composes after the first. Returns `module`."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_safe(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    if not unsafe:
        _check_safe(module, tensor_name, parametrization)
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has a parametrization (on `tensor_name`, if given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo the parametrizations of `module.<tensor_name>`: it becomes a plain parameter (or
    buffer) again, holding its parametrized value (`leave_parametrized`) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_value(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name).detach()
        original = Parameter(value, parametrizations.original0.requires_grad) if isinstance(
            parametrizations.original0, Parameter) else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before parametrizations swapped it."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "type_before_parametrizations"]
