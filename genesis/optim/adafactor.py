"""Adafactor: Adam-like steps from a factored second moment (Shazeer and Stern, 2018).

A matrix gradient keeps only the row and column means of its square (memory O(rows + cols));
a vector keeps the full running mean. The step is a loop of genesis ops per parameter: its
factored estimate takes reductions and an outer product per parameter, so it has no fused
multi-tensor kernel.
"""

from ..ops.creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, advance_step, new_step

_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


class Adafactor(Optimizer):
    """PyTorch's Adafactor: beta2_t = 1 - t^beta2_decay; the variance estimate is
    row_var @ col_var / mean(row_var) for matrices; p -= max(eps2, rms(p)) min(lr, 1/sqrt(t)) *
    u / max(1, rms(u) / d), u = g / sqrt(max(var, eps1^2))."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step()
        if p.dim() > 1:
            state["row_var"] = p.new_zeros(p.shape[:-1] + (1,))
            state["col_var"] = p.new_zeros(p.shape[:-2] + (1, p.shape[-1]))
        else:
            state["variance"] = zeros_like(p)

    def _update(self, group):
        lr = float(group["lr"])
        eps1, eps2 = group["eps"]
        for p, grad, state in self._with_grads(group):
            step = advance_step(state["step"])
            one_minus_beta2 = step ** group["beta2_decay"]
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * min(lr, 1 / step ** 0.5)
            if group["weight_decay"] != 0:
                p.mul_(1 - lr * group["weight_decay"])
            eps1 = _EPS[p.dtype.name] if eps1 is None else eps1
            var = _variance_estimate(grad, state, one_minus_beta2, eps1)
            update = var.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
            p.add_(update, alpha=-alpha / denom)


def _variance_estimate(grad, state, one_minus_beta2, eps1):
    """Update the running second moment (factored for matrices) and return the estimate of
    E[g^2] for the whole gradient (a new tensor)."""
    if grad.dim() <= 1:
        state["variance"].lerp_(grad * grad, one_minus_beta2)
        return state["variance"].clone()
    row_var, col_var = state["row_var"], state["col_var"]
    row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]),
                  one_minus_beta2)
    col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]),
                  one_minus_beta2)
    return (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
