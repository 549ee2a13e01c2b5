"""The older hook-based weight_norm and spectral_norm: the weight is recomputed from new
parameters by a forward pre-hook (`weight_g`/`weight_v`; `weight_orig` with buffers `weight_u`
and `weight_v`), as torch.nn.utils.weight_norm and spectral_norm do."""

from ..._warnings import deprecated_alias
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .parametrizations import _SpectralNorm, _transposed_conv, _WeightNorm, norm_except_dim


class _WeightNormHook:
    tensors = ("_g", "_v")

    def __init__(self, name, dim):
        self.name, self.norm = name, _WeightNorm(dim)

    def compute(self, module):
        return self.norm(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute(module))


def _weight_norm(module, name="weight", dim=0):
    """Replace `module.<name>` by g * v / ||v|| with new parameters `<name>_g` and `<name>_v`."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    hook = _WeightNormHook(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, hook.norm.dim)
                                                     .detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute(module))
    module.register_forward_pre_hook(hook)
    return module


weight_norm = deprecated_alias(
    _weight_norm, "weight_norm", "`torch.nn.utils.weight_norm` is deprecated in favor of "
    "`torch.nn.utils.parametrizations.weight_norm`.")


def _remove(module, name, hook_type, kind, **compute_kwargs):
    """Drop the `hook_type` hook of `name` and the tensors it used: `module.<name>` becomes a
    plain parameter holding the weight the hook computes now."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, hook_type) and hook.name == name:
            with no_grad():
                weight = hook.compute(module, **compute_kwargs).detach()
            delattr(module, name)
            for suffix in hook.tensors:
                delattr(module, name + suffix)
            module.register_parameter(name, Parameter(weight))
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{kind} of '{name}' not found in {module}")


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `module.<name>` a plain parameter holding the current weight."""
    return _remove(module, name, _WeightNormHook, "weight_norm")


class _SpectralNormHook:
    tensors = ("_orig", "_u", "_v")

    def __init__(self, name, norm):
        self.name, self.norm = name, norm

    def compute(self, module, power_iteration=True):
        """The normalized weight; in training first the power iteration steps, v before u (the
        older order, unlike the parametrization's)."""
        norm, weight = self.norm, getattr(module, self.name + "_orig")
        norm._u, norm._v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        norm.training = False
        if module.training and power_iteration:
            matrix = norm._as_matrix(weight)
            with no_grad():
                for _ in range(norm.n_power_iterations):
                    norm._v.copy_(F.normalize(matrix.t().mv(norm._u), dim=0, eps=norm.eps))
                    norm._u.copy_(F.normalize(matrix.mv(norm._v), dim=0, eps=norm.eps))
        return norm(weight)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute(module))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Replace `module.<name>` by itself over its spectral norm, estimated by power iteration
    with the buffers `<name>_u` and `<name>_v` from the parameter `<name>_orig`."""
    weight = getattr(module, name)
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    norm = _SpectralNorm(weight.detach(), n_power_iterations, dim, eps)
    hook = _SpectralNormHook(name, norm)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach() * 1)
    module.register_buffer(name + "_u", norm._u)
    module.register_buffer(name + "_v", norm._v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: `module.<name>` a plain parameter holding the normalized weight."""
    return _remove(module, name, _SpectralNormHook, "spectral_norm", power_iteration=False)
