"""The Optimizer base: parameter groups, per-parameter state and PyTorch's state_dict format.

A subclass declares its hyperparameter defaults and implements `_update(group)`, which updates
every parameter of one group that has a gradient. `step` runs the closure with grad enabled,
then the updates under `no_grad` with in-place genesis ops, so it works on every device.
"""

from collections import defaultdict
from copy import deepcopy
from itertools import chain

from .. import dtypes
from .._warnings import warn
from ..autograd.grad_mode import enable_grad, no_grad
from ..dispatch import kernel
from ..tensor import Tensor
from ._multi_tensor import Updated, laid_out_alike, linear


class _RequiredParameter:
    """Marks a hyperparameter that every parameter group must give (no default)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def step_dtype():
    """The dtype of the 0-d `step` counters: float64 under a float64 default dtype, else float32."""
    return dtypes.float64 if dtypes.get_default_dtype() is dtypes.float64 else dtypes.float32


def new_step(p=None, group=None):
    """A fresh `step` counter: a 0-d CPU tensor as PyTorch keeps it, or, for a `capturable`
    group, a float32 0-d tensor on p's device, advanced and read there."""
    if group is not None and group.get("capturable"):
        return device_scalar(0.0, p, dtypes.float32)
    return host_scalar(0.0)


def state_scalar(value, p, group):
    """A per-parameter scalar kept beside `step` (NAdam's mu_product, ASGD's eta and mu): a
    host_scalar, or for a `capturable` group a 0-d tensor on p's device."""
    if group.get("capturable"):
        return device_scalar(value, p, step_dtype())
    return host_scalar(value)


def device_scalar(value, p, dtype):
    """A 0-d tensor of `dtype` holding `value` on p's device."""
    from ..ops.creation import full
    return full((), value, dtype=dtype, device=p.device)


def host_scalar(value):
    """A 0-d CPU tensor of step_dtype holding `value`: the per-parameter scalars PyTorch keeps
    beside `step` (NAdam's mu_product, ASGD's eta and mu), read on the host every step."""
    from ..ops.creation import tensor
    return tensor(value, dtype=step_dtype())


def set_host_scalar(scalar, value):
    """Write `value` into a host_scalar in place (rounded to its dtype, as PyTorch's copy_) and
    return what it now holds."""
    scalar._data[()] = value
    scalar._bump_version()
    return float(scalar._data[()])


HOST_SCALARS = ("step", "mu_product", "eta", "mu")


def advance_step(step):
    """Add 1 to a `step` counter (new_step's 0-d CPU tensor) in place and return its value.

    The counter's numpy value is written directly, as a scalar: a fused step advances the
    counter of every parameter, and an `add_` op apiece (~50 us) would cost more than the update
    itself (numpy's in-place `+= 1` on a 0-d array takes about 1 us, the scalar write 0.07).
    A counter on a device (loaded from a capturable optimizer's state) is advanced there and
    read back."""
    try:
        value = step._data[()] + 1
    except TypeError:  # a device array, not subscriptable
        return float(step.add_(1).item())
    step._data[()] = value
    step._bump_version()
    return float(value)


CAPTURABLE_DEVICES = ["cuda"]


def check_capturable(tensors, what="params and state_steps"):
    """PyTorch's error for a capturable step on tensors outside the supported devices."""
    if any(t.device.type not in CAPTURABLE_DEVICES for t in tensors):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             f"{CAPTURABLE_DEVICES}.")


def device_lr(lr, device):
    """A capturable step's learning rate: a float, or a Tensor lr on `device`, read there."""
    return lr.to(device) if isinstance(lr, Tensor) else float(lr)


def amp_inputs(optimizer, device):
    """GradScaler's (grad_scale, found_inf) set on `optimizer` for this step (its
    _step_supports_amp_scaling protocol) as backend arrays on `device`, each None if absent."""
    return tuple(None if t is None else t.to(device)._data
                 for t in (getattr(optimizer, "grad_scale", None),
                           getattr(optimizer, "found_inf", None)))


def advance(state, group):
    """Advance state["step"]: the new count as a float, or for a capturable group the counter
    itself, advanced on its device (its value is never read on the host)."""
    if group.get("capturable"):
        return state["step"].add_(1)
    return advance_step(state["step"])


def step_lr(group, device):
    """The learning rate a step uses: device_lr for a capturable group, else a float."""
    return device_lr(group["lr"], device) if group.get("capturable") else float(group["lr"])


def lr_on_device(group):
    """Whether a capturable group's learning rate is a Tensor, read on the device: Adadelta's
    and RMSprop's fused kernels take a float, so such a group of theirs takes the loop."""
    return bool(group.get("capturable")) and isinstance(group["lr"], Tensor)


