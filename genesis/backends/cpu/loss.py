"""Fused cross-entropy kernels on numpy ("cross_entropy_fwd", "cross_entropy_bwd").

Logits are (N, C), targets (N,) class indices. Half types compute in float32 and round once;
the saved per-row logsumexp and the mean's divisor stay in that compute dtype.
"""

import numpy as np

from ...dispatch import register


def _compute_dtype(dtype):
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _row_weights(target, weight, ignore_index, ct):
    """(valid rows, targets with ignored rows at 0, each row's weight: weight[t] or 1, 0 where
    ignored)."""
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if weight is None:
        return valid, safe, valid.astype(ct)
    return valid, safe, np.where(valid, weight.astype(ct)[safe], 0)


@register("cross_entropy_fwd", "cpu")
def cross_entropy_fwd(x, target, weight, ignore_index, reduction, loss_dtype=None):
    """(loss, lse, total): per-row loss (lse - x[n, t]) * weight[t], 0 where t == ignore_index,
    reduced by `reduction`, in `loss_dtype` (default x's: autocast asks float32 of half
    logits); each row's logsumexp; the mean's divisor (None unless "mean")."""
    ct = _compute_dtype(x.dtype)
    out = x.dtype if loss_dtype is None else np.dtype(loss_dtype)
    xf = x.astype(ct, copy=False)
    with np.errstate(all="ignore"):
        m = np.max(xf, axis=1, keepdims=True, initial=-np.inf)
        lse = (m + np.log(np.sum(np.exp(xf - m), axis=1, keepdims=True)))[:, 0]
        valid, safe, w = _row_weights(target, weight, ignore_index, ct)
        picked = np.take_along_axis(xf, safe[:, None], 1)[:, 0]
        rows = np.where(valid, (lse - picked) * w, 0).astype(ct)
        if reduction == "none":
            return rows.astype(out), lse, None
        loss = np.sum(rows, dtype=ct)
        if reduction == "sum":
            return np.asarray(loss).astype(out), lse, None
        total = np.sum(w, dtype=ct)
        return np.asarray(loss / total).astype(out), lse, np.asarray(total)


@register("cross_entropy_bwd", "cpu")
def cross_entropy_bwd(grad, x, target, weight, lse, total, ignore_index, reduction):
    """d loss / d x: (softmax(x) - onehot(t)) * grad * weight[t] (/ total for "mean"), rows
    with t == ignore_index zero."""
    ct = _compute_dtype(x.dtype)
    with np.errstate(all="ignore"):
        valid, safe, w = _row_weights(target, weight, ignore_index, ct)
        g = grad.astype(ct)
        scale = w * (g / total if reduction == "mean" else g)
        p = np.exp(x.astype(ct) - lse[:, None])
        p[np.arange(p.shape[0]), safe] -= 1
        return np.where(valid[:, None], p * scale[:, None], 0).astype(x.dtype)
