"""Activation functions: thin wrappers over genesis ops with torch.nn.functional's signatures."""

from ... import ops
from ...ops import activation as act
from ...ops import elementwise as ew
from ._utils import softmax_dim


def _maybe_inplace(input, result, inplace):
    """Write `result` into `input` when `inplace`, as the torch functions with `inplace=` do."""
    return input.copy_(result) if inplace else result


def relu(input, inplace=False):
    return input.relu_() if inplace else ew.relu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, negative_slope * x otherwise."""
    return _maybe_inplace(input, ew.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _maybe_inplace(input, ew.where(input > 0, input, alpha * ew.expm1(input)), inplace)


def gelu(input, approximate="none"):
    return act.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _maybe_inplace(input, act.silu(input), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return act.softplus(input, beta=beta, threshold=threshold)


def tanh(input):
    return ew.tanh(input)


def sigmoid(input):
    return ew.sigmoid(input)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -act.softplus(-input)


def _softmax_like(fn, name, input, dim, dtype):
    if dim is None:
        dim = softmax_dim(name, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return fn(input, dim)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_like(ops.reduce.softmax, "softmax", input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_like(ops.reduce.softmax, "softmin", -input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_like(ops.reduce.log_softmax, "log_softmax", input, dim, dtype)
