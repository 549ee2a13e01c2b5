"""RMSprop, optionally centered and with momentum.

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"rmsprop_step" kernel, one call per device for the whole group; the fused one runs by default
when every parameter is on CUDA (optimizer.takes_fused; PyTorch has no fused RMSprop, so there
is no `fused` option: `foreach=False` keeps the loop). A `capturable` group keeps its counters
on the device (advanced by one launch per device) and takes the fused kernel where it would
otherwise, the loop with a Tensor lr; either reads nothing on the host.
"""

from ..ops.creation import zeros_like
from .optimizer import (Optimizer, addcdiv_scaled_, advance, check_non_negative, lr_on_device,
                        new_step, step_lr, takes_fused)


class RMSprop(Optimizer):
    """PyTorch's RMSprop: v = alpha v + (1 - alpha) g^2; p -= lr g / (sqrt(v - mean(g)^2 if
    centered) + eps), through a momentum buffer when momentum > 0."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["square_avg"] = zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)

    def _update(self, group):
        if takes_fused(group) and not lr_on_device(group):
            self._fused_update(group)
            return
        alpha, momentum = group["alpha"], group["momentum"]
        for p, grad, state in self._with_grads(group):
            advance(state, group)
            lr = step_lr(group, p.device)
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(group["eps"])
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                addcdiv_scaled_(p, buf, None, -lr)
            else:
                addcdiv_scaled_(p, grad, avg, -lr)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per device."""
        keys = ["square_avg", "grad_avg" if group["centered"] else None,
                "momentum_buffer" if group["momentum"] > 0 else None]
        for (device, _), params in self._counted_batches(group).items():
            self._fused_step("rmsprop_step", device, params, keys, float(group["lr"]),
                             group["alpha"], group["eps"], group["weight_decay"],
                             group["momentum"], group["maximize"])
