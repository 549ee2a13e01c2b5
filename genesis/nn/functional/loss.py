"""Loss functions with torch.nn.functional's signatures, semantics and reductions."""

import math

from ... import dtypes
from ...autograd.function import Function, name_node
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.one_node import one_node
from ...dispatch import has_kernel
from ...ops import elementwise as ew
from ...ops.activation import logsigmoid
from ...ops.autocast import autocast_policy, policy_dtype
from ...ops.common import broadcast_shapes, call, check_devices, wrap
from ...ops.ranges import arange
from ._utils import (cast_error, check_reduction, dtype_mismatch, legacy_reduction,
                     reduce_loss, refuse_gradient, refused_backward, size_text, warn)
from .activation import log_softmax, softmax

_FUSED_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64)


def _class_targets_check(input, target, op):
    """Shapes of class-index targets for input (C), (N, C) or (N, C, d1, ...), checked as
    torch's nll_loss_nd and its kernels check them, in their order and words."""
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    check_devices(op, input, target)
    if input.ndim != 1 and (target.shape[0] if target.ndim else 0) != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    if input.ndim == 3 or input.ndim > 4:
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"Expected target size {[input.shape[0], *input.shape[2:]]}, "
                               f"got {list(target.shape)}")
    elif input.ndim == 4 and target.ndim != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.ndim}")
    elif input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    _check_target_dtype(input, target, op)
    if input.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                         f"{target.shape[0]}")
    if input.ndim == 4 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                           f"{list(target.shape)}")


def _check_target_dtype(input, target, op):
    """torch's class-index dtypes: int64 or uint8, and int64 alone for spatial (N, C, d1, ...)
    input, which its 2-D kernel takes."""
    name = dtypes.scalar_type_name(target.dtype)
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        raise RuntimeError(f"{op}: expected target dtype to be Long or Byte, but got {name}")
    if input.ndim > 2 and target.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: expected scalar type Long but found {name}")


def _check_target_range(target, ignore_index, num_classes):
    """Class indices in [0, C) (checked on the CPU; GPUs check nothing, as torch's kernels)."""
    if target.device.type != "cpu" or not target.numel():
        return
    bad = (target != ignore_index) & ((target < 0) | (target >= num_classes))
    if bad.any():
        raise IndexError(f"Target {int(target[bad].reshape(-1)[0])} is out of bounds.")


def _gather_class(values, index):
    """values[n, index[n, ...], ...] for class dim 1 (or dim 0 for unbatched 1-D values)."""
    if values.ndim == 1:
        return values.gather(0, index.reshape(1)).reshape(())
    return values.gather(1, index.unsqueeze(1)).squeeze(1)


def _class_weights(weight, input, dtype):
    """Shape (1, C, 1, ...) view of per-class weights for broadcasting against `input`."""
    shape = [1] * input.ndim
    shape[0 if input.ndim == 1 else 1] = -1
    return weight.to(dtype).reshape(shape)


def _class_args_check(input, target, weight):
    """Shapes of class-index targets and per-class weights (nll_loss's errors): the class
    count and the target, a 1-D input's one-element target as the 0-d one it stands for."""
    _class_targets_check(input, target, "nll_loss")
    classes = input.shape[0 if input.ndim == 1 else 1]
    if input.ndim <= 2:
        _check_class_weight(weight, classes, "nll_loss")
    elif weight is not None and weight.numel() != classes:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    return classes, target.reshape(()) if input.ndim == 1 else target


def _check_class_weight(weight, classes, op):
    """A per-class weight of `classes` entries (or none), refused in torch's words otherwise."""
    if weight is not None and tuple(weight.shape) != (classes,):
        raise RuntimeError(f"{op}: weight tensor should be defined either for all {classes} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")


