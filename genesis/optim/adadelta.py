"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients (Zeiler, 2012).

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"adadelta_step" kernel, one call per device; the fused one runs under optimizer.takes_fused
(PyTorch's Adadelta has no `fused` option). A `capturable` group keeps its
counters on the device (advanced by one launch per device) and takes the fused kernel where it
would otherwise, the loop with a Tensor lr; either reads nothing on the host.
"""

from ..ops.creation import zeros_like
from .optimizer import (Optimizer, addcdiv_scaled_, advance, check_lr, check_non_negative,
                        lr_on_device, new_step, step_lr, takes_fused)


class Adadelta(Optimizer):
    """PyTorch's Adadelta: v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p -= lr delta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["square_avg"] = zeros_like(p)
        state["acc_delta"] = zeros_like(p)

    def _update(self, group):
        if takes_fused(group) and not lr_on_device(group):
            self._fused_update(group)
            return
        rho, eps = group["rho"], group["eps"]
        for p, grad, state in self._with_grads(group):
            advance(state, group)
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            addcdiv_scaled_(p, delta, None, -step_lr(group, p.device))

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per device."""
        for (device, _), params in self._counted_batches(group).items():
            self._fused_step("adadelta_step", device, params, ["square_avg", "acc_delta"],
                             float(group["lr"]), group["rho"], group["eps"],
                             group["weight_decay"], group["maximize"])
