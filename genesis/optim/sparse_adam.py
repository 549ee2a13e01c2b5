"""SparseAdam: Adam that updates only the entries a gradient has.

PyTorch's SparseAdam takes sparse gradients (from `nn.Embedding(sparse=True)`) and rejects
dense ones. Genesis has no sparse tensors, so its SparseAdam reads a dense gradient as the
sparse one holding its nonzero entries (what `grad.to_sparse()` gives in PyTorch): moments and
parameters change only where the gradient is nonzero, and an all-zero gradient changes nothing.
"""

from ..ops.creation import zeros_like
from ..ops.elementwise import where
from ..tensor import Tensor
from .optimizer import Optimizer, check_betas


class SparseAdam(Optimizer):
    """PyTorch's SparseAdam (masked Adam): on the gradient's entries, m += (1 - beta1)(g - m),
    v += (1 - beta2)(g^2 - v), p -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) +
    eps). Its `step` state is a Python int, as PyTorch's."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = 0
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)

    def _update(self, group):
        beta1, beta2 = group["betas"]
        for p, grad, state in self._with_grads(group):
            state["step"] = step = int(state["step"]) + 1
            mask = grad != 0
            if not bool(mask.any()):
                continue
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            avg_update = grad.sub(exp_avg).mul_(1 - beta1)
            sq_update = grad.pow(2).sub_(exp_avg_sq).mul_(1 - beta2)
            numer = where(mask, avg_update, 0.0).add_(exp_avg)
            denom = where(mask, sq_update, 0.0).add_(exp_avg_sq).sqrt_().add_(group["eps"])
            exp_avg.copy_(where(mask, numer, exp_avg))
            exp_avg_sq.copy_(where(mask, sq_update.add_(exp_avg_sq), exp_avg_sq))
            step_size = float(group["lr"]) * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
            p.add_(where(mask, numer.div_(denom).mul_(-step_size), 0.0))
