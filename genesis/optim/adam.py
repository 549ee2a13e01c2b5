"""Adam and AdamW (decoupled weight decay), with AMSGrad; one implementation for both.

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"adam_step" kernel, which updates every parameter of a group (per device, dtype and step count)
in one pass: one launch on CUDA instead of about eight per parameter.

`capturable=True` keeps the step counters on the parameters' device: the counters advance
there ("advance_steps") and the kernel computes the bias corrections from them, so a step reads
nothing on the host and a CUDA graph can replay it. GradScaler's scale and inf flag go to the
kernel (its _step_supports_amp_scaling protocol, set with `fused` or `capturable`).
"""

from ..ops.creation import zeros_like
from ..ops.elementwise import maximum
from ..tensor import Tensor
from .optimizer import (Optimizer, advance_step, amp_inputs, check_betas, check_fused_options,
                        check_non_negative, new_step, takes_fused)


class Adam(Optimizer):
    """PyTorch's Adam: bias-corrected moments, p -= lr / (1 - b1^t) * m / (sqrt(v) /
    sqrt(1 - b2^t) + eps). `decoupled_weight_decay=True` is AdamW.

    `fused=True` runs the fused kernel on every device (CPU and CUDA). When neither `fused` nor
    `foreach` is given, a group whose parameters are all on CUDA takes the fused kernel too
    (PyTorch takes its foreach implementation there): one launch per step instead of several per
    parameter. `foreach=True` on CUDA also means the fused kernel; `foreach=False`, or any group
    with a CPU parameter unless `fused=True`, runs the per-parameter loop. A `capturable` group
    always takes the fused kernel, with its counters on the device.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        for label, value in (("lr", lr), ("betas[0]", betas[0]), ("betas[1]", betas[1])):
            _check_tensor_hyperparameter(label, value, foreach, capturable)
        check_non_negative(lr=lr, eps=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2])
                or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        check_fused_options(fused, foreach, differentiable)
        defaults = dict(lr=lr, betas=tuple(float(b) for b in betas), eps=eps,
                        weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        if fused or capturable:
            self._step_supports_amp_scaling = True

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(p)

    def _update(self, group):
        if group["capturable"]:
            self._capturable_update(group)
            return
        if takes_fused(group):
            self._fused_update(group)
            return
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        for p, grad, state in self._with_grads(group):
            step = advance_step(state["step"])
            decay_and_update_moments(p, grad, state, group, float(lr))
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if group["amsgrad"]:
                second = state["max_exp_avg_sq"].copy_(maximum(state["max_exp_avg_sq"],
                                                               exp_avg_sq))
            else:
                second = exp_avg_sq
            denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        step count); the gradients are negated inside it under `maximize`. GradScaler's inf
        flag is read on the host here (the counters are on the host): a step with inf/NaN
        gradients is skipped whole."""
        found_inf = getattr(self, "found_inf", None)
        if found_inf is not None and found_inf.item():
            return

        def step_count(p, state):
            if not state:
                self._init_state(p, group)
            return advance_step(state["step"])

        beta1, beta2 = group["betas"]
        for (device, step), params in self._fused_batches(group, step_count).items():
            self._fused_call(group, device, params, float(group["lr"]), 1 - beta1 ** step,
                             (1 - beta2 ** step) ** 0.5, grad_scale=amp_inputs(self, device)[0])

    def _capturable_update(self, group):
        """Every parameter with a gradient through the fused kernel with its step counter on
        the device: per device, one launch advancing the counters and one updating; nothing is
        read on the host (a nonzero inf flag from GradScaler makes both no-ops)."""
        for device, params, steps, lr in self._device_counter_batches(group):
            grad_scale, found_inf = amp_inputs(self, device)
            self._fused_call(group, device, params, lr, None, None, steps=steps,
                             grad_scale=grad_scale, found_inf=found_inf)

    def _fused_call(self, group, device, params, lr, bias_correction1, bias_correction2_sqrt,
                    **arrays):
        """One "adam_step" kernel call for `params` (one device; one step count unless the
        counters travel in `arrays`)."""
        beta1, beta2 = group["betas"]
        keys = ["exp_avg", "exp_avg_sq", "max_exp_avg_sq" if group["amsgrad"] else None]
        self._fused_step("adam_step", device, params, keys, lr, beta1, beta2, group["eps"],
                         group["weight_decay"], group["decoupled_weight_decay"],
                         group["maximize"], bias_correction1, bias_correction2_sqrt, **arrays)


def decay_and_update_moments(p, grad, state, group, lr):
    """Adam's weight decay (decoupled: p *= 1 - lr * weight_decay; else added to the gradient)
    and its moment updates m = lerp(m, g, 1 - beta1), v = beta2 v + (1 - beta2) g^2, in place
    (shared by Adam, NAdam and RAdam); returns the gradient the moments took. `lr` is a float,
    or a 0-d tensor on p's device (capturable)."""
    weight_decay = group["weight_decay"]
    beta1, beta2 = group["betas"]
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(p, alpha=weight_decay)
    state["exp_avg"].lerp_(grad, 1 - beta1)
    state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return grad


def _check_tensor_hyperparameter(label, value, foreach, capturable):
    """PyTorch's rules for a hyperparameter given as a Tensor: one element, and not with
    foreach=True unless capturable."""
    if not isinstance(value, Tensor):
        return
    if foreach and not capturable:
        raise ValueError(f"{label} as a Tensor is not supported for capturable=False and "
                         "foreach=True")
    if value.numel() != 1:
        raise ValueError(f"Tensor {label} must be 1-element")


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the update); `fused`
    and `foreach` as Adam's."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
