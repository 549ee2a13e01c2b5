"""Muon: momentum SGD whose step is the orthogonalized momentum of each 2-D parameter
(Jordan et al., 2024), as PyTorch's `torch.optim.Muon`.

The orthogonalization is PyTorch's quintic Newton-Schulz iteration, in bfloat16 as there; a
step is a few matrix products per parameter, so it is a loop (no fused multi-tensor kernel).
"""

import math

from ..ops.linalg import addmm
from ..tensor import Tensor
from .optimizer import Optimizer

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximate orthogonalization U S' V^T of `grad` (S' near 1), in bfloat16: the matrix
    normalized by its Frobenius norm, then `ns_steps` quintic iterations X = a X + (b A + c A^2)
    X with A = X X^T, taken on the wide orientation."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def adjust_lr(lr, adjust_lr_fn, shape):
    """The lr scaled for a matrix of `shape`: sqrt(max(1, rows / cols)) ("original", the
    default) or 0.2 sqrt(max(rows, cols)) ("match_rms_adamw")."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """PyTorch's Muon: B = lerp(B, g, 1 - momentum); O = NS(lerp(g, B, momentum) if nesterov
    else B); p *= 1 - lr weight_decay; p -= adjust_lr(lr) O. Only 2-D parameters."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {tuple(p.shape)}")

    def _update(self, group):
        lr, momentum = float(group["lr"]), group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = p.grad
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = grad.new_zeros(grad.shape)
            buf = state["momentum_buffer"]
            buf.lerp_(grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                group["ns_steps"], group["eps"])
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update, alpha=-adjust_lr(lr, group["adjust_lr_fn"], p.shape))
