"""Rprop: per-coordinate step sizes grown while the gradient keeps its sign and shrunk when it
flips (Riedmiller and Braun, 1993).

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"rprop_step" kernel, one call per device; the fused one runs under optimizer.takes_fused
(PyTorch's Rprop has no `fused` option). A `capturable` group keeps its
counters on the device (advanced by one launch per device) and takes the fused kernel where it
would otherwise (the step reads no learning rate), reading nothing on the host.
"""

from ..ops.creation import full_like, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, advance, check_lr, new_step, takes_fused


class Rprop(Optimizer):
    """PyTorch's Rprop: s = clamp(s * (etaplus if g prev > 0, etaminus if < 0, else 1),
    step_sizes); the gradient is zeroed where its sign flipped (g prev < 0); p -= sign(g) s;
    prev = g."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step(p, group)
        state["prev"] = zeros_like(p)
        lr = group["lr"]
        if isinstance(lr, Tensor):
            state["step_size"] = zeros_like(p).add_(lr.to(p.device))
        else:
            state["step_size"] = full_like(p, float(lr))

    def _update(self, group):
        if takes_fused(group):
            self._fused_update(group)
            return
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p, grad, state in self._with_grads(group):
            advance(state, group)
            sign = grad.mul(state["prev"]).sign()
            flipped = sign < 0
            factor = (sign.masked_fill(sign > 0, etaplus).masked_fill_(flipped, etaminus)
                      .masked_fill_(sign == 0, 1.0))
            step_size = state["step_size"]
            step_size.mul_(factor).clamp_(step_size_min, step_size_max)
            grad = grad.masked_fill(flipped, 0.0)
            p.addcmul_(grad.sign(), step_size, value=-1)
            state["prev"].copy_(grad)

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per device."""
        for (device, _), params in self._counted_batches(group).items():
            self._fused_step("rprop_step", device, params, ["prev", "step_size"],
                             *group["etas"], *group["step_sizes"], group["maximize"])
