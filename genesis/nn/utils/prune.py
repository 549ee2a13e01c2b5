"""Pruning: zero out parts of a module's parameters through a mask, as `torch.nn.utils.prune`.

Pruning `module.name` moves the Parameter to `name + "_orig"`, stores the mask as the buffer
`name + "_mask"` and makes `name` a plain attribute, `mask * name_orig`, recomputed before each
forward by the pruning method registered as a forward pre-hook. Pruning the same parameter again
combines the masks through a `PruningContainer`; `remove` makes the pruning permanent.
"""

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ...memory_formats import contiguous_format
from ...ops.creation import ones_like, zeros_like
from ...ops.matrix_functions import matrix_norm
from ...ops.random import rand, rand_like
from ...ops.reduce import norm
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """Base class of pruning methods: subclasses define `compute_mask` and `PRUNING_TYPE`
    ("unstructured", "structured" or "global")."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: recompute `module.<name>` from its original and its mask."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for the importance scores `t`, applied on top of `default_mask` (the mask
        of earlier prunings, ones if none); same shape as `t`."""

    def apply_mask(self, module):
        """The pruned tensor: the module's mask times its original parameter."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune `module.<name>` with `cls(*args, **kwargs)` and set up the reparametrization.

        `importance_scores` (the parameter's shape; the parameter itself if None) decide which
        entries go. A mask that cannot be computed raises before the module is changed.
        """
        old_keys, method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {importance_scores.shape} vs "
                                 f"{orig.shape}")
        iterative = isinstance(method, PruningContainer)
        if iterative:
            default_mask = getattr(module, name + "_mask").detach().clone(
                memory_format=contiguous_format)
        else:
            default_mask = ones_like(orig)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
        except Exception:
            if iterative and method is module._forward_pre_hooks[old_keys[0]]:
                method._pruning_methods = method._pruning_methods[:-1]
            raise
        for key in old_keys:
            del module._forward_pre_hooks[key]
        if not iterative:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """`t` times the mask computed from `importance_scores` (`t` itself if None)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                 f"got {importance_scores.shape} vs {t.shape}")
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: `name` becomes a Parameter holding the pruned values
        (the original Parameter object, its data replaced) and `_orig`/`_mask` go."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """(keys of the module's pruning hooks on `name`, the method to register): a new
    `cls(*args, **kwargs)`, or it added to a PruningContainer after the earlier pruning."""
    keys = [k for k, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not keys:
        return keys, method
    old_method = module._forward_pre_hooks[keys[0]]
    container = old_method if isinstance(old_method, PruningContainer) \
        else PruningContainer(old_method)
    container.add_pruning_method(method)
    return keys, container


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one parameter (iterative pruning); each new one
    acts only on the entries or channels that the earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append `method`, which must prune the same parameter as the container."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """`default_mask` with the latest method's mask computed over what it still keeps:
        the kept entries (unstructured), the kept channels (structured) or everything (global).
        """
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kept = _kept_part(method, t, default_mask)
        partial_mask = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


def _kept_part(method, t, mask):
    """The index of the part of `t` that `method` prunes, given the earlier `mask`."""
    if method.PRUNING_TYPE == "unstructured":
        return mask == 1
    if method.PRUNING_TYPE == "global":
        return (slice(None),) * t.dim()
    if method.PRUNING_TYPE != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                             "attribute `dim` defined.")
    n_dims = t.dim()
    dim = method.dim + n_dims if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
    keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
    return (slice(None),) * dim + (keep_channel,) + (slice(None),) * (n_dims - dim - 1)


class Identity(BasePruningMethod):
    """Prunes nothing: the reparametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Reparametrize `module.<name>` with a mask of ones."""
        return super().apply(module, name)


class _AmountMethod(BasePruningMethod):
    """A method that prunes `amount` units: an int count or a fraction in [0, 1]."""

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _count(self, size):
        """How many of `size` units to prune, checked against `size`."""
        nparams_toprune = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(nparams_toprune, size)
        return nparams_toprune


class _UnstructuredMethod(_AmountMethod):
    """Prunes the `amount` entries with the lowest `_scores(t)`.

    Among equal scores topk picks the lowest indices; torch's CPU topk picks others (in its
    selection order), so a mask over tied scores can differ from torch's.
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        nparams_toprune = self._count(t.nelement())
        mask = default_mask.clone(memory_format=contiguous_format)
        if nparams_toprune != 0:
            lowest = self._scores(t).reshape(-1).topk(nparams_toprune, largest=False).indices
            mask.view(-1)[lowest] = 0
        return mask


