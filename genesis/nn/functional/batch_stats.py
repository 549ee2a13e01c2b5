"""Normalization by per-channel batch statistics, with a numerically stable backward.

Training-mode batch norm (and instance norm, which is batch norm of one sample's channels)
normalizes each channel c of (N, C, *) input over the N * prod(*) = M values it has:
xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) (biased variance). Autograd through mean
and var would subtract nearly equal terms; the input gradient is instead written in the
standard form

    dx = (rstd / M) * (M * dy - sum(dy) - xhat * sum(dy * xhat)),    dy = g * weight,

its two sums accumulated in float64 for float32 and float64 input (float32 for half types), so
float32 gradients agree with PyTorch's to about 1e-7. Half types compute in float32 and round
once. On the GPU the forward and the backward are two fused passes each
(kernels/batch_norm.py); a backward that builds a graph (create_graph) runs the composed form,
whose statistics are functions of x.
"""

from ... import dtypes
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...dispatch import has_kernel
from ...ops import elementwise as ew
from ...ops.common import call, wrap

_HALF = (dtypes.float16, dtypes.bfloat16)


def _compute_dtype(dtype):
    """float32 for half types, the dtype itself otherwise."""
    return dtypes.float32 if dtype in _HALF else dtype


def _accumulate_dtype(dtype):
    """The dtype channel sums are accumulated in: float32 for half types, float64 otherwise."""
    return dtypes.float32 if dtype in _HALF else dtypes.float64


def _channel_sum(x, dims, dtype):
    """Sum over `dims` (keeping them), accumulated in `dtype`, returned in x's dtype."""
    return x.to(dtype).sum(dims, keepdim=True).to(x.dtype)


def _statistics(x, dims, acc, eps):
    """Per-channel mean, its rounding residual, biased variance and 1 / sqrt(var + eps) of x,
    shaped to broadcast.

    The mean accumulated in `acc` is split into x's dtype as mean + residual, so that
    `_centered` subtracts it to x's own precision: far from zero (channels near 1000 in
    float32) the rounded mean alone is off by up to half an ulp of 1000, about 3e-5."""
    count = x.numel() // x.shape[1]
    exact = x.to(acc).sum(dims, keepdim=True) / count
    mean = exact.to(x.dtype)
    residual = (exact - mean.to(acc)).to(x.dtype)
    centered = _centered(x, mean, residual)
    var = _channel_sum(centered * centered, dims, acc) / count
    return mean, residual, var, ew.rsqrt(var + eps)


def _centered(x, mean, residual):
    """x - (mean + residual): x - mean is exact near the mean, the residual then rounds once."""
    return (x - mean) - residual


def update_running(running, value, momentum):
    """running <- (1 - momentum) * running + momentum * value, in place, outside any graph."""
    with no_grad():
        running.mul_(1 - momentum).add_(value.detach().to(running.dtype) * momentum)