def _prob_target_check(input, target, weight, ignore_index):
    """cross_entropy's target of the input's shape holds class probabilities: torch's checks of
    one, in its order (a floating dtype, no ignore_index, a per-class weight)."""
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {dtypes.scalar_type_name(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if input.ndim == 0:  # torch looks up the size of class dim 1
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    _check_class_weight(weight, input.shape[0 if input.ndim == 1 else 1], "cross_entropy")


@autocast_policy("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] (times weight[target[n]]); mean divides by the summed weights."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "nll_loss")
    classes, target = _class_args_check(input, target, weight)
    _check_target_range(target, ignore_index, classes)
    target = target.to(dtypes.int64)
    valid = target != ignore_index
    safe = ew.where(valid, target, 0)
    picked = -_gather_class(input, safe)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight.to(input.dtype).index_select(0, safe.reshape(-1)).reshape(safe.shape)
    loss = picked * w
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        loss = _weighted_mean(loss.sum(), w.sum())
    return name_node(loss, _nll_node(input.ndim, reduction))


def _nll_node(ndim, reduction):
    """PyTorch's node name for nll_loss (and cross_entropy) of `ndim`-D input: its 2-D kernel
    for (N, C, H, W) input, and for other spatial input when reduced (else a reshape)."""
    if ndim <= 2:
        return "NllLossBackward0"
    return "NllLoss2DBackward0" if ndim == 4 or reduction != "none" else "ViewBackward0"


def _weighted_mean(loss_sum, total):
    """loss_sum / total; NaN with zero gradient when total is 0 (all targets ignored), as torch."""
    empty = total == 0
    return ew.where(empty, math.nan, loss_sum / ew.where(empty, 1.0, total))


def _smooth_loss(logp, target, weight, valid, reduction, classes):
    """The label-smoothing term of cross_entropy with class-index targets (torch's formula)."""
    class_dim = 0 if logp.ndim == 1 else 1
    weighted = logp if weight is None else logp * _class_weights(weight, logp, logp.dtype)
    smooth = ew.where(valid, -weighted.sum(class_dim), 0.0)
    if reduction == "none":
        return smooth
    if reduction == "sum":
        return smooth.sum()
    if weight is None:
        return _weighted_mean(smooth.sum(), valid.sum())
    safe = ew.where(valid, target, 0).reshape(-1)
    picked = weight.to(logp.dtype).index_select(0, safe)
    return _weighted_mean(smooth.sum(), ew.where(valid.reshape(-1), picked, 0.0).sum())


def _prob_target_loss(logp, target, weight, reduction, label_smoothing):
    """cross_entropy with class-probability targets of input's shape."""
    class_dim = 0 if logp.ndim == 1 else 1
    classes = logp.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = logp * target
    if weight is not None:
        terms = terms * _class_weights(weight, logp, logp.dtype)
    if reduction == "none":
        return -terms.sum(class_dim)
    if reduction == "sum":
        return -terms.sum()
    return name_node(-terms.sum() / (logp.numel() // classes), "DivBackward1")  # by a Scalar


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for 1-D input) followed by nll_loss.

    `target` holds class indices (integer, input's shape without the class dim) or class
    probabilities (floating, input's shape); `label_smoothing` mixes in the uniform distribution.
    Class indices without label smoothing take the backend's fused kernels where it has them
    (one launch forward, one backward; see _CrossEntropy). Under autocast, which runs
    cross_entropy in float32, those kernels read half logits as float32 themselves.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if label_smoothing == 0 and _fusable(input, target, weight):
        loss_dtype = policy_dtype("cross_entropy", input) or input.dtype
        return _fused_cross_entropy(input, target, weight, ignore_index, reduction, loss_dtype)
    return _composed_cross_entropy(input, target, weight, ignore_index, reduction,
                                   label_smoothing)


@autocast_policy("cross_entropy")
def _composed_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    """cross_entropy from log_softmax and nll_loss (or the probability-target loss)."""
    class_dim = 0 if input.ndim == 1 else 1
    if tuple(target.shape) == tuple(input.shape):
        _prob_target_check(input, target, weight, ignore_index)
        return _prob_target_loss(log_softmax(input, class_dim), target, weight,
                                 reduction, label_smoothing)
    logp = log_softmax(input, class_dim)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return loss
    target = target.to(dtypes.int64)
    smooth = _smooth_loss(logp, target, weight, target != ignore_index, reduction,
                          input.shape[class_dim])
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / input.shape[class_dim])


def _fusable(input, target, weight):
    """The backend's fused kernels apply: class-index targets, a floating input with classes
    and rows, every tensor on input's device, a per-class weight needing no gradient."""
    if not has_kernel("cross_entropy_fwd", input.device.type):
        return False
    if tuple(target.shape) == tuple(input.shape) or input.dtype not in _FUSED_DTYPES \
            or not input.numel():
        return False
    if target.device != input.device:
        return False
    return weight is None or (weight.device == input.device and not weight.requires_grad)


def _fused_cross_entropy(input, target, weight, ignore_index, reduction, loss_dtype):
    """cross_entropy with class-index targets as one forward and one backward kernel: the
    input seen as rows x classes (class dim moved last for (N, C, d...) input), the loss in
    `loss_dtype` (the input's, or autocast's float32) and the input's gradient in its dtype."""
    classes, target = _class_args_check(input, target, weight)
    _check_target_range(target, ignore_index, classes)
    if input.ndim == 1:
        rows = input.unsqueeze(0)
    elif input.ndim == 2:
        rows = input
    else:
        rows = input.movedim(1, -1).reshape(-1, classes)
    if weight is not None:
        weight = weight.to(loss_dtype)
    target = target.to(dtypes.int64)
    flat = target if target.ndim == 1 else target.reshape(-1)
    loss = _CrossEntropy.apply(rows, flat, weight, ignore_index, reduction, loss_dtype)
    if reduction == "none" and flat is not target:
        loss = loss.reshape(target.shape)
    return name_node(loss, _nll_node(input.ndim, reduction))


class _CrossEntropy(Function):
    """Cross-entropy of (N, C) logits and (N,) class indices through the backend kernels
    "cross_entropy_fwd" (per-row logsumexp, the picked logit and the reduction) and
    "cross_entropy_bwd" (softmax - onehot, scaled). When the backward itself is differentiated,
    it is composed from genesis ops instead, so every order is exact."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction, loss_dtype):
        loss, lse, total = call("cross_entropy_fwd", x, target, weight, ignore_index, reduction,
                                None if loss_dtype is x.dtype else loss_dtype.numpy_dtype,
                                device=x.device)
        ctx.ignore_index, ctx.reduction = ignore_index, reduction
        ctx.save_for_backward(x, target, weight, wrap(lse, x.device),
                              None if total is None else wrap(total, x.device))
        return wrap(loss, x.device)

    @staticmethod
    def backward(ctx, g):
        x, target, weight, lse, total = ctx.saved_tensors
        if is_grad_enabled():
            gx = _cross_entropy_grad(g, x.to(g.dtype), target, weight, ctx.ignore_index,
                                     ctx.reduction).to(x.dtype)
        else:
            gx = wrap(call("cross_entropy_bwd", g, x, target, weight, lse, total,
                           ctx.ignore_index, ctx.reduction, device=x.device), x.device)
        return gx, None, None, None, None, None


def _cross_entropy_grad(g, x, target, weight, ignore_index, reduction):
    """d loss / d x of (N, C) logits with genesis ops (differentiable to any order):
    (softmax(x) - onehot(t)) * g * weight[t] (/ the summed weights for "mean"), 0 if ignored."""
    valid = target != ignore_index
    safe = ew.where(valid, target, 0)
    w = valid.to(x.dtype)
    if weight is not None:
        w = w * weight.index_select(0, safe)
    if reduction == "mean":
        g = g / w.sum()
    scale = ew.where(valid, w * g, 0.0)
    onehot = arange(x.shape[1], device=x.device) == safe.unsqueeze(1)
    return (softmax(x, 1) - onehot.to(x.dtype)) * scale.unsqueeze(1)


def _check_same_size(input, target, op):
    if tuple(target.shape) != tuple(input.shape):
        warn(f"Using a target size ({size_text(target)}) that is different to the input "
             f"size ({size_text(input)}). This will likely lead to incorrect results due "
             "to broadcasting. Please ensure they have the same size.")


def _pointwise_loss(op, input, target, size_average, reduce, reduction, fn, node=None,
                    weight=None):
    """`fn(input, target)`, times `weight` (refused unless of the input's size, as torch's,
    once the two broadcast), reduced: recorded as the single node `node` where PyTorch's fused
    kernel makes one (MseLossBackward0, unweighted), else as the ops it is made of."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    _check_same_size(input, target, op)
    broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        return reduce_loss(fn(input, target) * weight, reduction)
    if node is None:
        return reduce_loss(fn(input, target), reduction)
    return one_node(lambda x, y: reduce_loss(fn(x, y), reduction), node, input, target)


@autocast_policy("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    def squared(x, y):
        diff = x - y
        return diff * diff
    return _pointwise_loss("mse_loss", input, target, size_average, reduce, reduction, squared,
                           "MseLossBackward0", weight)


@autocast_policy("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _pointwise_loss("l1_loss", input, target, size_average, reduce, reduction,
                           lambda x, y: ew.abs(x - y), weight=weight)


@autocast_policy("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (L1 when beta == 0)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, size_average, reduce, reduction)

    def smooth(x, y):
        diff = ew.abs(x - y)
        return ew.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)
    return _pointwise_loss("smooth_l1_loss", input, target, size_average, reduce, reduction,
                           smooth, "SmoothL1LossBackward0")


def _same_dtype_backward(loss, input, target):
    """`loss`, whose gradient is refused as torch's backward kernel refuses operands of two
    dtypes: its first operand is the one differentiated (the input where it requires grad)."""
    if input.dtype is target.dtype:
        return loss
    first, other = (input, target) if input.requires_grad else (target, input)
    return refused_backward(loss, dtype_mismatch(other.dtype, first.dtype))


@autocast_policy("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere. As torch's kernel, a delta
    that is not positive is refused, the loss is written in the input's dtype, and a target of
    another dtype refused in backward."""
    def huber(x, y):
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        diff = ew.abs(x - y)
        loss = ew.where(diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))
        return _same_dtype_backward(loss.to(x.dtype), x, y)
    return _pointwise_loss("huber_loss", input, target, None, None, reduction, huber,
                           "HuberLossBackward0", weight)


class _BinaryCrossEntropy(Function):
    """Elementwise -(y log x + (1 - y) log(1 - x)), logs clamped at -100, with PyTorch's
    gradients: g (x - y) / max(x (1 - x), 1e-12) for x, finite where x is 0 or 1 (the chain
    rule through the clamped logs gives nan there), and g (log(1 - x) - log x) for y."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        log_x = ew.clamp_min(ew.log(input), -100.0)
        log_1mx = ew.clamp_min(ew.log(1 - input), -100.0)
        return -(target * log_x + (1 - target) * log_1mx)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad
        gx = g * (x - y) / ew.clamp_min(x * (1 - x), 1e-12) if need_x else None
        gy = g * (ew.log(1 - x) - ew.log(x)) if need_y else None
        return gx, gy


@autocast_policy("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(y log x + (1 - y) log(1 - x)), logs clamped at -100 as in torch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "binary_cross_entropy")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({size_text(target)}) that is different to the "
                         f"input size ({size_text(input)}) is deprecated. Please ensure they have "
                         "the same size.")
    if target.dtype is not input.dtype:
        raise dtype_mismatch(target.dtype, input.dtype)
    if input.numel() and input.device.type == "cpu" and bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return name_node(reduce_loss(loss, reduction), "BinaryCrossEntropyBackward0")


def _check_logits_target(input, target):
    """torch's refusals of a target that is not floating at its kernel's `1 - target` (two
    bools: its 1 becomes one) and the result's write into a buffer of the target's type."""
    if target.dtype is dtypes.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if not target.dtype.is_floating_point:
        raise cast_error(input.dtype, target.dtype)


def _logits_loss(input, target, weight, pos_weight, reduction):
    """torch's kernel: (1 - y) x - (1 + (pos_weight - 1) y) log_sigmoid(x), times weight, its
    first step refusing an input that is not floating. Its steps write in place (the
    pos_weight term into log_sigmoid(x), the rest into 1 - y), so each rounds to that tensor's
    dtype and the loss has the target's."""
    log_sigmoid = logsigmoid(input)
    _check_logits_target(input, target)
    if pos_weight is not None:
        log_sigmoid = (log_sigmoid * (1 + (pos_weight - 1) * target)).to(input.dtype)
    loss = (((1 - target) * input).to(target.dtype) - log_sigmoid).to(target.dtype)
    if weight is not None:
        loss = (loss * weight).to(target.dtype)
    return reduce_loss(loss, reduction)


def _logits_input_grad(x, y, pos_weight):
    """d loss / d x before the incoming gradient, in torch's backward's steps: sigmoid(x) - y,
    or (p y + 1 - y) sigmoid(x) - p y with pos_weight p, each written into the first
    operand."""
    if pos_weight is None:
        return (ew.sigmoid(x) - y).to(x.dtype)
    py = pos_weight * y
    grad = ((py + 1) - y).to(py.dtype)
    return ((grad * ew.sigmoid(x)).to(py.dtype) - py).to(py.dtype)


def _logits_target_grad(x, pos_weight):
    """d loss / d y before the incoming gradient, in torch's backward's steps: -x, or
    log_sigmoid(-x) - p log_sigmoid(x) with pos_weight p."""
    if pos_weight is None:
        return -x
    return (logsigmoid(-x) - (logsigmoid(x) * pos_weight).to(x.dtype)).to(x.dtype)


def _scaled_grad(grad, g, weight, reduction, dtype):
    """`grad` times the incoming gradient `g` and the weight, over the element count for
    "mean", each step written into `grad` as torch's backward does; then in `dtype`."""
    numel = grad.numel()
    grad = (grad * g).to(grad.dtype)
    if weight is not None:
        grad = (grad * weight).to(grad.dtype)
    if reduction == "mean":
        grad = (grad / numel).to(grad.dtype)
    return grad.to(dtype)


class _BinaryCrossEntropyWithLogits(Function):
    """The loss of `_logits_loss` as one node, with torch's two backward formulas
    (binary_cross_entropy_with_logits_backward and its target's), rounded as their steps
    round, so half and mixed dtypes get torch's gradients. The weights come as one argument
    that is no graph edge, as torch's node has none to them."""

    @staticmethod
    def forward(ctx, input, target, weights, reduction):
        weight, pos_weight = weights
        ctx.save_for_backward(input, target, weight, pos_weight)
        ctx.reduction = reduction
        return _logits_loss(input, target, weight, pos_weight, reduction)

    @staticmethod
    def backward(ctx, g):
        x, y, weight, pos_weight = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        gx = gy = None
        if need_x:
            gx = _scaled_grad(_logits_input_grad(x, y, pos_weight), g, weight, ctx.reduction,
                              x.dtype)
        if need_y:
            gy = _scaled_grad(_logits_target_grad(x, pos_weight), g, weight, ctx.reduction,
                              y.dtype)
        return gx, gy, None, None


@autocast_policy("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits (see
    `_logits_loss`); weight and pos_weight take no gradient, as in torch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "binary_cross_entropy_with_logits")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({size_text(target)}) must be the same as input size "
                         f"({size_text(input)})")
    refuse_gradient("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    loss = _BinaryCrossEntropyWithLogits.apply(input, target, (weight, pos_weight), reduction)
    return name_node(loss, "BinaryCrossEntropyWithLogitsBackward0")


@autocast_policy("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log target - input), input holding log-probabilities.

    `reduction="batchmean"` divides the sum by the batch size (the mathematically correct KL);
    "mean" averages over all elements, as torch does (with its warning).
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"kl_div: {reduction} is not a valid value for reduction")
    if reduction == "mean":
        warn("reduction: 'mean' divides the total loss by both the batch size and the "
             "support size.'batchmean' divides only by the batch size, and aligns with "
             "the KL div math definition.'mean' will be changed to behave the same as "
             "'batchmean' in the next major release.")
    if log_target:
        loss = ew.exp(target) * (target - input)
    else:
        loss = ew.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return reduce_loss(loss, reduction)
