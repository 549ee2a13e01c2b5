"""Negative log-likelihood losses of Poisson and Gaussian models, as torch.nn.functional's."""

import math

from ...autograd.grad_mode import no_grad
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from ...ops.creation import full_like
from ._utils import check_reduction, legacy_reduction, reduce_loss


def _stirling(target):
    """log(target!) by Stirling's approximation, for targets above 1 (0 elsewhere)."""
    safe = ew.where(target > 1, target, 1)
    approx = safe * ew.log(safe) - safe + 0.5 * ew.log(2 * math.pi * safe)
    return ew.where(target > 1, approx, 0)


@autocast_policy("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - y x for log-rate inputs, else x - y log(x + eps); `full` adds log(y!)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "poisson_nll_loss")
    if log_input:
        loss = ew.exp(input) - target * input
    else:
        loss = input - target * ew.log(input + eps)
    if full:
        loss = loss + _stirling(target)
    return reduce_loss(loss, reduction)


def _homoscedastic_var(input, var):
    """`var` shaped to broadcast against `input`: equal, one dim short, or with one size-1 dim."""
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    if input.ndim == var.ndim and sum(
            v for i, v in zip(input.shape, var.shape) if i != v) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (x - y)^2 / var), var clamped to at least eps (the gradient passing as
    if unclamped, as torch); `full` adds 0.5 log(2 pi)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    elif var.numel() and bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = _homoscedastic_var(input, var)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with no_grad():
        shift = ew.clamp_min(var, eps) - var
    var = var + shift
    diff = input - target
    loss = 0.5 * (ew.log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)
