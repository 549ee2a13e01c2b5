"""`nn.Module`: the base class of layers and models, with PyTorch's registration rules.

Parameters, buffers and submodules assigned as attributes are kept in three ordered dicts
(`_parameters`, `_buffers`, `_modules`) so they can be enumerated by name, moved between devices
and dtypes, and saved and loaded as a state dict.
"""

import functools
import itertools
from collections import OrderedDict, namedtuple

from ... import __future__, dtypes
from ...autograd.grad_mode import no_grad
from ...ops.copies import parse_to
from ...ops.creation import empty_like
from ...tensor import RemovableHandle, Tensor
from ...utils._swap import swap_tensors
from ..parameter import Buffer, Parameter, is_lazy
from . import hooks
from .hooks import (register_module_backward_hook, register_module_forward_hook,  # noqa: F401
                    register_module_forward_pre_hook, register_module_full_backward_hook,
                    register_module_full_backward_pre_hook)
from .state_loading import collecting, load_plan, write_plan


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict` returns: the keys it did not find and the keys it did not use."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(value):
    return "genesis.Tensor" if isinstance(value, Tensor) else type(value).__name__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for all neural network modules; subclasses define `forward`."""

    training: bool
    _version = 1
    dump_patches = False
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments: "
                            f"{args} {kwargs}")
        for name, value in (("training", True), ("_parameters", OrderedDict()),
                            ("_buffers", OrderedDict()), ("_non_persistent_buffers_set", set()),
                            ("_modules", OrderedDict()), ("_forward_pre_hooks", OrderedDict()),
                            ("_forward_pre_hooks_with_kwargs", set()),
                            ("_forward_hooks", OrderedDict()),
                            ("_forward_hooks_with_kwargs", set()),
                            ("_forward_hooks_always_called", set()),
                            ("_backward_pre_hooks", OrderedDict()),
                            ("_backward_hooks", OrderedDict()), ("_is_full_backward_hook", None),
                            ("_state_dict_pre_hooks", OrderedDict()),
                            ("_state_dict_hooks", OrderedDict()),
                            ("_load_state_dict_pre_hooks", OrderedDict()),
                            ("_load_state_dict_post_hooks", OrderedDict())):
            object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    # registration

    def _check_new_name(self, name, kind, registry):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Add `param` (a Parameter or None) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name(name, "parameter", self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(genesis.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a non-parameter state tensor; `persistent` puts it in the state dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(genesis Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add `module` (a Module or None) as the child `name`."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_new_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            members = self.__dict__.get(registry)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(genesis.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(genesis.nn.Module or None expected)")
            modules[name] = value
        elif isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, value.persistent)
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(genesis.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep):
        """Remove `name` from the instance dict and every registry but `keep`."""
        self.__dict__.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                self.__dict__[registry].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(registry, ()):
                del self.__dict__[registry][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _lookup(self, target, registry, kind):
        """`get_parameter`/`get_buffer`: the member `target` ("a.b.name") of kind `registry`."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module.__dict__[registry]:
            raise AttributeError(f"`{name}` is not {kind}")
        return module.__dict__[registry][name]

    def get_submodule(self, target):
        """The submodule at the dotted path `target` ("" is self)."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")  # noqa: TRY004
        return module

    def set_submodule(self, target, module, strict=False):
        """Put `module` at the dotted path `target`, replacing what is there; `strict` only
        replaces an existing submodule."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        return self._lookup(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        return self._lookup(target, "_buffers", "a buffer")

    # enumeration

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for self and every descendant, each module once by default."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    # modes and gradients

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's `.grad`: drop it (default) or fill it with zeros."""
        from ...optim.optimizer import zero_grads
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Call `fn` on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # devices and dtypes

    def _apply(self, fn, recurse=True):
        """Map `fn` over every parameter, gradient and buffer (the submodules' too, with
        `recurse`); Parameters keep their identity unless genesis.__future__ says to overwrite
        them."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for key, param in self._parameters.items():
                if param is not None:
                    self._parameters[key] = self._converted(key, param, fn)
            for name, buf in self._buffers.items():
                if is_lazy(buf):  # stays a placeholder for its lazy module
                    buf.data = fn(buf)
                elif buf is not None:
                    self._buffers[name] = fn(buf)
        return self

    def _converted(self, key, param, fn):
        """`param` and its gradient mapped by `fn`: swapped in place, a new Parameter, or the
        same Parameter given the new data, as genesis.__future__'s switches say."""
        grad = param.grad
        if __future__.get_swap_module_params_on_conversion():
            param.grad = None
            self._swap(key, param, Parameter(fn(param), param.requires_grad))
            if grad is not None:
                self._swap(key + ".grad", grad, fn(grad).requires_grad_(grad.requires_grad))
                param.grad = grad
            return param
        if __future__.get_overwrite_module_params_on_conversion():
            out = Parameter(fn(param), param.requires_grad)
            out.grad = None if grad is None else fn(grad)
            return out
        param.data = fn(param)
        if grad is not None:
            grad.data = fn(grad)
        return param

    def _swap(self, key, tensor, new):
        try:
            swap_tensors(tensor, new)
        except Exception as e:
            raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") from e

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(tensor)`; only floats cast;
        `memory_format` lays out the 4-D and 5-D parameters and buffers."""
        device, dtype, non_blocking, _, memory_format = parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            layout = memory_format if t.ndim in (4, 5) else None
            return t.to(device, dtype if t.is_floating_point() else None, non_blocking,
                        memory_format=layout)
        return self._apply(convert)

    def _cast_floats(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def compile(self, *args, **kwargs):
        """Compile this module's forward in place with genesis.compile (same arguments)."""
        from ...compiler import compile as compile_fn
        object.__setattr__(self, "forward", compile_fn(self.forward, *args, **kwargs))

    def to_empty(self, *, device, recurse=True):
        """Replace every parameter and buffer by an uninitialised tensor of its shape and dtype
        on `device`, for a module whose values load_state_dict will fill."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def share_memory(self):
        """Move the parameters, gradients and buffers into shared memory (`share_memory_`)."""
        return self._apply(lambda t: t.share_memory_())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._cast_floats(dtypes.float32)

    def double(self):
        return self._cast_floats(dtypes.float64)

    def half(self):
        return self._cast_floats(dtypes.float16)

    def bfloat16(self):
        return self._cast_floats(dtypes.bfloat16)

    # calls and hooks

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """`hook(module, args)` (or `(module, args, kwargs)`) runs first; may replace args."""
        return self._add_hook(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs, hook,
                              prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """`hook(module, args, output)` (or `(module, args, kwargs, output)`) runs after forward;
        `always_call` runs it even when forward raises."""
        handle = self._add_hook(self._forward_hooks, self._forward_hooks_with_kwargs, hook,
                                prepend, with_kwargs)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """`hook(module, grad_output)` runs when the gradients of the outputs are known; it may
        return replacements for them."""
        return self._add_hook(self._backward_pre_hooks, set(), hook, prepend, False)

    def register_full_backward_hook(self, hook, prepend=False):
        """`hook(module, grad_input, grad_output)` runs once the gradients of the inputs are
        computed; it may return replacements for grad_input."""
        self._set_backward_hook_kind(True)
        return self._add_hook(self._backward_hooks, set(), hook, prepend, False)

    def register_backward_hook(self, hook):
        """Deprecated: `hook(module, grad_input, grad_output)` of the output's last operation
        only (its grad_fn), not of the whole module; register_full_backward_hook replaces it.
        grad_input has an entry per argument of that operation, None for non-tensors."""
        self._set_backward_hook_kind(False)
        return RemovableHandle(self._backward_hooks, hook)

    def _set_backward_hook_kind(self, full):
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on "
                               "a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    @staticmethod
    def _add_hook(hooks, with_kwargs_set, hook, prepend, with_kwargs):
        handle = RemovableHandle(hooks, hook)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        if with_kwargs:
            with_kwargs_set.add(handle.id)
        return handle

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or hooks.any_global):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        """A call with hooks, in PyTorch's order: global then own forward pre-hooks, the input
        relay of full backward hooks, forward, global then own forward hooks, the output
        relay."""
        args, kwargs = self._run_forward_pre_hooks(args, kwargs)
        full = pre = legacy = ()
        if hooks.wants_backward_hooks(self):
            full, pre, legacy = hooks.backward_hooks_for(self)
        backward_hook = hooks.BackwardHook(self, full, pre) if full or pre else None
        if backward_hook is not None:
            args = backward_hook.setup_input_hook(args)
        try:
            output = self.forward(*args, **kwargs)
        except BaseException:
            self._run_forward_hooks(args, kwargs, None, only_always_called=True)
            raise
        output = self._run_forward_hooks(args, kwargs, output)
        if backward_hook is not None:
            output = backward_hook.setup_output_hook(output)
        if legacy:
            hooks.attach_legacy_hooks(self, output, legacy)
        return output

    def _run_forward_pre_hooks(self, args, kwargs):
        for table, with_kwargs in ((hooks.global_forward_pre_hooks, ()),
                                   (self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)):
            for hook_id, hook in list(table.items()):
                if hook_id in with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {result}.")
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
        return args, kwargs

    def _run_forward_hooks(self, args, kwargs, output, only_always_called=False):
        for table, with_kwargs, always in (
                (hooks.global_forward_hooks, hooks.global_forward_hooks_with_kwargs,
                 hooks.global_forward_hooks_always_called),
                (self._forward_hooks, self._forward_hooks_with_kwargs,
                 self._forward_hooks_always_called)):
            for hook_id, hook in list(table.items()):
                if only_always_called and hook_id not in always:
                    continue
                if hook_id in with_kwargs:
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                if result is not None and not only_always_called:
                    output = result
        return output

    __call__ = _call_impl

    # state dicts

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if _has_extra_state(self, "get_extra_state"):
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer (and extra state), keyed by
        dotted name, whose `_metadata` holds each module's `_version` (read back when loading);
        the state-dict hooks run before and after each module's part."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook, public in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if public:
                    raise RuntimeError("state_dict post-hook must return None")
                destination = result
        return destination

    def get_extra_state(self):
        """Extra state for state_dict, stored under "_extra_state"; a module that has some
        overrides this and set_extra_state."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called.")

    def set_extra_state(self, state):
        """Restore what get_extra_state returned (see get_extra_state)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called.")

    def register_state_dict_pre_hook(self, hook):
        """`hook(module, prefix, keep_vars)` runs before state_dict() collects this module."""
        return RemovableHandle(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """`hook(module, state_dict, prefix, local_metadata)` runs after state_dict() collected
        this module and its children; it may edit state_dict in place and returns None."""
        return RemovableHandle(self._state_dict_hooks, (hook, True))

    def _register_state_dict_hook(self, hook):
        """The older post-hook: a dict it returns replaces the state dict."""
        return RemovableHandle(self._state_dict_hooks, (hook, False))

    def register_load_state_dict_pre_hook(self, hook):
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` runs before this module's entries are checked; it may edit
        state_dict (to rename the keys of an older checkpoint)."""
        return RemovableHandle(self._load_state_dict_pre_hooks, functools.partial(hook, self))

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """The older pre-hook, called without the module unless `with_module`."""
        return RemovableHandle(self._load_state_dict_pre_hooks,
                               functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook):
        """`hook(module, incompatible_keys)` runs after loading; it may remove keys from
        incompatible_keys' lists in place (before strict checks them) and returns None."""
        return RemovableHandle(self._load_state_dict_post_hooks, hook)

    def _local_state(self):
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        return {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                if v is not None}

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Run the load pre-hooks, then check this module's own entries of `state_dict`: the
        ones that fit are written once load_state_dict has checked every module (at once when
        called on its own), the others recorded in the three lists."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        with load_plan(local_metadata.get("assign_to_params_buffers", False)) as plan:
            self._check_own_entries(state_dict, prefix, missing_keys, unexpected_keys,
                                    error_msgs, plan)

    def _check_own_entries(self, state_dict, prefix, missing_keys, unexpected_keys, error_msgs,
                           plan):
        """Sort this module's entries of `state_dict` into `plan` (the copies to make), missing,
        unexpected and size-mismatched keys."""
        local_state = self._local_state()
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "genesis.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
            elif tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model is "
                                  f"{param.shape}.")
            else:
                plan.append((self, name, param, value))
        extra = _has_extra_state(self, "set_extra_state")
        if extra:
            if prefix + _EXTRA_STATE in state_dict:
                plan.append((self, _EXTRA_STATE, None, state_dict[prefix + _EXTRA_STATE]))
            else:
                missing_keys.append(prefix + _EXTRA_STATE)
        for key in state_dict:
            head, dot, _ = key[len(prefix):].partition(".")
            if dot:
                known = head in self._modules
            else:
                known = head in local_state or (extra and head == _EXTRA_STATE)
            if not known:
                unexpected_keys.append(key)

    def _check_state_dict(self, state_dict, prefix, metadata, missing, unexpected, errors,
                          assign):
        """Check `state_dict` (only keys under `prefix`) against this module and its children,
        each given its entry of the checkpoint's `metadata`."""
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        self._load_from_state_dict(state_dict, prefix, local_metadata, True, missing,
                                   unexpected, errors)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state = {k: v for k, v in state_dict.items() if k.startswith(child_prefix)}
                child._check_state_dict(child_state, child_prefix, metadata, missing,
                                        unexpected, errors, assign)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy `state_dict` into this module's parameters and buffers.

        Every entry is checked before anything is written, so a RuntimeError (missing or
        unexpected keys with `strict`, or a shape mismatch) leaves the module unchanged. Where
        load post-hooks are registered they run on the loaded module, as in PyTorch, and strict
        checks the keys they leave: a key error then comes after the values are written.
        Returns (missing_keys, unexpected_keys).
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # pre-hooks may edit it; the caller's stays
        missing, unexpected, errors, plan = [], [], [], []
        with collecting(plan):
            self._check_state_dict(state_dict, "", metadata, missing, unexpected, errors, assign)
        post_hooks = [(m, hook) for m in self.modules()
                      for hook in m._load_state_dict_post_hooks.values()]
        if not post_hooks:
            self._raise_load_errors(strict, missing, unexpected, errors)
        elif errors:
            self._raise_load_errors(False, missing, unexpected, errors)
        write_plan(plan, assign)
        keys = _IncompatibleKeys(missing, unexpected)
        for module, hook in post_hooks:
            if hook(module, keys) is not None:
                raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` "
                                   "are not expected to return new values, if incompatible_keys "
                                   "need to be modified, it should be done inplace.")
        if post_hooks:
            self._raise_load_errors(strict, missing, unexpected, errors)
        return keys

    def _raise_load_errors(self, strict, missing, unexpected, errors):
        errors = list(errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))

    # printing

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The layer's own settings, shown inside its repr's parentheses; subclasses override."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


_EXTRA_STATE = "_extra_state"


def _has_extra_state(module, method):
    """Whether `module`'s class overrides get_extra_state / set_extra_state."""
    return getattr(type(module), method) is not getattr(Module, method)
