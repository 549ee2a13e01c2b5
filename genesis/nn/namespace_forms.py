"""The `genesis.*` forms of nn.functional's ops, as PyTorch's torch namespace has them: ATen's
argument orders (`embedding(weight, indices)`, `batch_norm(input, weight, bias, ...)`), required
arguments where ATen has no defaults (`dropout(input, p, train)`), reductions as integers (0 none,
1 mean, 2 sum; none by default, as PyTorch's torch-namespace losses are), and the cell steps of the
recurrent layers. Each one calls the functional form."""

from ..ops import reduce
from . import functional as F
from .functional import recurrent as R
from .functional.dropout import _feature_dropout
from .functional.sparse import _renorm_rows

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op, reduction):
    """The functional form's reduction name of ATen's integer `reduction`."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTIONS[reduction]


def _stride(stride):
    """ATen's empty stride (its default) means the kernel size, as None does in F."""
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) else stride


def dropout(input, p, train):
    """F.dropout(input, p, training=train)."""
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    """In-place `dropout`."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """F.alpha_dropout(input, p, training=train)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place `alpha_dropout`."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """F.feature_alpha_dropout(input, p, training=train)."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """In-place `feature_alpha_dropout`."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    """Dropout of whole channels of an (N, C, ...) input: one draw per (N, C)."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    """In-place `feature_dropout`."""
    return _feature_dropout(input, p, train, True)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `indices` (F.embedding with its arguments swapped; a negative
    padding_idx means none)."""
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place, the rows of `input` at `indices` whose norm exceeds `max_norm`."""
    _renorm_rows(input, indices, max_norm, norm_type)
    return input


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """F.batch_norm in ATen's argument order (cudnn_enabled is ignored)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """F.instance_norm in ATen's argument order (cudnn_enabled is ignored)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def constant_pad_nd(input, pad, value=0):
    """F.pad with a constant."""
    return F.pad(input, pad, "constant", value)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """F.max_pool1d (an empty stride is the kernel size)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """F.max_pool2d (an empty stride is the kernel size)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """F.max_pool3d (an empty stride is the kernel size)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """F.avg_pool1d (an empty stride is the kernel size)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """(values, indices) of F.adaptive_max_pool1d."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """F.rrelu; the slopes come from the global generator."""
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In-place `rrelu`."""
    _no_generator("rrelu_", generator)
    return F.rrelu(input, lower, upper, training, inplace=True)


def _no_generator(op, generator):
    if generator is not None:
        raise NotImplementedError(f"{op}(): a generator argument is not supported; the slopes "
                                  "are drawn from the global generator")


def kl_div(input, target, reduction=0, *, log_target=False):
    """F.kl_div with an integer reduction (1 is the mean over all elements, without the
    functional form's warning about it)."""
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    reduction = _reduction("kl_div", reduction)
    return loss if reduction == "none" else getattr(loss, reduction)()


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """F.binary_cross_entropy_with_logits with an integer reduction."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.cosine_embedding_loss with an integer reduction."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """F.hinge_embedding_loss with an integer reduction."""
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.margin_ranking_loss with an integer reduction."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=0):
    """F.triplet_margin_loss with an integer reduction."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss with every argument given and an integer reduction."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """F.ctc_loss with an integer reduction."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The convolution (transposed when `transposed`) of as many spatial dimensions as
    `weight` has beyond its first two: conv1d/2d/3d or conv_transpose1d/2d/3d."""
    spatial = weight.ndim - 2
    if spatial not in (1, 2, 3):
        raise RuntimeError(f"convolution(): expected a weight of 3, 4 or 5 dimensions, got "
                           f"shape {list(weight.shape)}")
    if transposed:
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[spatial - 1]
        return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)
    conv = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    return conv(input, weight, bias, stride, padding, dilation, groups)


_INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample with its modes as integers: interpolation 0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection."""
    return F.grid_sample(input, grid, _INTERPOLATION_MODES[interpolation_mode],
                         _PADDING_MODES[padding_mode], align_corners)


def affine_grid_generator(theta, size, align_corners):
    """F.affine_grid with align_corners given."""
    return F.affine_grid(theta, size, align_corners)


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of `v` over every dimension but `dim`, kept as size-1 dimensions (weight
    norm's g); dim=-1 means the norm of the whole tensor, as in PyTorch."""
    if dim == -1:
        return reduce.vector_norm(v, pow)
    keep = dim % v.ndim
    return reduce.vector_norm(v, pow, dim=[d for d in range(v.ndim) if d != keep], keepdim=True)


def _check_cell(op, input, hx):
    for h in hx:
        if h.ndim != input.ndim or h.shape[0] != input.shape[0]:
            raise RuntimeError(f"{op}(): expected hidden state of batch size {input.shape[0]}, "
                               f"got shape {list(h.shape)} for input of shape "
                               f"{list(input.shape)}")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with tanh: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell("rnn_tanh_cell", input, (hx,))
    return R.rnn_step(F.linear(input, w_ih, b_ih), (hx,), w_hh, b_hh, "tanh")[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with relu: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell("rnn_relu_cell", input, (hx,))
    return R.rnn_step(F.linear(input, w_ih, b_ih), (hx,), w_hh, b_hh, "relu")[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step from hx = (h, c); returns (h', c')."""
    _check_cell("lstm_cell", input, hx)
    return R.lstm_step(F.linear(input, w_ih, b_ih), tuple(hx), w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step; returns h'."""
    _check_cell("gru_cell", input, (hx,))
    return R.gru_step(F.linear(input, w_ih, b_ih), (hx,), w_hh, b_hh)[0]


adaptive_avg_pool1d = F.adaptive_avg_pool1d
grid_sampler_2d = grid_sampler_3d = grid_sampler
bilinear = F.bilinear
celu_ = F.celu_
channel_shuffle = F.channel_shuffle
conv3d = F.conv3d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
conv_transpose3d = F.conv_transpose3d
cosine_similarity = F.cosine_similarity
pairwise_distance = F.pairwise_distance
pdist = F.pdist
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
selu_ = F.selu_
threshold = F.threshold
threshold_ = F.threshold_

__all__ = [
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "embedding",
    "embedding_renorm_", "batch_norm", "instance_norm", "constant_pad_nd", "max_pool1d",
    "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "rrelu", "rrelu_", "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss",
    "ctc_loss", "convolution", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
    "affine_grid_generator", "norm_except_dim", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell",
    "gru_cell",
    "bilinear", "celu_", "channel_shuffle", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "selu_", "threshold", "threshold_"]