def addcdiv_scaled_(p, x, divisor, value):
    """p += value * x / divisor (divisor None: 1), `value` a float or a 0-d tensor (a
    capturable learning rate, applied on the device)."""
    if isinstance(value, Tensor):
        return p.add_((x if divisor is None else x / divisor) * value)
    if divisor is None:
        return p.add_(x, alpha=value)
    return p.addcdiv_(x, divisor, value=value)


def check_lr(lr):
    """PyTorch's errors for a learning rate: a Tensor of one element, not negative."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_non_negative(lr=lr)


def check_betas(betas):
    """PyTorch's error for a beta outside [0, 1)."""
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def check_non_negative(**values):
    """ValueError in PyTorch's words for the first negative hyperparameter."""
    labels = {"lr": "learning rate", "eps": "epsilon value"}
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {labels.get(name, name + ' value')}: {value}")


_FUSED_DEVICES = ["cpu", "cuda"]


def check_fused_options(fused, foreach, differentiable):
    """PyTorch's errors for options that `fused=True` excludes."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def check_fused_param(p):
    """PyTorch's error for a parameter the fused kernels cannot update."""
    if p.device.type not in _FUSED_DEVICES or not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: {_FUSED_DEVICES} but {p.dtype} and "
                           f"{p.device.type}")


def takes_fused(group):
    """Whether `group` steps through its optimizer's fused multi-tensor kernel: with
    `fused=True`, or by default when every parameter is on CUDA (PyTorch takes its foreach
    implementation there; one launch per step beats several per parameter). `foreach=False`,
    `differentiable` or a CPU parameter without `fused=True` keep the per-parameter loop."""
    fused = group.get("fused")
    if fused:
        return True
    if fused is not None or group["foreach"] is False or group["differentiable"]:
        return False
    return all(p.device.type == "cuda" for p in group["params"])


