"""Multi-tensor optimizer kernels (numpy): the fused Adam, SGD, RMSprop and Adagrad steps, the step
counters' advance and the total-norm gradient clip.

Each takes lists of contiguous arrays and updates them in place, computing half types in float32
(float64 in float64) and rounding each stored result once, as PyTorch's fused kernels do.
"""

import numpy as np

from ...dispatch import register


def compute_dtype(dtype):
    """The dtype the math runs in: float64 for float64 arrays, float32 for the others."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _param_and_grad(p, grad, maximize, weight_decay, grad_scale=None):
    """(compute dtype, param, grad) of one parameter, widened: the gradient divided by
    `grad_scale` (GradScaler's scale; the unscaled gradient is stored back), negated under
    `maximize`, plus weight_decay * param (weight decay through the gradient)."""
    ct = compute_dtype(p.dtype)
    param, wide = p.astype(ct), grad.astype(ct)
    if grad_scale is not None:
        wide = wide / ct.type(grad_scale)
        grad[...] = wide
    if maximize:
        wide = -wide
    if weight_decay != 0:
        wide = wide + param * ct.type(weight_decay)
    return ct, param, wide


def skipped(found_inf):
    """Whether GradScaler's 0-d `found_inf` (None without a scaler) says to skip the step."""
    return found_inf is not None and found_inf != 0


def _adam_scalars(ct, lr, beta1, beta2, weight_decay, decoupled, bias_correction1,
                  bias_correction2_sqrt, step):
    """(decay, -step size, sqrt of bias correction 2) in `ct`: from the host's bias corrections
    in double, or computed in `ct` from the 0-d step counter `step` (and `lr`, a float or a 0-d
    array) as the CUDA kernel computes them."""
    if step is None:
        return (ct.type(1 - lr * weight_decay if decoupled else weight_decay),
                ct.type(-lr / bias_correction1), ct.type(bias_correction2_sqrt))
    lr, step = ct.type(lr), ct.type(step)
    bc1, bc2 = bias_correction(step, beta1), bias_correction(step, beta2)
    decay = ct.type(1) - lr * ct.type(weight_decay) if decoupled else ct.type(weight_decay)
    return decay, -(lr / bc1), np.sqrt(bc2)


def bias_correction(step, beta):
    """1 - beta^step in step's dtype, as the CUDA kernels compute it from a device counter:
    -expm1(step * log(beta)), log(beta) taken in double and rounded."""
    ct = step.dtype.type
    with np.errstate(divide="ignore"):
        return -np.expm1(step * ct(np.log(np.float64(beta))))


@register("adam_step", "cpu")
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lr, beta1, beta2, eps,
              weight_decay, decoupled, maximize, bias_correction1, bias_correction2_sqrt,
              steps=None, grad_scale=None, found_inf=None):
    """One Adam/AdamW step of every (param, grad, moments) quadruple, in place, in the order of
    operations of PyTorch's CPU fused step: coefficients taken in double then rounded, the first
    moment as lerp_ computes it (one fused multiply-add).

    `max_exp_avg_sqs` is None without AMSGrad; the bias corrections come from the step count,
    or, given the 0-d float32 `steps` (advanced already), from each parameter's counter, with
    `lr` a float or a 0-d array. GradScaler's 0-d `grad_scale` divides the gradients (stored
    unscaled) and a nonzero `found_inf` skips the step."""
    if skipped(found_inf):
        return
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize,
                                              0 if decoupled else weight_decay, grad_scale)
            decay, neg_step_size, bc2_sqrt = _adam_scalars(
                ct, lr, beta1, beta2, weight_decay, decoupled, bias_correction1,
                bias_correction2_sqrt, None if steps is None else steps[i])
            if decoupled and weight_decay != 0:
                param = param * decay
            m = lerp(exp_avgs[i].astype(ct), grad, ct.type(1 - beta1))
            v = exp_avg_sqs[i].astype(ct) * ct.type(beta2) + ct.type(1 - beta2) * grad * grad
            exp_avgs[i][...] = m
            exp_avg_sqs[i][...] = v
            if max_exp_avg_sqs is not None:
                v = np.maximum(max_exp_avg_sqs[i].astype(ct), v)
                max_exp_avg_sqs[i][...] = v
            denom = np.sqrt(v) / bc2_sqrt + ct.type(eps)
            p[...] = param + neg_step_size * m / denom


@register("advance_steps", "cpu")
def advance_steps(steps, found_inf=None):
    """Add 1 to every 0-d step counter in `steps`, unless `found_inf` is nonzero."""
    if not skipped(found_inf):
        for step in steps:
            step[...] = step + 1


