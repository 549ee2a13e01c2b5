"""Lazy modules: layers whose input size is read from their first input (LazyLinear(10) learns
in_features when first called), as PyTorch's.

A lazy layer is built as its ordinary class with UninitializedParameters in place of the weights
whose shape depends on the input. A forward pre-hook, on the first call, gives them their shape
(`initialize_parameters`), initialises them as the ordinary layer would, and turns the module into
that ordinary class (`cls_to_become`). Loading a state dict into a lazy module shapes its
parameters from the loaded tensors instead.
"""

import itertools

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear


class LazyModuleMixin:
    """Mixed in before an ordinary layer class; subclasses set `cls_to_become` and write
    `initialize_parameters(input)`."""

    cls_to_become = None
    _size = None  # the attribute the first input sets: "in_features", "in_channels"...

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _lazy_state(self):
        return itertools.chain(self._parameters.items(), self._buffers.items())

    def _lazy_load_hook(self, state_dict, prefix, *args):
        """Shape the uninitialized tensors from the state dict's (before it is checked)."""
        for name, tensor in self._lazy_state():
            value = state_dict.get(prefix + name)
            if value is not None and is_lazy(tensor) and not is_lazy(value):
                with no_grad():
                    tensor.materialize(value.shape)

    def _placeholders(self, names, device, dtype):
        """Uninitialized parameters in place of `names` (a layer's weight and bias)."""
        for name in names:
            setattr(self, name, UninitializedParameter(device=device, dtype=dtype))

    def reset_parameters(self):
        """The ordinary layer's initialisation, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and getattr(self, self._size) != 0:
            super().reset_parameters()

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self):
        return any(is_lazy(t) for _, t in self._lazy_state())

    def _infer_parameters(self, module, args, kwargs=None):
        """The first call's pre-hook: shape and initialise, then become the ordinary class."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dimension of its first input."""

    cls_to_become = Linear
    _size = "in_features"

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.out_features = out_features
        self._placeholders(("weight", "bias") if bias else ("weight",), device, dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # shaped by load_state_dict
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is "
                                     "not equal to in_features from self.weight: "
                                     f"{self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from the first input's channel dimension (dim 0 when unbatched)."""

    _size = "in_channels"

    def __init__(self, out_channels, kernel_size, *args, bias=True, device=None, dtype=None,
                 **kwargs):
        super().__init__(0, 0, kernel_size, *args, bias=False, **kwargs)
        self.out_channels = out_channels
        self._placeholders(("weight", "bias") if bias else ("weight",), device, dtype)

    def _get_in_channels(self, input):
        unbatched = self._spatial + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.ndim == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            if self.in_channels == 0:  # shaped by load_state_dict
                self.in_channels = self._get_in_channels(input)
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize((*shape, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(base, transposed):
    """The lazy form of convolution class `base`, with its constructor's argument order."""
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            _LazyConvXdMixin.__init__(self, out_channels, kernel_size, stride, padding,
                                      output_padding, groups, bias=bias, dilation=dilation,
                                      padding_mode=padding_mode, device=device, dtype=dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     bias=True, padding_mode="zeros", device=None, dtype=None):
            _LazyConvXdMixin.__init__(self, out_channels, kernel_size, stride, padding, dilation,
                                      groups, bias=bias, padding_mode=padding_mode,
                                      device=device, dtype=dtype)
    name = "Lazy" + base.__name__
    return type(name, (_LazyConvXdMixin, base), {
        "__init__": __init__, "cls_to_become": base, "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"{base.__name__} whose in_channels is read from its first input."})


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin):
    """num_features from the first input's channel dimension."""

    _size = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self._placeholders(("weight", "bias") if bias else ("weight",), device, dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dtypes.int64, device=device)

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            if self.num_features == 0:  # shaped by load_state_dict
                self.num_features = input.shape[1] if input.ndim > 1 else input.shape[0]
            return
        self.num_features = input.shape[1]
        with no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                state = getattr(self, name)
                if is_lazy(state):
                    state.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base):
    name = "Lazy" + base.__name__
    return type(name, (_LazyNormBase, base), {
        "cls_to_become": base, "__module__": __name__, "__qualname__": name,
        "__doc__": f"{base.__name__} whose num_features is read from its first input."})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
