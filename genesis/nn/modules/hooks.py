"""Module hooks beyond the forward ones: full backward hooks, and hooks on every module.

A full backward hook sees a module's gradients at its boundary: `hook(module, grad_input,
grad_output)`, with one entry per positional argument and per output (None where there is no
tensor or no gradient). The call wraps the module's tensor arguments and tensor outputs in an
identity Function, `_Relay`: when backward reaches the outputs' relay it runs the backward
pre-hooks (which may replace grad_output) and keeps grad_output; when it reaches the inputs'
relay, every module operation has been differentiated, so the full hooks run there (and may
replace grad_input).

The register_module_* functions add hooks that run for every module's call, before the module's
own hooks.
"""

import warnings
from collections import OrderedDict

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import RemovableHandle, Tensor

global_forward_pre_hooks = OrderedDict()
global_forward_hooks = OrderedDict()
global_forward_hooks_with_kwargs = set()
global_forward_hooks_always_called = set()
global_backward_pre_hooks = OrderedDict()
global_backward_hooks = OrderedDict()
global_is_full_backward_hook = [None]  # True: full hooks, False: legacy ones, None: neither


any_global = False  # whether some register_module_* hook is registered: one check per call


def _update_any_global():
    global any_global
    any_global = bool(global_forward_pre_hooks or global_forward_hooks
                      or global_backward_pre_hooks or global_backward_hooks)


class _GlobalHandle(RemovableHandle):
    """A global hook's handle: registering and removing it update `any_global`."""

    def __init__(self, hooks, hook):
        super().__init__(hooks, hook)
        _update_any_global()

    def remove(self):
        super().remove()
        _update_any_global()


def register_module_forward_pre_hook(hook):
    """`hook(module, args)` runs before every module's forward (and before its own pre-hooks)."""
    return _GlobalHandle(global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """`hook(module, args, output)` (or `(module, args, kwargs, output)`) runs after every
    module's forward; `always_call` runs it even when forward raises."""
    handle = _GlobalHandle(global_forward_hooks, hook)
    if with_kwargs:
        global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        global_forward_hooks_always_called.add(handle.id)
    return handle


def register_module_full_backward_pre_hook(hook):
    """`hook(module, grad_output)` runs for every module when its output gradients are known."""
    return _GlobalHandle(global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """`hook(module, grad_input, grad_output)` runs for every module once its input gradients
    are computed."""
    _set_global_kind(True)
    return _GlobalHandle(global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated: the legacy backward hook, on every module (see Module.register_backward_hook)."""
    _set_global_kind(False)
    return _GlobalHandle(global_backward_hooks, hook)


def _set_global_kind(full):
    if global_is_full_backward_hook[0] is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    global_is_full_backward_hook[0] = full


class _Relay(Function):
    """The identity on `tensors`; its backward hands the gradients to `callback`, which returns
    the ones to pass on."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        outputs = tuple(t.view_as(t) for t in tensors)
        ctx.mark_non_differentiable(*(o for o, t in zip(outputs, tensors) if not t.requires_grad))
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.callback(grads))


def _relay(values, callback):
    """`values` (a tuple) with its tensors passed through one _Relay, and their positions; the
    tuple unchanged (positions None) when no tensor requires grad."""
    positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not any(values[i].requires_grad for i in positions):
        return values, None
    relayed = _Relay.apply(callback, *(values[i] for i in positions))
    values = list(values)
    for i, tensor in zip(positions, relayed):
        values[i] = tensor
    return tuple(values), positions


def _spread(positions, grads, size):
    """Gradients of the tensors at `positions`, as a tuple of `size` entries (None elsewhere)."""
    full = [None] * size
    for i, g in zip(positions or (), grads):
        full[i] = g
    return tuple(full)


class BackwardHook:
    """One call's full backward hooks: relays around the arguments and outputs of the call."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.input_positions = None
        self.n_inputs = 0

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        args, self.input_positions = _relay(args, self._on_grad_inputs)
        return args

    def setup_output_hook(self, output):
        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        self.n_outputs = len(outputs)
        outputs, self.output_positions = _relay(outputs, self._on_grad_outputs)
        return outputs if is_tuple else outputs[0]

    def _on_grad_outputs(self, grads):
        self.grad_outputs = _spread(self.output_positions, grads, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, self.grad_outputs)
            if result is None:
                continue
            if len(result) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(result)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(result)
        passed_on = tuple(self.grad_outputs[i] for i in self.output_positions)
        if self.input_positions is None:  # no relay below to run the full hooks: run them now
            self._run_hooks_without_inputs()
        return passed_on

    def _run_hooks_without_inputs(self):
        if self.hooks:
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients. See "
                          "Module.register_full_backward_hook's documentation for more details.",
                          stacklevel=2)
        grad_inputs = (None,) * self.n_inputs
        for hook in self.hooks:
            result = hook(self.module, grad_inputs, self.grad_outputs)
            if result is not None and not all(g is None for g in result):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    def _on_grad_inputs(self, grads):
        grad_inputs = _spread(self.input_positions, grads, self.n_inputs)
        if self.grad_outputs is None:  # backward did not pass through the outputs' relay
            return grads
        for hook in self.hooks:
            result = hook(self.module, grad_inputs, self.grad_outputs)
            if result is None:
                continue
            if len(result) != len(grad_inputs):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                   f"{len(result)}, but expected {len(grad_inputs)}")
            grad_inputs = tuple(result)
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_positions)


def backward_hooks_for(module):
    """(full hooks, pre-hooks, legacy hooks) that a call of `module` runs, global ones first."""
    full, legacy = [], []
    for kind, hooks in ((global_is_full_backward_hook[0], global_backward_hooks),
                        (module._is_full_backward_hook, module._backward_hooks)):
        if kind is not None:
            (full if kind else legacy).extend(hooks.values())
    pre = list(global_backward_pre_hooks.values()) + list(module._backward_pre_hooks.values())
    return full, pre, legacy


def wants_backward_hooks(module):
    return is_grad_enabled() and bool(module._backward_hooks or module._backward_pre_hooks
                                      or global_backward_hooks or global_backward_pre_hooks)


def first_tensor(output):
    """The tensor whose grad_fn a legacy backward hook attaches to: the first one found by
    descending into the first element (or first tensor value of a dict)."""
    while not isinstance(output, Tensor):
        if isinstance(output, dict):
            output = next(v for v in output.values() if isinstance(v, Tensor))
        else:
            output = output[0]
    return output


def attach_legacy_hooks(module, output, hooks):
    """Legacy backward hooks: `hook(module, grad_input, grad_output)` of the output's last
    operation (its grad_fn), as PyTorch's register_backward_hook."""
    grad_fn = first_tensor(output).grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(lambda grad_inputs, grad_outputs, hook=hook:
                              hook(module, grad_inputs, grad_outputs))
