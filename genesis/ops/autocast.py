"""Autocast's op policy: which ops run in the low-precision type, which in float32, which in the
widest type of their inputs, per device type, as PyTorch's autocast lists them.

An op opts in with `@autocast_policy("name")`. While an autocast region is active (see
`genesis.amp.autocast`), the wrapper casts the op's floating tensor arguments (float64 ones are
left alone) before the op runs; otherwise it costs one flag read. Casts of weights (float32
leaves that require grad) to the low-precision type are cached for the region, so a weight used
by several ops, or by several steps of a loop inside one region, is cast once.
"""

import functools

from .. import dtypes
from ..autograd import autocast_state
from ..tensor import Tensor
from .copies import to_device_and_dtype

LOWER, FLOAT32, PROMOTE, BANNED = "lower", "float32", "promote", "banned"

_MATRIX_OPS = ("matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "conv1d", "conv2d",
               "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
               "scaled_dot_product_attention", "flex_attention")
_CUDA_ONLY_LOWER = ("mv", "addmv", "addr", "einsum", "chain_matmul", "multi_dot", "lstm_cell",
                    "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")
_LOSSES = ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "kl_div", "binary_cross_entropy_with_logits", "poisson_nll_loss",
           "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
           "multi_margin_loss")
_CUDA_FLOAT32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
                 "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm",
                 "group_norm", "cosine_similarity", "dist", "pdist", "cdist", "renorm",
                 "logsumexp", "interpolate", "prod", "softmax", "log_softmax", "cumprod",
                 "cumsum", "sum", "norm", "vector_norm", "matrix_norm")
_CPU_FLOAT32 = ("binary_cross_entropy", "ctc_loss", "grid_sample", "prod", "quantile",
                "nanquantile", "cdist", "trace", "cholesky", "cholesky_inverse",
                "cholesky_solve", "inverse", "pinverse", "avg_pool3d", "max_pool3d",
                "adaptive_avg_pool3d")
_PROMOTE = ("cat", "stack", "index_copy")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot",
                 "grid_sample", "tensordot", "scatter_add", "index_put")

_BANNED_MESSAGE = (
    "genesis.nn.functional.binary_cross_entropy and genesis.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using genesis.nn.functional.binary_cross_entropy_with_"
    "logits\nor genesis.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits "
    "are\nsafe to autocast.")


def _table(*groups):
    table = {}
    for names, policy in groups:
        table.update(dict.fromkeys(names, policy))
    return table


POLICIES = {
    "cuda": _table((_MATRIX_OPS + _CUDA_ONLY_LOWER, LOWER), (_LOSSES + _CUDA_FLOAT32, FLOAT32),
                   (_PROMOTE + _CUDA_PROMOTE, PROMOTE), (("binary_cross_entropy",), BANNED)),
    "cpu": _table((_MATRIX_OPS, LOWER), (_LOSSES + _CPU_FLOAT32, FLOAT32), (_PROMOTE, PROMOTE)),
}


_FLOAT64 = dtypes.float64


def eligible(x):
    """A tensor autocast may cast: floating point, not float64."""
    return isinstance(x, Tensor) and x.dtype.is_floating_point and x.dtype is not _FLOAT64


def _tensors(args):
    """The tensors among `args`, looking one level into lists and tuples (cat, stack)."""
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))
        elif isinstance(a, Tensor):
            yield a


def _cached_cast(x, dtype, state):
    """`x.to(dtype)`, remembered for the region when `x` is a float32 weight (a leaf that
    requires grad and is not a view)."""
    if not (state.cache_enabled and x.dtype is dtypes.float32 and x.requires_grad
            and x.grad_fn is None and x._base is None):
        return to_device_and_dtype(x, None, dtype)
    hit = state.cache.get(id(x))
    if hit is None:
        hit = state.cache[id(x)] = (x, to_device_and_dtype(x, None, dtype))
    return hit[1]


def _cast_all(args, kwargs, cast):
    def one(a):
        if isinstance(a, Tensor):
            return cast(a) if a.dtype.is_floating_point and a.dtype is not _FLOAT64 else a
        if isinstance(a, (list, tuple)) and any(isinstance(t, Tensor) for t in a):
            return type(a)(cast(t) if eligible(t) else t for t in a)
        return a
    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()} if kwargs else kwargs


def _target(policy, tensors, device_type, state):
    """The dtype the eligible tensors are cast to under `policy`."""
    if policy == LOWER:
        return state.dtype[device_type]
    if policy == FLOAT32:
        return dtypes.float32
    widest = None
    for t in tensors:
        if eligible(t):
            widest = t.dtype if widest is None else dtypes.promote_types(widest, t.dtype)
    return widest


def cast_arguments(name, args, kwargs):
    """`args`, `kwargs` with the tensors cast as op `name`'s policy asks on their device."""
    state = autocast_state.state()
    tensors = list(_tensors(args))
    if kwargs:
        tensors += _tensors(kwargs.values())
    for first in tensors:
        if first.dtype.is_floating_point and first.dtype is not _FLOAT64:  # eligible(first)
            break
    else:
        return args, kwargs
    device_type = first.device.type
    policy = POLICIES.get(device_type, {}).get(name)
    if policy is None or not state.enabled.get(device_type):
        return args, kwargs
    if policy == BANNED:
        raise RuntimeError(_BANNED_MESSAGE)
    if policy == FLOAT32 and kwargs.get("dtype") is not None:
        return args, kwargs
    dtype = _target(policy, tensors, device_type, state)
    if policy == LOWER:
        return _cast_all(args, kwargs, lambda t: _cached_cast(t, dtype, state))
    return _cast_all(args, kwargs, lambda t: to_device_and_dtype(t, None, dtype))


def policy_dtype(name, x):
    """The dtype op `name`'s policy casts tensor `x` to in the active autocast region of x's
    device, or None where it leaves x alone: for an op that reads half tensors as float32
    itself, instead of taking a float32 copy."""
    state = autocast_state.state()
    if not (state.active and eligible(x) and state.enabled.get(x.device.type)):
        return None
    policy = POLICIES.get(x.device.type, {}).get(name)
    return None if policy in (None, BANNED) else _target(policy, (x,), x.device.type, state)


def autocast_policy(name):
    """Decorator: op `name` follows autocast's policy for its device type (see POLICIES); ops
    that no policy names are returned as they are."""
    state = autocast_state.state()

    def decorate(fn):
        if not any(name in table for table in POLICIES.values()):
            return fn

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if state.active:
                args, kwargs = cast_arguments(name, args, kwargs)
            return fn(*args, **kwargs)
        return op
    return decorate