class Optimizer:
    """Base class of all optimizers: `Optimizer(params, defaults)`."""

    _capturable_tensors = "params and state_steps"  # named in the capturable device error

    def __init__(self, params, defaults):
        if defaults.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}: differentiable=True is not "
                                      "supported by genesis")
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__module__}.Tensor")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {key}: {group[key]}\n" for key in sorted(group) if key != "params")
        return text + ")"

    def add_param_group(self, param_group):
        """Add a group of parameters (with its own hyperparameters) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. Please "
                            "use a list instead.")
        _split_names(param_group, list(params))
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(param).__module__}.{type(param).__name__}")
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len({id(p) for p in params}) != len(params):
            warn("optimizer contains a parameter group with duplicate parameters; in future, "
                 "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                 "information")
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        if any(("param_names" in g) != ("param_names" in param_group) for g in self.param_groups):
            kind = "with names" if "param_names" in param_group else "without names"
            raise ValueError("all optimizer param groups should be with/without names. "
                             f"cannot add param group {kind} to the optimizer")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients: drop them (default) or fill them with zeros."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        """One optimization step; `closure` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update(group)
        return loss

    def _update(self, group):
        raise NotImplementedError(f"{type(self).__name__} must implement step() or _update()")

    def _init_state(self, p, group):
        """Create a parameter's state on its first step (optimizers with state override this)."""

    def _with_grads(self, group):
        """(param, gradient, state) for each parameter of `group` that has a gradient; the
        gradient is negated under `maximize` and the state is created on first use."""
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                self._init_state(p, group)
            if group.get("capturable"):
                check_capturable([p] + [state[k] for k in HOST_SCALARS if k in state],
                                 self._capturable_tensors)
            yield p, (-p.grad if group["maximize"] else p.grad), state

    def _fused_batches(self, group, batch_key):
        """{(device, batch_key(p, state)): [params]} of the parameters of `group` that have a
        gradient, for a fused kernel: one call per batch."""
        batches = {}
        for p in group["params"]:
            if p.grad is None:
                continue
            check_fused_param(p)
            batches.setdefault((p.device, batch_key(p, self.state[p])), []).append(p)
        return batches

    def _initialized(self, group):
        """A _fused_batches key that creates a parameter's state on first use and keys by
        nothing (one batch per device)."""
        def key(p, state):
            if not state:
                self._init_state(p, group)
        return key

    def _device_counter_batches(self, group):
        """(device, params, their counters' arrays, lr) per device of a capturable group: the
        state created on first use, the counters advanced by one launch (not under GradScaler's
        inf flag), the lr a float or a 0-d array on the device, for a kernel reading them."""
        for (device, _), params in self._fused_batches(group, self._initialized(group)).items():
            steps = self._advance_on_device(device, params, amp_inputs(self, device)[1])
            lr = device_lr(group["lr"], device)
            yield device, params, steps, lr._data if isinstance(lr, Tensor) else lr

    def _counted_batches(self, group):
        """_fused_batches for a kernel that needs no step count: {(device, None): params}, each
        parameter's counter advanced on the host, or for a capturable group on the device (one
        launch per device, nothing read on the host)."""
        if not group.get("capturable"):
            return self._fused_batches(group, self._stepping(group, by_step=False))
        batches = self._fused_batches(group, self._initialized(group))
        for (device, _), params in batches.items():
            self._advance_on_device(device, params, None)
        return batches

    def _stepping(self, group, by_step=True):
        """A _fused_batches key for optimizers whose kernel call depends on the step count at
        most: it creates a parameter's state on first use, advances its step and keys by the
        new count (`by_step`) or by nothing."""
        def key(p, state):
            if not state:
                self._init_state(p, group)
            step = advance_step(state["step"])
            return step if by_step else None
        return key

    def _fused_step(self, name, device, params, keys, *hyperparameters, **arrays):
        """One call of the multi-tensor kernel `name` on `params`: their arrays, their gradients',
        then the arrays of each state entry named in `keys` (None: an absent list, passed as
        None), then `hyperparameters` and the keyword `arrays`. A parameter laid out as its
        gradient and states (a channels-last weight) is updated through flat views of them,
        others through contiguous copies written back afterwards (_multi_tensor.Updated); so
        are the gradients when GradScaler's `grad_scale` has the kernel store them unscaled."""
        flat = [laid_out_alike(p, p.grad, *(self.state[p][key] for key in keys if key))
                for p in params]
        updated = [Updated(params, flat)] + [None if key is None else
                                             Updated([self.state[p][key] for p in params], flat)
                                             for key in keys]
        if arrays.get("grad_scale") is not None:
            grads = Updated([p.grad for p in params], flat)
            updated.append(grads)
            grad_arrays = grads.arrays
        else:
            grad_arrays = [linear(p.grad, f)._data for p, f in zip(params, flat)]
        kernel(name, device.type)(
            updated[0].arrays, grad_arrays,
            *[None if u is None else u.arrays for u in updated[1:len(keys) + 1]],
            *hyperparameters, **arrays)
        for u in updated:
            if u is not None:
                u.write_back()

    def _advance_on_device(self, device, params, found_inf):
        """Advance the device step counters of `params` by one launch ("advance_steps"),
        unless GradScaler's `found_inf` array is nonzero; returns their arrays."""
        steps = [self.state[p]["step"] for p in params]
        check_capturable(params + steps, self._capturable_tensors)
        arrays = [s._data for s in steps]
        kernel("advance_steps", device.type)(arrays, found_inf)
        for s in steps:
            s._bump_version()
        return arrays

    def state_dict(self):
        """`{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}` (PyTorch's):
        a parameter's index is its position counting all groups' params in order, its last in
        the first group listing it, as PyTorch numbers a group's duplicates."""
        index, groups, start = {}, [], 0
        for group in self.param_groups:
            index.update({id(p): i for i, p in enumerate(group["params"], start)
                          if id(p) not in index})
            start += len(group["params"])
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load what `state_dict` returned (this optimizer's or PyTorch's, converted)."""
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups,
                                                                     saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        on_device = {id(p): bool(saved.get("capturable"))
                     for group, saved in zip(self.param_groups, saved_groups)
                     for p in group["params"]}
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast_state(param, k, v, on_device[id(param)])
                                for k, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                saved.setdefault(name, default)
        self.__setstate__({"state": state, "param_groups": saved_groups})


def zero_grads(params, set_to_none=True):
    """Drop the `.grad` of each parameter, or detach it and fill it with zeros (PyTorch's rule)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if p.grad.grad_fn is not None:
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        p.grad.zero_()


def _split_names(param_group, params):
    """Accept `(name, tensor)` pairs as `named_parameters()` yields: names go to "param_names"."""
    named = [p for p in params if isinstance(p, tuple)]
    if named and len(named) != len(params):
        raise ValueError("all optimizer params should be with/without names. Some param names "
                         "are missing")
    if named:
        param_group["param_names"] = [name for name, _ in named]
        params = [p for _, p in named]
    param_group["params"] = params


def _cast_state(param, key, value, on_device=False):
    """A copy of a loaded state value on `param`'s device and dtype. The step counter and the
    other HOST_SCALARS stay CPU tensors of their own dtype, read on the host every step, or
    with `on_device` (a capturable group) go to param's device: the step as float32 (as
    PyTorch loads it), the others as step_dtype()."""
    if key in HOST_SCALARS:
        if on_device:
            dtype = dtypes.float32 if key == "step" else step_dtype()
            if isinstance(value, Tensor):
                return value.detach().to(device=param.device, dtype=dtype, copy=True)
            return device_scalar(float(value), param, dtype)
        if isinstance(value, Tensor):
            return value.detach().to(device="cpu", copy=True)
        return host_scalar(float(value))
    if isinstance(value, Tensor):
        dtype = param.dtype if param.is_floating_point() else value.dtype
        return value.detach().to(device=param.device, dtype=dtype, copy=True)
    if isinstance(value, dict):
        return {k: _cast_state(param, k, v, on_device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, None, v) for v in value)
    return value


__all__ = ["Optimizer", "required"]
