"""ASGD: SGD with Polyak-Ruppert averaging of the iterates (Polyak and Juditsky, 1992).

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"asgd_step" kernel, one call per (device, eta, mu); the fused one runs under
optimizer.takes_fused (PyTorch's ASGD has no `fused` option). A `capturable` group keeps its
counters, eta and mu on the device and takes PyTorch's capturable loop, reading nothing on the
host.
"""

from ..ops.creation import ones_like, zeros_like
from ..ops.elementwise import maximum
from ..tensor import Tensor
from .optimizer import (Optimizer, advance_step, check_lr, check_non_negative, new_step,
                        set_host_scalar, state_scalar, step_dtype, step_lr, takes_fused)


class ASGD(Optimizer):
    """PyTorch's ASGD: p = p (1 - lambd eta) - eta g; ax += mu (p - ax) (ax = p while mu is
    1); then eta = lr / (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0). The state keeps
    eta and mu as 0-d tensors, as PyTorch's does."""

    _capturable_tensors = "params, mus, etas, and state_steps"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        lr = group["lr"]
        if isinstance(lr, Tensor) and group["capturable"]:
            state["eta"] = lr.detach().to(device=p.device, dtype=step_dtype(), copy=True)
        else:
            state["eta"] = state_scalar(float(lr), p, group)
        state["mu"] = state_scalar(1.0, p, group)
        state["ax"] = zeros_like(p)

    def _advance(self, group, state):
        """Advance the step and return this step's (eta, mu); the state takes the next ones."""
        lr, lambd = float(group["lr"]), group["lambd"]
        eta, mu = float(state["eta"]._data[()]), float(state["mu"]._data[()])
        step = advance_step(state["step"])
        set_host_scalar(state["eta"], lr / ((1 + lambd * lr * step) ** group["alpha"]))
        set_host_scalar(state["mu"], 1 / max(1, step - group["t0"]))
        return eta, mu

    def _update(self, group):
        if group["capturable"]:
            self._capturable_update(group)
            return
        if takes_fused(group):
            self._fused_update(group)
            return
        for p, grad, state in self._with_grads(group):
            eta, mu = self._advance(group, state)
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            p.mul_(1 - group["lambd"] * eta)
            p.add_(grad, alpha=-eta)
            ax = state["ax"]
            if mu != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)

    def _capturable_update(self, group):
        """PyTorch's capturable loop: the counter, eta and mu advance on the device."""
        lambd, t0 = group["lambd"], group["t0"]
        for p, grad, state in self._with_grads(group):
            lr = step_lr(group, p.device)
            step, eta, mu = state["step"].add_(1), state["eta"], state["mu"]
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            p.mul_(1 - lambd * eta)
            p.addcmul_(grad, eta, value=-1)
            state["ax"].add_(p.sub(state["ax"]).mul_(mu))
            eta.copy_(lr / ((1 + lambd * lr * step) ** group["alpha"]))
            mu.copy_(1 / maximum(step - t0, ones_like(step)))

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        eta, mu)."""
        def scalars(p, state):
            if not state:
                self._init_state(p, group)
            return self._advance(group, state)

        for (device, (eta, mu)), params in self._fused_batches(group, scalars).items():
            self._fused_step("asgd_step", device, params, ["ax"], eta, mu, group["lambd"],
                             group["weight_decay"], group["maximize"])
