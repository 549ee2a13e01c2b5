"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay.

Two implementations of the step: a loop of in-place genesis ops per parameter, and the fused
"sgd_step" kernel, which updates every parameter of a group (per device and first step) in one
pass; which one runs follows the same rule as Adam's (optimizer.takes_fused). With `fused=True`
GradScaler hands the kernel its scale and inf flag (_step_supports_amp_scaling), so a scaled
step reads nothing on the host.
"""

from ..ops.creation import empty_like, zeros_like
from .optimizer import Optimizer, amp_inputs, check_fused_options, check_non_negative, takes_fused


class SGD(Optimizer):
    """PyTorch's SGD: buf = momentum * buf + (1 - dampening) * g; p -= lr * (g + momentum * buf
    with Nesterov, else buf). The first step's buffer is the gradient itself."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_fused_options(fused, foreach, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            self._step_supports_amp_scaling = True

    def _update(self, group):
        if takes_fused(group):
            self._fused_update(group)
            return
        self._loop_update(group)

    def _loop_update(self, group):
        """In-place ops per parameter. First-step buffers are stored once the loop is done, as
        PyTorch's are: a parameter listed twice starts a buffer at each, and keeps the last."""
        lr, momentum, weight_decay = group["lr"], group["momentum"], group["weight_decay"]
        started = []
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = -p.grad if group["maximize"] else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            if momentum != 0:
                buf = self.state[p].get("momentum_buffer")
                if buf is None:
                    buf = grad.detach().clone()
                    started.append((p, buf))
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
                grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
            p.add_(grad, alpha=-lr)
        for p, buf in started:
            self.state[p]["momentum_buffer"] = buf

    def _fused_update(self, group):
        """Every parameter with a gradient through the fused kernel, one call per (device,
        first step): a parameter's first step writes its momentum buffer without reading it
        (under GradScaler the buffer starts at zero: a skipped first step leaves it unwritten)."""
        scaled = getattr(self, "found_inf", None) is not None

        def first_step(p, state):
            first = group["momentum"] != 0 and "momentum_buffer" not in state
            if first:
                state["momentum_buffer"] = zeros_like(p) if scaled else empty_like(p)
            return first

        keys = ["momentum_buffer" if group["momentum"] != 0 else None]
        for (device, first), params in self._fused_batches(group, first_step).items():
            grad_scale, found_inf = amp_inputs(self, device)
            self._fused_step("sgd_step", device, params, keys, float(group["lr"]),
                             group["momentum"], group["dampening"], group["weight_decay"],
                             group["nesterov"], group["maximize"], first, grad_scale=grad_scale,
                             found_inf=found_inf)