class RandomUnstructured(_UnstructuredMethod):
    """Prunes `amount` entries chosen uniformly at random."""

    def _scores(self, t):
        return rand_like(t)

    @classmethod
    def apply(cls, module, name, amount):
        """Prune `amount` random entries of `module.<name>`."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_UnstructuredMethod):
    """Prunes the `amount` entries of lowest absolute value."""

    def _scores(self, t):
        return t.abs()

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prune the `amount` entries of `module.<name>` with the lowest |importance_scores|."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _StructuredMethod(_AmountMethod):
    """Prunes `amount` whole channels (slices along `dim`); `_kept_channels` gives the others
    (indices or a bool mask along `dim`; not used when nothing is pruned). Among channels of
    equal norm, which LnStructured keeps can differ from torch's, as for unstructured ties."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        nchannels = t.shape[self.dim]
        nparams_toprune = self._count(nchannels)
        kept = self._kept_channels(t, nchannels, nparams_toprune)
        if nparams_toprune == 0:
            return default_mask
        mask = zeros_like(t)
        dim = self.dim % t.dim()
        mask[(slice(None),) * dim + (kept,)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_StructuredMethod):
    """Prunes `amount` channels along `dim` chosen uniformly at random."""

    def _kept_channels(self, t, nchannels, nparams_toprune):
        if nparams_toprune == 0:
            return None
        prob = rand(nchannels, device=t.device)
        return prob > prob.kthvalue(nparams_toprune).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Prune `amount` random channels of `module.<name>` along `dim`."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_StructuredMethod):
    """Prunes the `amount` channels along `dim` of lowest L`n` norm (`n` as `p` of `norm`)."""

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _kept_channels(self, t, nchannels, nparams_toprune):
        return _compute_norm(t, self.n, self.dim).topk(nchannels - nparams_toprune).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prune the `amount` channels of `module.<name>` along `dim` whose importance scores
        have the lowest L`n` norm."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        """Prune `module.<name>` with `mask`."""
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Reparametrize `module.<name>` with a mask of ones; returns `module`."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` (count or fraction) random entries of `module.<name>`; returns `module`."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of `module.<name>` of lowest |importance_scores| (the
    parameter's own by default); returns `module`."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels of `module.<name>` along `dim`; returns `module`."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels of `module.<name>` along `dim` of lowest L`n` norm of
    `importance_scores` (the parameter's own by default); returns `module`."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) `parameters` together: `pruning_method(**kwargs)` (an
    unstructured method) chooses over all their entries at once, then each gets its share of
    the mask through `custom_from_mask`. `importance_scores` maps (module, name) to scores."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask",
                                                 ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prune `module.<name>` with the given `mask`; returns `module`."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of `module.<name>` permanent and drop its pruning hook; returns
    `module`."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module):
    """Whether `module` or any submodule has a pruning method among its forward pre-hooks."""
    return any(isinstance(hook, BasePruningMethod)
               for submodule in module.modules()
               for hook in submodule._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount):
    """`amount` must be a non-negative int or a float in [0, 1]."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        bad = amount < 0
    else:
        bad = float(amount) > 1.0 or float(amount) < 0.0
    if bad:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    """An int `amount` must not exceed the number of units there are."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t):
    """Channels need a tensor of at least 2 dims."""
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    """The number of units to prune: `amount` itself, or the rounded fraction of the size."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L`n` norm of each channel of `t` along `dim` (over all the other dims)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    if n == "nuc":
        return matrix_norm(t, "nuc", dim=tuple(dims))
    return norm(t, p=n, dim=dims)
