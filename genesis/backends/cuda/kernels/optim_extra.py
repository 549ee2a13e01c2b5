"""Multi-tensor optimizer kernels for NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop.

Registered as "nadam_step", "radam_step", "adamax_step", "adadelta_step", "asgd_step" and
"rprop_step" (same contracts as backends/cpu/optim_extra.py). They share kernels/optim.py's
launch scheme (a table of the arrays and of their CHUNK-element chunks, one program per chunk,
one launch per (parameter dtype, gradient dtype) for a whole parameter group) and its kernel
body, optim.multi_tensor_step: each kernel here is its per-element update. Each program walks
its chunk in BLOCK-element steps (1024: four warps, eight elements a thread; the update is
memory bound, so larger blocks buy nothing).

The math runs in float32 (float64 for float64) and each stored value is rounded once. Per-step
scalars (bias corrections, momentum schedule, step sizes) are computed on the host in double and
passed in; RAdam's and Adamax's, with the step counters on the device (capturable), are
computed by the kernel from each parameter's counter (the table's column after the state), the
learning rate a float or read from device memory, as the Adam kernel does.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ._math import div_rn, sqrt_rn
from .optim import (_address, _lerp, _lerp_coefficient, _step, bias_correction, decayed_moments, device_step, log_beta, lr_arg,
                    multi_tensor_step, state_columns)


@triton.jit
def _nadam_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                  PT: tl.constexpr, CT: tl.constexpr):
    (beta2, lerp_coef, lerp_small, one_minus_beta2, eps, decay, bias_correction2, grad_coef,
     avg_coef) = scalars
    param, m, v = decayed_moments(tensors, chunks, idx, mask, param, grad, decay, beta2,
                                  lerp_coef, lerp_small, one_minus_beta2, FLAGS[0], PT, CT)
    denom = sqrt_rn(div_rn(v, bias_correction2)) + eps
    param += div_rn(grad_coef * grad, denom)
    return param + div_rn(avg_coef * m, denom)


@triton.jit
def _nadam_kernel(tensors, chunks, beta2, lerp_coef, lerp_small, one_minus_beta2, eps, decay,
                  bias_correction2, grad_coef, avg_coef, WEIGHT_DECAY: tl.constexpr,
                  DECOUPLED: tl.constexpr, MAXIMIZE: tl.constexpr, PT: tl.constexpr,
                  GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """NAdam: d = sqrt(v / bias_correction2) + eps; p += grad_coef g / d + avg_coef m / d.
    Weight decay as Adam's: `decay` is 1 - lr * weight_decay when DECOUPLED, else
    weight_decay."""
    multi_tensor_step(tensors, chunks, (beta2, lerp_coef, lerp_small, one_minus_beta2, eps,
                                        decay, bias_correction2, grad_coef, avg_coef),
                      decay, None, None, _nadam_update, (WEIGHT_DECAY and DECOUPLED,),
                      WEIGHT_DECAY and not DECOUPLED, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _radam_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                  PT: tl.constexpr, CT: tl.constexpr):
    (beta2, lerp_coef, lerp_small, one_minus_beta2, eps, decay, lr, bias_correction1, bc2_sqrt,
     rect) = scalars
    RECTIFY: tl.constexpr = FLAGS[1]
    param, m, v = decayed_moments(tensors, chunks, idx, mask, param, grad, decay, beta2,
                                  lerp_coef, lerp_small, one_minus_beta2, FLAGS[0], PT, CT)
    update = div_rn(m, bias_correction1) * lr
    if RECTIFY:
        update = tl.where(rect > 0, update * div_rn(bc2_sqrt, sqrt_rn(v) + eps) * rect, update)
    return param - update


@triton.jit
def _radam_kernel(
        tensors, chunks,
        # Adam's moment coefficients and eps, the weight-decay factor (as NAdam's)
        beta2, lerp_coef, lerp_small, one_minus_beta2, eps, decay,
        # the learning rate (a float, or with counters on the device a pointer to it), then
        # the per-step scalars from the host (None with counters on the device)
        lr, bias_correction1, bc2_sqrt, rect,
        # with counters on the device (None otherwise): weight decay, log(beta1), log(beta2),
        # the SMA's limit rho_inf
        weight_decay, log_beta1, log_beta2, rho_inf,
        WEIGHT_DECAY: tl.constexpr, DECOUPLED: tl.constexpr, MAXIMIZE: tl.constexpr,
        RECTIFY: tl.constexpr, PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr,
        BLOCK: tl.constexpr):
    """RAdam: p -= m / bias_correction1 * lr, times sqrt(1 - beta2^t) / (sqrt(v) + eps) *
    rect where the variance is tractable (RECTIFY and rect > 0: rho_t > 5)."""
    if log_beta1 is not None:
        step, lr, decay = device_step(tensors, chunks, 4, lr, weight_decay, DECOUPLED, CT)
        bias_correction1 = bias_correction(step, log_beta1)
        bias_correction2 = bias_correction(step, log_beta2)
        bc2_sqrt = sqrt_rn(bias_correction2)
        rho_t = rho_inf - div_rn(2 * step * (1 - bias_correction2), bias_correction2)
        rect = sqrt_rn(div_rn((rho_t - 4) * (rho_t - 2) * rho_inf,
                              (rho_inf - 4) * (rho_inf - 2) * rho_t))
        rect = tl.where(rho_t > 5, rect, 0.0)
    multi_tensor_step(tensors, chunks, (beta2, lerp_coef, lerp_small, one_minus_beta2, eps,
                                        decay, lr, bias_correction1, bc2_sqrt, rect),
                      decay, None, None, _radam_update, (WEIGHT_DECAY and DECOUPLED, RECTIFY),
                      WEIGHT_DECAY and not DECOUPLED, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _adamax_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                   PT: tl.constexpr, CT: tl.constexpr):
    beta2, lerp_coef, lerp_small, eps, neg_clr = scalars
    m_ptr, u_ptr = state_columns(tensors, chunks, PT)
    m = _lerp(tl.load(m_ptr + idx, mask=mask).to(CT), grad, lerp_coef, lerp_small)
    u = tl.maximum(tl.load(u_ptr + idx, mask=mask).to(CT) * beta2, tl.abs(grad) + eps)
    tl.store(m_ptr + idx, m.to(PT), mask=mask)
    tl.store(u_ptr + idx, u.to(PT), mask=mask)
    return param + div_rn(neg_clr * m, u)


@triton.jit
def _adamax_kernel(tensors, chunks, beta2, lerp_coef, lerp_small, eps, weight_decay, neg_clr,
                   lr, log_beta1, WEIGHT_DECAY: tl.constexpr, MAXIMIZE: tl.constexpr,
                   PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """Adamax: m = lerp(m, g, 1 - beta1); u = max(beta2 u, |g| + eps); p += neg_clr m / u.
    With counters on the device `neg_clr` is None and -lr / (1 - beta1^t) is computed here
    (`lr` a float or a pointer)."""
    if log_beta1 is not None:
        step, lr, _ = device_step(tensors, chunks, 4, lr, weight_decay, False, CT)
        neg_clr = -div_rn(lr, bias_correction(step, log_beta1))
    multi_tensor_step(tensors, chunks, (beta2, lerp_coef, lerp_small, eps, neg_clr),
                      weight_decay, None, None, _adamax_update, None, WEIGHT_DECAY, MAXIMIZE,
                      PT, GT, CT, BLOCK)


@triton.jit
def _adadelta_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                     PT: tl.constexpr, CT: tl.constexpr):
    neg_lr, rho, one_minus_rho, eps = scalars
    v_ptr, u_ptr = state_columns(tensors, chunks, PT)
    v = tl.load(v_ptr + idx, mask=mask).to(CT) * rho + one_minus_rho * grad * grad
    u = tl.load(u_ptr + idx, mask=mask).to(CT)
    delta = div_rn(sqrt_rn(u + eps), sqrt_rn(v + eps)) * grad
    tl.store(v_ptr + idx, v.to(PT), mask=mask)
    tl.store(u_ptr + idx, (u * rho + one_minus_rho * delta * delta).to(PT), mask=mask)
    return param + neg_lr * delta


@triton.jit
def _adadelta_kernel(tensors, chunks, neg_lr, rho, one_minus_rho, eps, weight_decay,
                     WEIGHT_DECAY: tl.constexpr, MAXIMIZE: tl.constexpr, PT: tl.constexpr,
                     GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """Adadelta: v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p += neg_lr delta."""
    multi_tensor_step(tensors, chunks, (neg_lr, rho, one_minus_rho, eps), weight_decay, None,
                      None, _adadelta_update, None, WEIGHT_DECAY, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _asgd_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                 PT: tl.constexpr, CT: tl.constexpr):
    decay, neg_eta, mu = scalars
    AVERAGE: tl.constexpr = FLAGS[0]
    stored = (param * decay + neg_eta * grad).to(PT)
    param = stored.to(CT)
    ax_ptr = _address(tensors, chunks, 2, PT)
    if AVERAGE:
        ax = tl.load(ax_ptr + idx, mask=mask).to(CT)
        param = ax + (param - ax) * mu
    tl.store(ax_ptr + idx, param.to(PT), mask=mask)
    return stored


@triton.jit
def _asgd_kernel(tensors, chunks, decay, neg_eta, mu, weight_decay, WEIGHT_DECAY: tl.constexpr,
                 AVERAGE: tl.constexpr, MAXIMIZE: tl.constexpr, PT: tl.constexpr,
                 GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """ASGD: p = p decay - eta g (decay = 1 - lambd eta); ax += mu (p - ax) with AVERAGE,
    else ax = p (mu is 1), from the stored (rounded) parameter."""
    multi_tensor_step(tensors, chunks, (decay, neg_eta, mu), weight_decay, None, None,
                      _asgd_update, (AVERAGE,), WEIGHT_DECAY, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _sign(x):
    return tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0)).to(x.dtype)


@triton.jit
def _rprop_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                  PT: tl.constexpr, CT: tl.constexpr):
    etaminus, etaplus, step_size_min, step_size_max = scalars
    prev_ptr, s_ptr = state_columns(tensors, chunks, PT)
    # the product in the parameter's dtype, as PyTorch's: a half product may underflow to 0
    product = (grad * tl.load(prev_ptr + idx, mask=mask).to(CT)).to(PT).to(CT)
    factor = tl.where(product > 0, etaplus, tl.where(product < 0, etaminus, 1.0))
    factor = factor.to(PT).to(CT)
    size = tl.load(s_ptr + idx, mask=mask).to(CT) * factor
    size = tl.minimum(tl.maximum(size, step_size_min), step_size_max).to(PT)
    tl.store(s_ptr + idx, size, mask=mask)
    grad = tl.where(product < 0, 0.0, grad)
    tl.store(prev_ptr + idx, grad.to(PT), mask=mask)
    return param - _sign(grad) * size.to(CT)


@triton.jit
def _rprop_kernel(tensors, chunks, etaminus, etaplus, step_size_min, step_size_max,
                  MAXIMIZE: tl.constexpr, PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Rprop: s = clamp(s * factor, min, max), the factor etaplus where g prev > 0, etaminus
    where < 0 (the gradient taken as 0 there), else 1, the product and the factor rounded to PT
    as PyTorch's; p -= sign(g) s; prev = g."""
    multi_tensor_step(tensors, chunks, (etaminus, etaplus, step_size_min, step_size_max), 0.0,
                      None, None, _rprop_update, None, False, MAXIMIZE, PT, GT, CT, BLOCK)