class BatchNormTraining(Function):
    """(x - mean) * rstd * weight + bias with statistics over every dim but 1; returns the output
    and the per-channel mean and biased variance (no gradient). `running_mean` and
    `running_var`, when given, move towards the mean and the unbiased variance by `momentum`."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps, running_mean=None, running_var=None, momentum=0.1):
        dims = (0,) + tuple(range(2, x.ndim))
        ctx.eps, ctx.dims, ctx.bias_dtype = eps, dims, None if bias is None else bias.dtype
        ctx.fused = has_kernel("batch_norm_train_fwd", x.device.type)
        if ctx.fused:
            return _fused_forward(ctx, x, weight, bias, eps, running_mean, running_var, momentum)
        wide = _compute_dtype(x.dtype)
        acc = _accumulate_dtype(x.dtype)
        mean, residual, var, rstd = _statistics(x.to(wide), dims, acc, eps)
        shape = tuple(mean.shape)
        y = _centered(x.to(wide), mean, residual) * rstd
        if weight is not None:
            y = y * weight.to(wide).reshape(shape)
        if bias is not None:
            y = y + bias.to(wide).reshape(shape)
        ctx.save_for_backward(x, weight, mean, residual, rstd)
        flat_mean, flat_var = mean.reshape(-1), var.reshape(-1)
        _update_both(running_mean, running_var, flat_mean, flat_var, momentum,
                     x.numel() // x.shape[1])
        ctx.mark_non_differentiable(flat_mean, flat_var)
        return y.to(x.dtype), flat_mean, flat_var

    @staticmethod
    def backward(ctx, g, _g_mean, _g_var):
        if ctx.fused and not is_grad_enabled():
            return _fused_backward(ctx, g)
        x, weight, *_ = ctx.saved_tensors
        dims, wide = ctx.dims, _compute_dtype(x.dtype)
        acc = _accumulate_dtype(x.dtype)
        if is_grad_enabled():  # a differentiable backward: the statistics as functions of x
            mean, residual, _, rstd = _statistics(x.to(wide), dims, acc, ctx.eps)
        else:
            _, _, mean, residual, rstd = ctx.saved_tensors
        g = g.to(wide)
        xhat = _centered(x.to(wide), mean, residual) * rstd
        sum_g = _channel_sum(g, dims, acc)
        sum_gx = _channel_sum(g * xhat, dims, acc)
        count = x.numel() // x.shape[1]
        scale = rstd if weight is None else rstd * weight.to(wide).reshape(tuple(mean.shape))
        dx = (scale / count) * (count * g - sum_g - xhat * sum_gx)
        dw = sum_gx.reshape(-1).to(weight.dtype) if weight is not None and \
            ctx.needs_input_grad[1] else None
        db = sum_g.reshape(-1).to(ctx.bias_dtype) if ctx.bias_dtype is not None and \
            ctx.needs_input_grad[2] else None
        return dx.to(x.dtype), dw, db, None, None, None, None


def _update_both(running_mean, running_var, mean, var, momentum, count):
    """The running estimates' update from the batch's mean and biased variance."""
    if running_mean is not None:
        update_running(running_mean, mean, momentum)
    if running_var is not None:
        update_running(running_var, var * (count / (count - 1)), momentum)


def _in_kernel(running, x):
    """Whether the fused kernel updates `running` itself: a dense per-channel vector beside x."""
    return running is not None and running.device == x.device and running.is_contiguous()


def _fused_forward(ctx, x, weight, bias, eps, running_mean, running_var, momentum):
    """The forward by the backend's fused kernels (statistics pass, normalization pass, the
    running estimates updated by the first); the statistics kept for the backward in their
    accumulation dtype."""
    in_kernel = [r if _in_kernel(r, x) else None for r in (running_mean, running_var)]
    arrays = call("batch_norm_train_fwd", x, weight, bias, eps, *in_kernel, momentum,
                  device=x.device)
    y, mean, var, rstd = (wrap(a, x.device) for a in arrays)
    ctx.save_for_backward(x, weight, mean, rstd)
    wide = _compute_dtype(x.dtype)
    flat_mean, flat_var = mean.to(wide), var.to(wide)
    _update_both(*(r if k is None else None for r, k in zip((running_mean, running_var),
                                                             in_kernel)),
                 flat_mean, flat_var, momentum, x.numel() // x.shape[1])
    ctx.mark_non_differentiable(flat_mean, flat_var)
    return y, flat_mean, flat_var


def _fused_backward(ctx, g):
    """The input, weight and bias gradients by the backend's fused kernels (sums pass, input
    gradient pass): the stable form above."""
    x, weight, mean, rstd = ctx.saved_tensors
    dw_dtype = weight.dtype.numpy_dtype if weight is not None and ctx.needs_input_grad[1] \
        else None
    db_dtype = ctx.bias_dtype.numpy_dtype if ctx.bias_dtype is not None and \
        ctx.needs_input_grad[2] else None
    arrays = call("batch_norm_train_bwd", g, x, weight, mean, rstd, dw_dtype, db_dtype,
                  device=x.device)
    dx, dw, db = (None if a is None else wrap(a, x.device) for a in arrays)
    return dx, dw, db, None, None, None, None
