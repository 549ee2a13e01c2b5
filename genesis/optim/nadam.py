"""NAdam: Adam with Nesterov momentum and a momentum schedule (Dozat, 2016).

Two implementations of the step, as Adam's: a loop of in-place genesis ops per parameter, and
the fused "nadam_step" kernel, one call per (device, step count, mu product); the fused one runs
under optimizer.takes_fused (PyTorch's NAdam has no `fused` option). A `capturable` group keeps
its counters and mu products on the device and takes PyTorch's capturable loop: the step's
coefficients are 0-d tensors there, nothing is read on the host.
"""

from ..ops.creation import zeros_like
from .adam import decay_and_update_moments
from .optimizer import (Optimizer, advance_step, check_betas, check_lr, check_non_negative,
                        new_step, set_host_scalar, state_scalar, step_lr, takes_fused)


class NAdam(Optimizer):
    """PyTorch's NAdam: mu_t = beta1 (1 - 0.5 * 0.96^(t momentum_decay)); p -= lr (1 - mu_t) /
    (1 - prod mu) g / d + lr mu_{t+1} / (1 - prod mu * mu_{t+1}) m / d, d = sqrt(v / (1 -
    beta2^t)) + eps. `decoupled_weight_decay=True` decays the parameter as AdamW does."""

    _capturable_tensors = "params, mu_products and state_steps"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_non_negative(eps=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["mu_product"] = state_scalar(1.0, p, group)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)

    def _advance(self, group, state):
        """Advance the step and the mu product; return the step's scalars: (1 - beta2^t,
        the coefficient of g / d, the coefficient of m / d)."""
        lr, beta1, beta2 = float(group["lr"]), *group["betas"]
        step = advance_step(state["step"])
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        mu_product = set_host_scalar(state["mu_product"], state["mu_product"]._data[()] * mu)
        return (1 - beta2 ** step, -lr * (1.0 - mu) / (1.0 - mu_product),
                -lr * mu_next / (1.0 - mu_product * mu_next))

    def _update(self, group):
        if group["capturable"]:
            self._capturable_update(group)
            return
        if takes_fused(group):
            self._fused_update(group)
            return
        for p, grad, state in self._with_grads(group):
            bias_correction2, grad_coef, avg_coef = self._advance(group, state)
            grad = decay_and_update_moments(p, grad, state, group, float(group["lr"]))
            denom = state["exp_avg_sq"].div(bias_correction2).sqrt().add_(group["eps"])
            p.addcdiv_(grad, denom, value=grad_coef)
            p.addcdiv_(state["exp_avg"], denom, value=avg_coef)

    def _capturable_update(self, group):
        """PyTorch's capturable loop: counters, mu products and coefficients on the device."""
        beta1, beta2 = group["betas"]
        decay = group["momentum_decay"]
        for p, grad, state in self._with_grads(group):
            lr = step_lr(group, p.device)
            step = state["step"].add_(1)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
            mu_product = state["mu_product"].mul_(mu)
            grad = decay_and_update_moments(p, grad, state, group, lr)
            denom = state["exp_avg_sq"].div(1 - beta2 ** step).sqrt().add_(group["eps"])
            p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
            p.addcdiv_(state["exp_avg"] * (-lr * mu_next / (1.0 - mu_product * mu_next)), denom)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        step scalars)."""
        def scalars(p, state):
            if not state:
                self._init_state(p, group)
            return self._advance(group, state)

        beta1, beta2 = group["betas"]
        for (device, coefs), params in self._fused_batches(group, scalars).items():
            self._fused_step("nadam_step", device, params, ["exp_avg", "exp_avg_sq"],
                             float(group["lr"]), beta1, beta2, group["eps"],
                             group["weight_decay"], group["decoupled_weight_decay"],
                             group["maximize"], *coefs)