def _moment_scalars(beta1, beta2, eps):
    """The moment arguments NAdam and RAdam share with Adam's kernel: beta2, lerp's coefficient
    and flag, 1 - beta2, eps."""
    weight, small = _lerp_coefficient(1 - beta1)
    return float(beta2), float(weight), small, float(1 - beta2), float(eps)


def _decay(lr, weight_decay, decoupled):
    return float(1 - lr * weight_decay if decoupled else weight_decay)


def _adam_like_flags(weight_decay, decoupled, maximize):
    return dict(WEIGHT_DECAY=weight_decay != 0, DECOUPLED=bool(decoupled),
                MAXIMIZE=bool(maximize))


@register("nadam_step", "cuda")
def nadam_step(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay,
               decoupled, maximize, bias_correction2, grad_coef, avg_coef):
    """One NAdam step of every parameter and its moments, in place: one launch per dtype pair."""
    scalars = _moment_scalars(beta1, beta2, eps) + (_decay(lr, weight_decay, decoupled),)
    _step(_nadam_kernel, [params, grads, exp_avgs, exp_avg_sqs],
          scalars + (float(bias_correction2), float(grad_coef), float(avg_coef)),
          _adam_like_flags(weight_decay, decoupled, maximize))


@register("radam_step", "cuda")
def radam_step(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay,
               decoupled, maximize, bias_correction1, bias_correction2, rect, steps=None):
    """One RAdam step of every parameter and its moments, in place: one launch per dtype pair;
    `rect` None while the variance is not yet tractable. With `steps` (the float32 counters,
    advanced already) the kernel computes the per-step scalars (the host's are None) and `lr`
    may be a 0-d array."""
    flags = _adam_like_flags(weight_decay, decoupled, maximize)
    lists = [params, grads, exp_avgs, exp_avg_sqs]
    if steps is None:
        per_step = (_decay(lr, weight_decay, decoupled), float(lr), float(bias_correction1),
                    float(bias_correction2 ** 0.5), 1.0 if rect is None else float(rect),
                    None, None, None, None)
    else:
        per_step = (None, lr_arg(lr), None, None, None, float(weight_decay), log_beta(beta1),
                    log_beta(beta2), 2 / (1 - beta2) - 1)
        lists.append(steps)
    _step(_radam_kernel, lists, _moment_scalars(beta1, beta2, eps) + per_step,
          dict(flags, RECTIFY=rect is not None or steps is not None))


