"""LayerNorm and RMSNorm through fused kernels, where a backend has them (the CUDA backend's
"layer_norm_fwd"/"layer_norm_bwd" and "rms_norm_fwd"/"rms_norm_bwd").

Forward is one kernel that also returns each row's mean and 1/std; first-order backward is one
kernel giving dx, dweight and dbias. When the backward itself must be differentiable (grad mode
on during backward: create_graph), the gradients are written with genesis ops on the saved
inputs instead, so higher-order gradients are exact. Half types compute in float32 and round
once, as PyTorch's fused kernels do.
"""

from ... import dtypes
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...ops import elementwise as ew
from ...ops.common import call, wrap
from ...tensor import Tensor


class _FusedNorm(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, normalized_ndim, eps, rms):
        if rms:
            y, rstd = call("rms_norm_fwd", x, weight, normalized_ndim, eps, device=x.device)
            mean = None
        else:
            y, mean, rstd = call("layer_norm_fwd", x, weight, bias, normalized_ndim, eps,
                                 device=x.device)
        ctx.save_for_backward(x, weight)
        ctx.stats, ctx.args = (mean, rstd), (normalized_ndim, eps, rms)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        normalized_ndim, eps, rms = ctx.args
        need_w = weight is not None and ctx.needs_input_grad[1]
        need_b = ctx.bias_dtype is not None and ctx.needs_input_grad[2]
        if is_grad_enabled():
            dx, dw, db = _differentiable_grads(g, x, weight, normalized_ndim, eps, rms)
            db = db.to(ctx.bias_dtype) if need_b else None
        elif rms:
            dx, dw = call("rms_norm_bwd", g, x, weight, ctx.stats[1], normalized_ndim, need_w,
                          device=x.device)
            db = None
        else:
            dx, dw, db = call("layer_norm_bwd", g, x, weight, *ctx.stats, normalized_ndim,
                              need_w, need_b, device=x.device)
        dx, dw, db = (_tensor(a, x.device) for a in (dx, dw, db))
        return dx, dw if need_w else None, db if need_b else None, None, None, None


def _tensor(value, device):
    """A kernel result as a Tensor (tensors and None pass through)."""
    return value if value is None or isinstance(value, Tensor) else wrap(value, device)


def _differentiable_grads(g, x, weight, normalized_ndim, eps, rms):
    """(dx, dweight, dbias) written with genesis ops (rstd = 1/sqrt(var + eps), xhat the
    normalized input): dx = rstd (w g - xhat mean(xhat w g) - mean(w g)), the mean term only
    for LayerNorm; dweight = sum(g xhat) and dbias = sum(g) over the leading dims."""
    dims = tuple(range(x.ndim - normalized_ndim, x.ndim))
    lead = tuple(range(x.ndim - normalized_ndim))
    half = x.dtype in (dtypes.float16, dtypes.bfloat16)
    xf, gf = (x.float(), g.float()) if half else (x, g)
    centered = xf if rms else xf - xf.mean(dims, keepdim=True)
    rstd = ew.rsqrt((centered * centered).mean(dims, keepdim=True) + eps)
    xhat = centered * rstd
    wg = gf if weight is None else gf * weight.to(gf.dtype)
    inner = wg - xhat * (xhat * wg).mean(dims, keepdim=True)
    if not rms:
        inner = inner - wg.mean(dims, keepdim=True)
    dx = (inner * rstd).to(x.dtype)
    dw = None if weight is None else _sum_leading(gf * xhat, lead).to(weight.dtype)
    return dx, dw, _sum_leading(gf, lead)


def _sum_leading(t, lead):
    return t.sum(lead) if lead else t


def layer_norm(input, normalized_ndim, weight, bias, eps):
    """LayerNorm over the trailing `normalized_ndim` dims with the fused kernels."""
    return _FusedNorm.apply(input, weight, bias, normalized_ndim, eps, False)


def rms_norm(input, normalized_ndim, weight, eps):
    """RMSNorm over the trailing `normalized_ndim` dims with the fused kernels."""
    return _FusedNorm.apply(input, weight, None, normalized_ndim, eps, True)
