"""Adagrad: per-coordinate learning rates from the running sum of squared gradients.

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"adagrad_step" kernel, one call per (device, step count) for the whole group; which one runs
follows the same rule as Adam's (optimizer.takes_fused).
"""

from ..ops.creation import full_like
from .optimizer import (Optimizer, advance_step, check_fused_options, check_non_negative,
                        new_step, takes_fused)


class Adagrad(Optimizer):
    """PyTorch's Adagrad: s += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps).
    Its state is created with the optimizer, as in PyTorch."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        check_fused_options(fused, foreach, differentiable)
        super().__init__(params, defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        for p in param_group["params"]:
            self._init_state(p, param_group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step()
        state["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update(self, group):
        if takes_fused(group):
            self._fused_update(group)
            return
        for p, grad, state in self._with_grads(group):
            step = advance_step(state["step"])
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
            state["sum"].addcmul_(grad, grad, value=1)
            std = state["sum"].sqrt().add_(group["eps"])
            p.addcdiv_(grad, std, value=-clr)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        step count): the step count sets the decayed learning rate."""
        def step_count(p, state):
            return advance_step(state["step"])

        for (device, step), params in self._fused_batches(group, step_count).items():
            self._fused_step("adagrad_step", device, params, ["sum"],
                             group["lr"] / (1 + (step - 1) * group["lr_decay"]), group["eps"],
                             group["weight_decay"], group["maximize"])
