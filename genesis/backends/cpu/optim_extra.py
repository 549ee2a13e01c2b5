"""Multi-tensor optimizer kernels (numpy) for NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop.

Same contract as backends/cpu/optim.py: lists of contiguous arrays updated in place, half types
computed in float32 (float64 in float64) and each stored result rounded once, in the order of
operations of PyTorch's per-parameter loop. The per-step scalars (bias corrections, momentum
coefficients) come from the host.
"""

import numpy as np

from ...dispatch import register
from .optim import _param_and_grad, bias_correction, compute_dtype, lerp


def _moments(exp_avg, exp_avg_sq, grad, beta1, beta2):
    """Adam's moment updates in the compute type of `grad`, stored: lerp(m, g, 1 - beta1) and
    beta2 v + (1 - beta2) g^2; returns them unrounded."""
    ct = grad.dtype
    m = lerp(exp_avg.astype(ct), grad, ct.type(1 - beta1))
    v = exp_avg_sq.astype(ct) * ct.type(beta2) + ct.type(1 - beta2) * grad * grad
    exp_avg[...] = m
    exp_avg_sq[...] = v
    return m, v


def _decayed(p, grads_i, lr, weight_decay, decoupled, maximize):
    """(compute dtype, param, grad) with weight decay applied as Adam applies it: the parameter
    scaled by 1 - lr * weight_decay when `decoupled`, else through the gradient."""
    ct, param, grad = _param_and_grad(p, grads_i, maximize, 0 if decoupled else weight_decay)
    if decoupled and weight_decay != 0:
        param = param * ct.type(1 - lr * weight_decay)
    return ct, param, grad


@register("nadam_step", "cpu")
def nadam_step(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay,
               decoupled, maximize, bias_correction2, grad_coef, avg_coef):
    """One NAdam step: d = sqrt(v / bias_correction2) + eps; p += grad_coef g / d +
    avg_coef m / d (the coefficients carry the step's momentum schedule)."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _decayed(p, grads[i], lr, weight_decay, decoupled, maximize)
            m, v = _moments(exp_avgs[i], exp_avg_sqs[i], grad, beta1, beta2)
            denom = np.sqrt(v / ct.type(bias_correction2)) + ct.type(eps)
            param = param + ct.type(grad_coef) * grad / denom
            p[...] = param + ct.type(avg_coef) * m / denom


def _radam_scalars(ct, lr, beta2, bias_correction1, bias_correction2, rect, step):
    """(lr, bias correction 1, sqrt of bias correction 2, rect or None) in `ct`: from the host,
    or computed in `ct` from the 0-d counter `step` as the CUDA kernel computes them."""
    if step is None:
        return (ct.type(lr), ct.type(bias_correction1), ct.type(bias_correction2 ** 0.5),
                None if rect is None else ct.type(rect))
    step = ct.type(step)
    bc2 = bias_correction(step, beta2)
    rho_inf = ct.type(2 / (1 - beta2) - 1)
    rho_t = rho_inf - ct.type(2) * step * (ct.type(1) - bc2) / bc2
    rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return ct.type(lr), None, np.sqrt(bc2), rect if rho_t > 5 else None


@register("radam_step", "cpu")
def radam_step(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay,
               decoupled, maximize, bias_correction1, bias_correction2, rect, steps=None):
    """One RAdam step: p -= m / bias_correction1 * lr * sqrt(bias_correction2) / (sqrt(v) +
    eps) * rect, or without the adaptive factor when `rect` is None. With the 0-d `steps`
    (advanced already) the per-step scalars come from each counter and `lr` may be a 0-d
    array, as the CUDA kernel takes them."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct = compute_dtype(p.dtype)
            step = None if steps is None else steps[i]
            lr_i, bc1, bc2_sqrt, rect_i = _radam_scalars(ct, lr, beta2, bias_correction1,
                                                         bias_correction2, rect, step)
            if step is not None:
                bc1 = bias_correction(ct.type(step), beta1)
            ct, param, grad = _decayed(p, grads[i], lr if step is None else lr_i, weight_decay,
                                       decoupled, maximize)
            m, v = _moments(exp_avgs[i], exp_avg_sqs[i], grad, beta1, beta2)
            update = m / bc1 * lr_i
            if rect_i is not None:
                update = update * (bc2_sqrt / (np.sqrt(v) + ct.type(eps))) * rect_i
            p[...] = param - update


