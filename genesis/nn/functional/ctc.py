"""Connectionist temporal classification loss (Graves et al. 2006), as torch's F.ctc_loss.

The forward variables alpha run over the extended label sequence l' = (blank, l1, blank, l2,
..., blank) in log space, one step per time frame for the whole batch, built from genesis ops so
that autograd gives the gradient. PyTorch's gradient treats `log_probs` as the output of a
log_softmax: it is the gradient with respect to the logits, exp(log_probs) - posterior. A term
of value zero whose gradient is exp(log_probs) on each sample's frames reproduces it, so both
agree whether or not log_probs comes from log_softmax; an impossible alignment's (infinite)
loss has a nan gradient on its frames, as torch's, unless zero_infinity zeroes both.
"""

import math

from ... import dtypes
from ...autograd.function import Function, name_node
from ...autograd.grad_mode import no_grad
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from ...ops.creation import full, tensor
from ...ops.ranges import arange
from ...ops.shape_copies import cat
from ...tensor import Tensor


def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) elementwise, -inf (with zero gradient) where all three are -inf."""
    with no_grad():
        top = ew.maximum(ew.maximum(a, b), c)
        top = ew.where(top == -math.inf, 0.0, top)
    total = ew.exp(a - top) + ew.exp(b - top) + ew.exp(c - top)
    empty = total == 0
    return ew.where(empty, -math.inf, top + ew.log(ew.where(empty, 1.0, total)))


def _shift(x, by):
    """x moved `by` places right along the last dim, -inf filling the start."""
    pad = full(tuple(x.shape[:-1]) + (by,), -math.inf, dtype=x.dtype, device=x.device)
    return cat([pad, x[..., :x.shape[-1] - by]], -1)


def _as_lengths(lengths):
    values = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    return [int(v) for v in (values if isinstance(values, list) else [values])]


def _padded_targets(targets, target_lengths, batch):
    """(N, S) class indices from padded or concatenated targets."""
    if targets.ndim == 2:
        return targets
    rows, start = [], 0
    flat = targets.tolist()
    width = max(target_lengths, default=0)
    for length in target_lengths:
        rows.append(flat[start:start + length] + [0] * (width - length))
        start += length
    return tensor(rows, dtype=dtypes.int64, device=targets.device).reshape(batch, width)


_CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


def _check_dim(t, ndim, arg, expected=None):
    if t.ndim != ndim:
        raise RuntimeError(f"Expected {expected or f'{ndim}-dimensional tensor'}, but got "
                           f"{t.ndim}-dimensional tensor for argument {arg}{_CHECKING}")


def _check_size(t, dim, size):
    if t.shape[dim] != size:
        raise RuntimeError(f"Expected tensor to have size {size} at dimension {dim}, but got "
                           f"size {t.shape[dim]} for argument #2 'targets'{_CHECKING}")


def _check_at_least(name, values):
    for value in values:
        if value < 0:
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value "
                               f"{value}{_CHECKING}")


def _check(log_probs, targets, input_lengths, target_lengths, blank):
    """torch's argument checks (ctc_loss_allocate_outputs), in its order and words."""
    _check_dim(log_probs, 3, "#1 'log_probs'")
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if len(lengths) != batch:
            raise RuntimeError(f"{name} must be of size batch_size")
    if targets.ndim == 1:
        _check_at_least("target_lengths", target_lengths)
        _check_size(targets, 0, sum(target_lengths))
    else:
        _check_dim(targets, 2, "#2 'targets'", "1 to 2 dimensions")
        _check_at_least("target_lengths", target_lengths)
        _check_size(targets, 0, batch)
        width = max(target_lengths, default=0)
        if targets.shape[1] < width:
            raise RuntimeError(f"Expected tensor to have size at least {width} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 'targets'"
                               f"{_CHECKING}")
    _check_at_least("input_lengths", input_lengths)
    for t_len in input_lengths:
        if t_len > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got "
                               f"value {t_len}{_CHECKING}")