@register("adamax_step", "cuda")
def adamax_step(params, grads, exp_avgs, exp_infs, beta1, beta2, eps, weight_decay, maximize,
                neg_clr, steps=None, lr=None):
    """One Adamax step of every parameter and its state, in place: one launch per dtype pair.
    With `steps` (as radam_step's) `neg_clr` is None and the kernel computes it from `lr`."""
    weight, small = _lerp_coefficient(1 - beta1)
    scalars = (float(beta2), float(weight), small, float(eps), float(weight_decay))
    lists = [params, grads, exp_avgs, exp_infs]
    if steps is None:
        scalars += (float(neg_clr), None, None)
    else:
        scalars += (None, lr_arg(lr), log_beta(beta1))
        lists.append(steps)
    _step(_adamax_kernel, lists, scalars,
          dict(WEIGHT_DECAY=weight_decay != 0, MAXIMIZE=bool(maximize)))


@register("adadelta_step", "cuda")
def adadelta_step(params, grads, square_avgs, acc_deltas, lr, rho, eps, weight_decay, maximize):
    """One Adadelta step of every parameter and its state, in place: one launch per dtype
    pair."""
    scalars = (float(-lr), float(rho), float(1 - rho), float(eps), float(weight_decay))
    _step(_adadelta_kernel, [params, grads, square_avgs, acc_deltas], scalars,
          dict(WEIGHT_DECAY=weight_decay != 0, MAXIMIZE=bool(maximize)))


