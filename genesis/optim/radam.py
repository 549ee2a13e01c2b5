"""RAdam: Adam with the variance of its adaptive learning rate rectified (Liu et al., 2019).

Two implementations of the step, as Adam's: a loop of in-place genesis ops per parameter, and
the fused "radam_step" kernel, one call per (device, step count); the fused one runs under
optimizer.takes_fused (PyTorch's RAdam has no `fused` option). A `capturable` group keeps its
counters on the device, advanced by one launch, and takes the fused kernel where it would
otherwise (computing the step's scalars from the counters) or PyTorch's capturable loop (the
rectification chosen there by `where`); neither reads anything on the host.
"""

from ..ops.creation import zeros_like
from ..ops.elementwise import where
from .adam import decay_and_update_moments
from .optimizer import (Optimizer, advance_step, check_betas, check_lr, check_non_negative,
                        new_step, step_lr, takes_fused)


def rectification(beta2, step):
    """(1 - beta2^t, the rectification term, or None while the SMA length rho_t is at most 5
    and the step is plain momentum SGD)."""
    bias_correction2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
    if rho_t <= 5.0:
        return bias_correction2, None
    return bias_correction2, ((rho_t - 4) * (rho_t - 2) * rho_inf
                              / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


class RAdam(Optimizer):
    """PyTorch's RAdam: Adam's moments; p -= lr m / (1 - beta1^t) * sqrt(1 - beta2^t) /
    (sqrt(v) + eps) * r_t once rho_t > 5, else p -= lr m / (1 - beta1^t).
    `decoupled_weight_decay=True` decays the parameter as AdamW does."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_lr(lr)
        check_non_negative(eps=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)

    def _update(self, group):
        if group["capturable"]:
            if takes_fused(group):
                self._device_counter_update(group)
            else:
                self._capturable_update(group)
            return
        if takes_fused(group):
            self._fused_update(group)
            return
        lr = float(group["lr"])
        beta1, beta2 = group["betas"]
        for p, grad, state in self._with_grads(group):
            step = advance_step(state["step"])
            decay_and_update_moments(p, grad, state, group, lr)
            exp_avg_sq = state["exp_avg_sq"]
            bias_corrected = state["exp_avg"] / (1 - beta1 ** step)
            bias_correction2, rect = rectification(beta2, step)
            if rect is None:
                p.add_(bias_corrected * lr, alpha=-1.0)
                continue
            adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(group["eps"])
            p.add_(bias_corrected * lr * adaptive * rect, alpha=-1.0)

    def _capturable_update(self, group):
        """PyTorch's capturable loop: the counter and the step's scalars on the device, the
        rectified or plain update chosen per element by `where`."""
        beta1, beta2 = group["betas"]
        rho_inf = 2 / (1 - beta2) - 1
        for p, grad, state in self._with_grads(group):
            lr = step_lr(group, p.device)
            step = state["step"].add_(1)
            decay_and_update_moments(p, grad, state, group, lr)
            bias_correction2 = 1 - beta2 ** step
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = bias_correction2 ** 0.5 / state["exp_avg_sq"].sqrt().add_(group["eps"])
            update = where(rho_t > 5.0, rect * adaptive, 1.0)
            p.add_(state["exp_avg"] / (1 - beta1 ** step) * lr * update, alpha=-1.0)

    def _device_counter_update(self, group):
        """The fused kernel per device, its per-step scalars computed from the counters."""
        beta1, beta2 = group["betas"]
        for device, params, steps, lr in self._device_counter_batches(group):
            self._fused_step("radam_step", device, params, ["exp_avg", "exp_avg_sq"], lr, beta1,
                             beta2, group["eps"], group["weight_decay"],
                             group["decoupled_weight_decay"], group["maximize"], None, None,
                             None, steps=steps)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        step count)."""
        beta1, beta2 = group["betas"]
        for (device, step), params in self._fused_batches(group, self._stepping(group)).items():
            bias_correction2, rect = rectification(beta2, step)
            self._fused_step("radam_step", device, params, ["exp_avg", "exp_avg_sq"],
                             float(group["lr"]), beta1, beta2, group["eps"],
                             group["weight_decay"], group["decoupled_weight_decay"],
                             group["maximize"], 1 - beta1 ** step, bias_correction2, rect)
