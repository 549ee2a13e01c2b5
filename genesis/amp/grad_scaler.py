"""`GradScaler`: dynamic loss scaling for float16 training, as `torch.amp.GradScaler`.

float16 gradients underflow: the loss is multiplied by a large scale before backward, so the
gradients are scaled too, and divided by it again (`unscale_`) before the optimizer uses them.
A step whose gradients hold inf or NaN is skipped and the scale backs off; after
`growth_interval` clean steps it grows. The scale, the growth counter and the inf flags stay on
the device: a step costs one multi-tensor kernel per device and one host read, the inf flag's,
to decide whether to step. An optimizer that takes the scale and the flag itself
(`_step_supports_amp_scaling`: fused or capturable Adam/AdamW, fused SGD) unscales in its own
kernel and skips the update on the device: then the whole scale/step/update cycle reads nothing
on the host, and a CUDA graph can replay it.
"""

import enum
import warnings
from collections import defaultdict

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..backends.cuda.runtime import driver
from ..dispatch import kernel
from ..ops import elementwise as ew
from ..ops.creation import full, zeros


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/NaN gradients, adapt the scale.

    >>> scaler = genesis.amp.GradScaler("cuda")
    >>> with genesis.autocast("cuda", dtype=genesis.float16):
    ...     loss = loss_fn(model(x), y)
    >>> scaler.scale(loss).backward()
    >>> scaler.unscale_(optimizer)            # optional: to clip the true gradients
    >>> genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    >>> scaler.step(optimizer)
    >>> scaler.update()
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = enabled
        if enabled and self._device.startswith("cuda") and not driver.is_available():
            warnings.warn("genesis.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            if not isinstance(growth_interval, int) or growth_interval <= 0:
                raise ValueError("growth_interval must be a positive integer.")
        self._init_scale = init_scale
        self._scale = None
        self._growth_tracker = None
        self._init_growth_tracker = 0
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def is_enabled(self):
        return self._enabled

    def _lazy_init(self, device):
        self._scale = full((), float(self._init_scale), dtype=dtypes.float32, device=device)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dtypes.int32,
                                    device=device)

    def _check_initialized(self, funcname):
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  This may indicate your "
                               "script did not use scaler.scale(loss or outputs) earlier in the "
                               "iteration.")

    def scale(self, outputs):
        """`outputs` (a tensor, or tensors nested in lists, tuples and iterables) times the
        scale."""
        if not self._enabled:
            return outputs
        if hasattr(outputs, "device"):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Unscale every gradient of `optimizer` in place; {device: found-inf flag tensor}."""
        grads = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype is dtypes.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grads[param.grad.device].append(param.grad)
        found = {}
        with no_grad():
            for device, device_grads in grads.items():
                found[device] = zeros((), dtype=dtypes.float32, device=device)
                dense = [g if g.is_contiguous() else g.contiguous() for g in device_grads]
                kernel("amp_unscale_", device.type)([d._data for d in dense], found[device]._data,
                                                    inv_scale.to(device)._data)
                for g, d in zip(device_grads, dense):
                    if d is g:
                        g._bump_version()
                    else:
                        g.copy_(d)
        return found

    def unscale_(self, optimizer):
        """Divide `optimizer`'s gradients by the scale, in place (once per step), recording
        whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_initialized("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = ew.reciprocal(self._scale.double()).float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """`optimizer.step(*args, **kwargs)` unless the unscaled gradients hold inf or NaN;
        returns what step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_initialized("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_in_optimizer(optimizer, state, args, kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _step_in_optimizer(self, optimizer, state, args, kwargs):
        """PyTorch's protocol for optimizers that handle the scale: `optimizer.grad_scale` (the
        scale, unless unscale_ already ran) and `optimizer.found_inf` (the flags summed on the
        scale's device) are set for its step and removed after; no host read."""
        if state["stage"] is OptState.READY:
            self._check_inf_per_device(optimizer)
        scale = self._scale
        found_inf = sum(f.to(scale.device) for f in state["found_inf_per_device"].values())
        optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                if state["stage"] is OptState.UNSCALED
                                else scale * getattr(optimizer, "grad_scale", 1))
        optimizer.found_inf = found_inf
        try:
            retval = optimizer.step(*args, **kwargs)
        finally:
            del optimizer.grad_scale
            del optimizer.found_inf
        state["stage"] = OptState.STEPPED
        return retval

    def _check_inf_per_device(self, optimizer):
        """Record which devices' gradients hold inf or NaN, leaving them scaled (the optimizer
        unscales them)."""
        self._check_initialized("_check_inf_per_device")
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(
            optimizer, full((), 1.0, dtype=dtypes.float32, device=self._scale.device), True)
        return state["found_inf_per_device"]

    def update(self, new_scale=None):
        """Back off the scale if any optimizer saw inf/NaN this step, grow it after
        `growth_interval` clean steps, or set `new_scale` (a float or a 0-d tensor)."""
        if not self._enabled:
            return
        self._check_initialized("update")
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, float):
                    self._scale.fill_(new_scale)
                else:
                    self._scale.copy_(new_scale)
            else:
                found = [f for state in self._per_optimizer_states.values()
                         for f in state["found_inf_per_device"].values()]
                if not found:
                    raise RuntimeError("No inf checks were recorded prior to update.")
                total = found[0]
                for f in found[1:]:
                    total = total + f.to(total.device)
                self._update_scale(total)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _update_scale(self, found_inf):
        """The scale and growth tracker advanced on the device, without a host read."""
        scale, tracker = self._scale, self._growth_tracker
        inf = found_inf > 0
        successful = tracker + 1
        grown = scale * self._growth_factor
        grow = ew.logical_and(ew.logical_not(inf), successful == self._growth_interval)
        scale.copy_(ew.where(inf, scale * self._backoff_factor,
                             ew.where(ew.logical_and(grow, ew.isfinite(grown)), grown, scale)))
        tracker.copy_(ew.where(ew.logical_or(inf, grow), 0, successful).to(dtypes.int32))

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def state_dict(self):
        """The scale and its schedule, as PyTorch's keys (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._scale is not None:
            self._scale.fill_(float(self._init_scale))
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)