@register("sgd_step", "cpu")
def sgd_step(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov,
             maximize, first_step, grad_scale=None, found_inf=None):
    """One SGD step of every (param, grad, momentum buffer) triple, in place, in the order of
    operations of PyTorch's CPU fused step. `momentum_buffers` is None without momentum; on the
    `first_step` the buffers are written with the gradient, not read. GradScaler's inputs as
    adam_step's."""
    if skipped(found_inf):
        return
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay, grad_scale)
            if momentum_buffers is not None:
                buf = grad if first_step else (momentum_buffers[i].astype(ct) * ct.type(momentum)
                                               + grad * ct.type(1 - dampening))
                momentum_buffers[i][...] = buf
                grad = grad + buf * ct.type(momentum) if nesterov else buf
            p[...] = param - grad * ct.type(lr)


@register("rmsprop_step", "cpu")
def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps,
                 weight_decay, momentum, maximize):
    """One RMSprop step of every parameter and its state, in place, in the order of operations
    of PyTorch's loop. `grad_avgs` is None unless centered, `momentum_buffers` None without
    momentum."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay)
            v = square_avgs[i].astype(ct) * ct.type(alpha) + ct.type(1 - alpha) * grad * grad
            square_avgs[i][...] = v
            if grad_avgs is not None:
                m = lerp(grad_avgs[i].astype(ct), grad, ct.type(1 - alpha))
                grad_avgs[i][...] = m
                v = v - m * m
            avg = np.sqrt(v) + ct.type(eps)
            if momentum_buffers is not None:
                buf = momentum_buffers[i].astype(ct) * ct.type(momentum) + grad / avg
                momentum_buffers[i][...] = buf
                p[...] = param - ct.type(lr) * buf
            else:
                p[...] = param - ct.type(lr) * grad / avg


@register("adagrad_step", "cpu")
def adagrad_step(params, grads, state_sums, clr, eps, weight_decay, maximize):
    """One Adagrad step of every (param, grad, sum of squares) triple, in place; `clr` is the
    step's learning rate lr / (1 + (step - 1) * lr_decay)."""
    with np.errstate(all="ignore"):
        for i, p in enumerate(params):
            ct, param, grad = _param_and_grad(p, grads[i], maximize, weight_decay)
            total = state_sums[i].astype(ct) + grad * grad
            state_sums[i][...] = total
            p[...] = param - ct.type(clr) * grad / (np.sqrt(total) + ct.type(eps))


def lerp(start, end, weight):
    """start + weight * (end - start) as PyTorch's lerp computes it: from `end` for weights of
    0.5 and more, the multiply-add fused (exact in float64 for float32 operands)."""
    small = abs(weight) < 0.5
    coef, base = (weight, start) if small else (weight - weight.dtype.type(1), end)
    if start.dtype == np.float32:
        return (np.float64(coef) * (end - start).astype(np.float64) + base).astype(np.float32)
    return coef * (end - start) + base


def _norm(x, norm_type):
    """The norm_type vector norm of a float32/float64 array (0 for an empty one); sums are
    numpy's pairwise ones."""
    a = np.abs(x.ravel())
    if norm_type == np.inf:
        return a.max(initial=0)
    if norm_type == -np.inf:
        return a.min(initial=np.inf) if a.size else a.dtype.type(0)
    if norm_type == 0:
        return a.dtype.type(np.count_nonzero(a))
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return np.sqrt(np.sum(a * a))
    return np.sum(a ** a.dtype.type(norm_type)) ** a.dtype.type(1 / norm_type)


@register("total_norm", "cpu")
def total_norm(arrays, norm_type, dtype):
    """The norm of the arrays' norms (as if concatenated), a 0-d array of `dtype`: each norm is
    rounded to its array's dtype, as PyTorch's foreach norm returns them. Empty arrays take no
    part (a -inf norm has no identity)."""
    with np.errstate(all="ignore"):
        norms = [_norm(a.astype(compute_dtype(a.dtype)), norm_type).astype(a.dtype)
                 for a in arrays if a.size]
        ct = compute_dtype(dtype)
        return np.asarray(_norm(np.array(norms, dtype=ct), norm_type)).astype(dtype)


@register("clip_by_total_norm_", "cpu")
def clip_by_total_norm_(arrays, max_norm, total_norm):
    """Scale the arrays in place by min(max_norm / (total_norm + 1e-6), 1), that coefficient
    computed in total_norm's dtype as PyTorch computes it on a 0-d tensor: `max_norm / t` is
    t.reciprocal() * max_norm, each operation rounded to the dtype."""
    dtype = total_norm.dtype
    ct = compute_dtype(dtype)
    with np.errstate(all="ignore"):
        shifted = (total_norm.astype(ct) + ct.type(1e-6)).astype(dtype).astype(ct)
        reciprocal = (ct.type(1) / shifted).astype(dtype).astype(ct)
        coef = np.minimum((reciprocal * ct.type(max_norm)).astype(dtype).astype(ct), ct.type(1))
        for a in arrays:
            a[...] = a.astype(compute_dtype(a.dtype)) * coef