@register("adamax_step", "cpu")
def adamax_step(params, grads, exp_avgs, exp_infs, beta1, beta2, eps, weight_decay, maximize,
                neg_clr, steps=None, lr=None):
    """One Adamax step: m = lerp(m, g, 1 - beta1); u = max(beta2 u, |g| + eps); p += neg_clr
    m / u, neg_clr being -lr / (1 - beta1^t): from the host, or (given the 0-d `steps`, and
    `lr` a float or a 0-d array) computed from each counter as the CUDA kernel does."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay)
            if steps is None:
                clr = ct.type(neg_clr)
            else:
                clr = -(ct.type(lr) / bias_correction(ct.type(steps[i]), beta1))
            m = lerp(exp_avgs[i].astype(ct), grad, ct.type(1 - beta1))
            u = np.maximum(exp_infs[i].astype(ct) * ct.type(beta2), np.abs(grad) + ct.type(eps))
            exp_avgs[i][...] = m
            exp_infs[i][...] = u
            p[...] = param + clr * m / u


@register("adadelta_step", "cpu")
def adadelta_step(params, grads, square_avgs, acc_deltas, lr, rho, eps, weight_decay, maximize):
    """One Adadelta step: v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p -= lr delta."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay)
            v = square_avgs[i].astype(ct) * ct.type(rho) + ct.type(1 - rho) * grad * grad
            u = acc_deltas[i].astype(ct)
            delta = np.sqrt(u + ct.type(eps)) / np.sqrt(v + ct.type(eps)) * grad
            square_avgs[i][...] = v
            acc_deltas[i][...] = u * ct.type(rho) + ct.type(1 - rho) * delta * delta
            p[...] = param + ct.type(-lr) * delta


@register("asgd_step", "cpu")
def asgd_step(params, grads, axs, eta, mu, lambd, weight_decay, maximize):
    """One ASGD step with this step's `eta` and `mu`: p = p (1 - lambd eta) - eta g; ax +=
    mu (p - ax), or ax = p while mu is 1."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay)
            param = param * ct.type(1 - lambd * eta)
            param = param + ct.type(-eta) * grad
            p[...] = param
            param = p.astype(ct)
            ax = axs[i].astype(ct)
            axs[i][...] = ax + (param - ax) * ct.type(mu) if mu != 1 else param


@register("rprop_step", "cpu")
def rprop_step(params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max, maximize):
    """One Rprop step: s = clamp(s * factor, min, max), the factor etaplus where g prev > 0,
    etaminus where < 0 (and g taken as 0 there), else 1, the product g prev and the factor in
    the parameter's dtype as PyTorch's (a half product may underflow to 0); p -= sign(g) s;
    prev = g."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, 0)
            sign = np.sign((grad * prevs[i].astype(ct)).astype(p.dtype))
            factor = np.where(sign > 0, ct.type(etaplus),
                              np.where(sign < 0, ct.type(etaminus), ct.type(1)))
            factor = factor.astype(p.dtype).astype(ct)  # PyTorch's factors: p's dtype
            size = np.clip(step_sizes[i].astype(ct) * factor, ct.type(step_size_min),
                           ct.type(step_size_max))
            step_sizes[i][...] = size
            grad = np.where(sign < 0, ct.type(0), grad)
            p[...] = param - np.sign(grad) * size.astype(p.dtype).astype(ct)
            prevs[i][...] = grad
