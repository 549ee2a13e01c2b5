"""Margin, ranking and embedding losses with torch.nn.functional's signatures and reductions:
hinge, soft margin, cosine embedding, triplet and the multi-class / multi-label margin losses."""

from ... import dtypes
from ...autograd.function import Function, name_node
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from ...ops.common import broadcast_shapes
from ...ops.ranges import arange
from ._utils import (cast_error, check_reduction, legacy_reduction, reduce_loss, refuse_gradient,
                     size_text)
from .activation import logsigmoid
from .distance import pairwise_distance


def _reduction(size_average, reduce, reduction, op):
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    return reduction


@autocast_policy("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin): y = 1 ranks x1 above x2, y = -1 below."""
    reduction = _reduction(size_average, reduce, reduction, "margin_ranking_loss")
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {size_text(input1)}, input2: "
                           f"{size_text(input2)}, target: {size_text(target)} ")
    return reduce_loss(ew.clamp_min(-target * (input1 - input2) + margin, 0), reduction)


@autocast_policy("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y = 1, max(0, margin - x) where y = -1 (torch adds both for other y)."""
    reduction = _reduction(size_average, reduce, reduction, "hinge_embedding_loss")
    margin_part = ew.where(target != 1, ew.clamp_min(margin - input, 0), 0)
    self_part = ew.where(target != -1, input, 0)
    return reduce_loss(margin_part + self_part, reduction)


@autocast_policy("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)), the logistic loss of labels y in {1, -1}. The target broadcasts to
    the input's shape, not past it: torch writes the loss into an input-shaped tensor, so an
    (N, 1) input against an (N,) target is refused, not an (N, N) loss."""
    reduction = _reduction(size_average, reduce, reduction, "soft_margin_loss")
    refuse_gradient("soft_margin_loss", target=target)
    return name_node(_SoftMarginLoss.apply(input, (target,), reduction),
                     "SoftMarginLossBackward0")


class _SoftMarginLoss(Function):
    """log(1 + exp(-input * target)) reduced, as one node with an edge to the input alone (the
    target, which takes no gradient, comes in a tuple), differentiated by torch's formula
    -norm target z / (1 + z) g with z = exp(-target input), in its order of operations (so a
    half input's gradient rounds as torch's), in the input's dtype."""

    @staticmethod
    def forward(ctx, input, targets, reduction):
        (target,) = targets
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        return reduce_loss(ew.log1p(ew.exp(_margins(input, target))), reduction)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        norm = 1 / x.numel() if ctx.reduction == "mean" else 1.0
        z = ew.exp(-y * x)
        return (-norm * y * z / (1 + z) * g).to(x.dtype), None, None


def _margins(input, target):
    """-input * target in the input's dtype, as torch's soft margin kernel writes it into a
    tensor of the input's type and shape (neg, then mul_), refusing what those steps refuse: a
    bool input (neg), a target broadcasting past the input, and an integer input, which cannot
    hold the product or the exp after it."""
    negated = -input
    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    if not input.dtype.is_floating_point:
        result = dtypes.promote_types(input.dtype, target.dtype)
        raise cast_error(result if result.is_floating_point else dtypes.get_default_dtype(),
                         input.dtype)
    return (negated * target).to(input.dtype)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class binary logistic losses of 0/1 targets, averaged over the classes (last dim)."""
    reduction = _reduction(size_average, reduce, reduction, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    return reduce_loss(loss.sum(class_dim) / input.shape[class_dim], reduction)


def _check_cosine_dims(input1, input2, target):
    """A 0-D or 1-D target and inputs of one dim more, refused in torch's kernel's words."""
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")


@autocast_policy("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    reduction = _reduction(size_average, reduce, reduction, "cosine_embedding_loss")
    _check_cosine_dims(input1, input2, target)
    dim = target.ndim
    eps = 1e-12
    dot = (input1 * input2).sum(dim)
    square1 = (input1 * input1).sum(dim) + eps
    square2 = (input2 * input2).sum(dim) + eps
    cos = dot / ew.sqrt(square1 * square2)
    positive = ew.where(target == 1, 1 - cos, 0)
    negative = ew.where(target == -1, ew.clamp_min(cos - margin, 0), 0)
    return reduce_loss(positive + negative, reduction)


def _check_long_target(target, op):
    """Class indices in int64, the one dtype torch's margin-loss kernels take."""
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: expected scalar type Long but found "
                           f"{dtypes.scalar_type_name(target.dtype)}")


def _check_class_targets(input, target, op):
    """(N, C) or (C,) input and (N,) or () int64 class indices in [0, C)."""
    _check_long_target(target, op)
    if input.ndim not in (1, 2) or input.ndim == 2 and input.shape[1] == 0:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    batch = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.numel() != batch:
        raise RuntimeError(f"{op}: target tensor should be 1-D with size equal to the number of "
                           f"input samples (batch size). Expected target size [{batch}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    classes = input.shape[-1]
    if target.numel() and target.device.type == "cpu" and bool(
            ((target < 0) | (target >= classes)).any()):
        raise RuntimeError("target out of range")


@autocast_policy("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p (times weight[y]), divided by C."""
    reduction = _reduction(size_average, reduce, reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _check_class_targets(input, target, "multi_margin_loss")
    rows = input.reshape(-1, input.shape[-1])
    index = target.reshape(-1, 1)
    picked = rows.gather(1, index)
    hinge = ew.clamp_min(margin - picked + rows, 0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight.to(rows.dtype).index_select(0, index.reshape(-1)).unsqueeze(1)
    others = arange(rows.shape[1], device=rows.device) != index
    loss = ew.where(others, hinge, 0).sum(1) / rows.shape[1]
    return name_node(reduce_loss(loss.reshape(target.shape), reduction),
                     "MultiMarginLossBackward0")


def _label_sets(target):
    """For (N, C) multilabel targets (class indices ended by the first -1): which entries are
    labels (before the first -1) and the (N, C) mask of the classes they name."""
    listed = (target >= 0).to(dtypes.int64).cumprod(1).to(dtypes.bool_)
    safe = ew.where(listed, target, 0)
    named = listed.to(dtypes.int64).new_zeros(tuple(target.shape)).scatter_add(
        1, safe, listed.to(dtypes.int64)) > 0
    return listed, safe, named


@autocast_policy("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over labels j and non-labels i of max(0, 1 - (x[y_j] - x[i])), divided by C; `target`
    lists each sample's labels, ended by the first -1."""
    reduction = _reduction(size_average, reduce, reduction, "multilabel_margin_loss")
    if input.ndim not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    _check_long_target(target, "multilabel_margin_loss")
    classes = input.shape[-1]
    rows, labels = input.reshape(-1, classes), target.reshape(-1, classes)
    if labels.numel() and labels.device.type == "cpu" and bool(
            ((labels < -1) | (labels >= classes)).any()):
        raise RuntimeError("multilabel_margin_loss: argument #2 'target' is out of range")
    listed, safe, named = _label_sets(labels)
    picked = rows.gather(1, safe)
    hinge = ew.clamp_min(1 - (picked.unsqueeze(2) - rows.unsqueeze(1)), 0)
    pairs = listed.unsqueeze(2) & ~named.unsqueeze(1)
    loss = ew.where(pairs, hinge, 0).sum((1, 2)) / classes
    return name_node(reduce_loss(loss.reshape(input.shape[:-1]), reduction),
                     "MultilabelMarginLossBackward0")


@autocast_policy("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the pairwise p-norm distance; `swap` takes the
    smaller of d(a, n) and d(p, n)."""
    reduction = _reduction(size_average, reduce, reduction, "triplet_margin_loss")
    _check_triplet_dims(anchor, positive, negative)
    distance = lambda x, y: pairwise_distance(x, y, p, eps)  # noqa: E731
    return _triplet(anchor, positive, negative, distance, margin, swap, reduction)


def _check_triplet_dims(anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")


def _triplet(anchor, positive, negative, distance, margin, swap, reduction):
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = ew.minimum(dist_neg, distance(positive, negative))
    return reduce_loss(ew.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any `distance_function` (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin,
                    swap, reduction)
