"""Adamax: Adam with the infinity norm in place of the second moment (Kingma and Ba, 2014).

Two implementations of the step, as Adam's: a loop of in-place genesis ops per parameter, and
the fused "adamax_step" kernel, one call per (device, step count); the fused one runs under
optimizer.takes_fused (PyTorch's Adamax has no `fused` option). A `capturable` group keeps its
counters on the device, advanced by one launch, and takes the fused kernel where it would
otherwise (computing -lr / (1 - beta1^t) from the counters) or PyTorch's capturable loop;
neither reads anything on the host.
"""

from ..ops.creation import zeros_like
from ..ops.elementwise import maximum
from .optimizer import (Optimizer, advance, check_betas, check_lr, check_non_negative,
                        new_step, step_lr, takes_fused)


class Adamax(Optimizer):
    """PyTorch's Adamax: m = lerp(m, g, 1 - beta1); u = max(beta2 u, |g| + eps); p -= lr /
    (1 - beta1^t) * m / u."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_non_negative(eps=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["exp_avg"] = zeros_like(p)
        state["exp_inf"] = zeros_like(p)

    def _update(self, group):
        if takes_fused(group):
            self._fused_update(group)
            return
        beta1, beta2 = group["betas"]
        for p, grad, state in self._with_grads(group):
            step = advance(state, group)
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(group["eps"])))
            if group["capturable"]:
                p.addcdiv_(exp_avg, exp_inf * ((beta1 ** step - 1) / step_lr(group, p.device)))
            else:
                p.addcdiv_(exp_avg, exp_inf, value=-float(group["lr"]) / (1 - beta1 ** step))

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        step count), or for a capturable group per device with the counters on it."""
        beta1, beta2 = group["betas"]
        keys = ["exp_avg", "exp_inf"]
        hyperparameters = (beta1, beta2, group["eps"], group["weight_decay"], group["maximize"])
        if group["capturable"]:
            for device, params, steps, lr in self._device_counter_batches(group):
                self._fused_step("adamax_step", device, params, keys, *hyperparameters, None,
                                 steps=steps, lr=lr)
            return
        for (device, step), params in self._fused_batches(group, self._stepping(group)).items():
            self._fused_step("adamax_step", device, params, keys, *hyperparameters,
                             -float(group["lr"]) / (1 - beta1 ** step))