def _extended(labels, blank):
    """l' = (blank, l1, blank, ..., lS, blank) per sample, and where a skip from s - 2 is allowed
    (l'_s is a label differing from l'_{s-2})."""
    batch, width = labels.shape
    ext = full((batch, 2 * width + 1), blank, dtype=dtypes.int64, device=labels.device)
    if width:
        ext[:, 1::2] = labels
    previous = cat([full((batch, 2), blank, dtype=dtypes.int64, device=labels.device),
                    ext[:, :-2]], 1)
    return ext, (ext != blank) & (ext != previous)


def _negative_log_likelihood(log_probs, labels, input_lengths, target_lengths, blank):
    """-log p(l | x) per sample: (N,) in log_probs' dtype."""
    steps, batch, _ = log_probs.shape
    ext, skip = _extended(labels, blank)
    width = ext.shape[1]
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(steps, batch, width))
    start = arange(width, device=log_probs.device) < 2
    alpha = ew.where(start, emit[0], -math.inf)
    lengths = tensor(input_lengths, dtype=dtypes.int64, device=log_probs.device)
    for t in range(1, steps):
        skipped = ew.where(skip, _shift(alpha, 2), -math.inf)
        step = _logsumexp3(alpha, _shift(alpha, 1), skipped) + emit[t]
        alpha = ew.where((lengths > t).unsqueeze(1), step, alpha)
    ends = tensor(target_lengths, dtype=dtypes.int64, device=log_probs.device) * 2
    last = alpha.gather(1, ends.unsqueeze(1)).squeeze(1)
    before = alpha.gather(1, ew.clamp_min(ends - 1, 0).unsqueeze(1)).squeeze(1)
    before = ew.where(ends > 0, before, -math.inf)
    ll = _logsumexp3(last, before, full(tuple(last.shape), -math.inf, dtype=last.dtype,
                                        device=last.device))
    return ew.where(lengths > 0, -ll, ew.where(ends > 0, math.inf, 0.0))


class _LogitGradient(Function):
    """Per sample a zero whose gradient with respect to log_probs is `slope`."""

    @staticmethod
    def forward(ctx, log_probs, slope):
        ctx.save_for_backward(slope)
        return full((log_probs.shape[1],), 0.0, dtype=log_probs.dtype, device=log_probs.device)

    @staticmethod
    def backward(ctx, grad):
        (slope,) = ctx.saved_tensors
        return grad.reshape(1, -1, 1) * slope, None


def _logit_gradient_term(log_probs, input_lengths, nll, zero_infinity):
    """Per sample a zero whose gradient is exp(log_probs) on the sample's frames (see the module
    docstring) and zero past them; nan on the frames of a sample whose loss is infinite unless
    zero_infinity, as torch's backward gives (its posterior there is exp(-inf + inf))."""
    with no_grad():
        frames = arange(log_probs.shape[0], device=log_probs.device).unsqueeze(1) < tensor(
            input_lengths, dtype=dtypes.int64, device=log_probs.device)
        slope = ew.exp(log_probs)
        if not zero_infinity:
            slope = ew.where((nll == math.inf).reshape(1, -1, 1), math.nan, slope)
        slope = ew.where(frames.unsqueeze(2), slope, 0.0)
    return _LogitGradient.apply(log_probs, slope)


@autocast_policy("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities and targets given padded
    (N, S) or concatenated; "mean" divides each loss by its target length, then averages."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim != 3  # torch's test: any other rank gains a batch dim
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f'"ctc_loss_{log_probs.device.type}" not implemented for '
                                  f"'{dtypes.scalar_type_name(log_probs.dtype)}'")
    batch = log_probs.shape[1]
    input_lengths, target_lengths = _as_lengths(input_lengths), _as_lengths(target_lengths)
    _check(log_probs, targets, input_lengths, target_lengths, blank)
    labels = _padded_targets(targets.to(dtypes.int64), target_lengths, batch)
    nll = _negative_log_likelihood(log_probs, labels, input_lengths, target_lengths, blank)
    nll = nll + _logit_gradient_term(log_probs, input_lengths, nll.detach(), zero_infinity)
    if zero_infinity:
        nll = ew.where(nll == math.inf, 0.0, nll)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "none":
        return name_node(nll, "CtcLossBackward0")
    if reduction == "sum":
        return nll.sum()
    divisor = tensor(target_lengths, dtype=log_probs.dtype, device=log_probs.device)
    return (nll / ew.clamp_min(divisor, 1).reshape(nll.shape)).mean()