@register("asgd_step", "cuda")
def asgd_step(params, grads, axs, eta, mu, lambd, weight_decay, maximize):
    """One ASGD step of every parameter and its average, in place: one launch per dtype pair."""
    scalars = (float(1 - lambd * eta), float(-eta), float(mu), float(weight_decay))
    _step(_asgd_kernel, [params, grads, axs], scalars,
          dict(WEIGHT_DECAY=weight_decay != 0, AVERAGE=mu != 1, MAXIMIZE=bool(maximize)))


@register("rprop_step", "cuda")
def rprop_step(params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max, maximize):
    """One Rprop step of every parameter and its state, in place: one launch per dtype pair."""
    scalars = (float(etaminus), float(etaplus), float(step_size_min), float(step_size_max))
    _step(_rprop_kernel, [params, grads, prevs, step_sizes], scalars,
          dict(MAXIMIZE=bool(maximize)))


def _samples():
    """(kernel, scalars, flag sets) of each kernel, for compile_all."""
    moment = _moment_scalars(0.9, 0.999, 1e-8)
    adam_flags = [dict(WEIGHT_DECAY=True, DECOUPLED=True, MAXIMIZE=False),
                  dict(WEIGHT_DECAY=True, DECOUPLED=False, MAXIMIZE=True),
                  dict(WEIGHT_DECAY=False, DECOUPLED=False, MAXIMIZE=False)]
    plain_flags = [dict(WEIGHT_DECAY=False, MAXIMIZE=False),
                   dict(WEIGHT_DECAY=True, MAXIMIZE=True)]
    counters = (log_beta(0.9), log_beta(0.999), 1999.0)
    return [
        (_nadam_kernel, moment + (0.99, 0.1, -1e-3, -1e-3), adam_flags),
        (_radam_kernel, moment + (0.99, 1e-3, 0.1, 0.3, 0.5, None, None, None, None),
         [dict(f, RECTIFY=r) for f in adam_flags for r in (True, False)]),
        (_radam_kernel, moment + (None, 1e-3, None, None, None, 0.01) + counters,
         [dict(f, RECTIFY=True) for f in adam_flags]),
        (_adamax_kernel, (0.999, 0.1, 1, 1e-8, 0.0, -1e-2, None, None), plain_flags),
        (_adamax_kernel, (0.999, 0.1, 1, 1e-8, 0.0, None, 1e-3, log_beta(0.9)), plain_flags),
        (_adadelta_kernel, (-1.0, 0.9, 0.1, 1e-6, 0.0), plain_flags),
        (_asgd_kernel, (1.0, -1e-2, 1.0, 0.0),
         [dict(f, AVERAGE=a) for f in plain_flags for a in (True, False)]),
        (_rprop_kernel, (0.5, 1.2, 1e-6, 50.0), [dict(MAXIMIZE=False), dict(MAXIMIZE=True)]),
    ]
