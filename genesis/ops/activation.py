"""Activation functions as elementwise ops: one kernel forward, PyTorch's formula backward.

These are the numerics behind `genesis.nn.functional` (gelu, silu, softplus, elu...). Each is a
`UnarySpec` (see `elementwise`), so half types compute in float32 and round once, and the
derivatives, written with genesis ops, are themselves differentiable.
"""

import math

from .. import dtypes
from ..autograd.function import name_node
from ..tensor import Tensor
from .autocast import autocast_policy
from .common import rounded_scalar
from .elementwise import UnarySpec, abs, erf, exp, sigmoid, tanh, where

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _gelu_grad(g, x, y):
    cdf = 0.5 * (1 + erf(x * _INV_SQRT_2))
    return g * (cdf + x * (_INV_SQRT_2PI * exp(x * x * -0.5)))


def _gelu_tanh_grad(g, x, y):
    inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    t = tanh(inner)
    d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


def _silu_grad(g, x, y):
    s = sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _mish_grad(g, x, y):
    t = tanh(softplus(x))
    return g * (t + x * sigmoid(x) * (1 - t * t))


def _elu_grad(g, x, y, alpha, scale, input_scale):
    """The exponent is clipped at 0 through a mask, so that this gradient's own derivative
    vanishes at x = 0, where PyTorch's elu_double_backward masks it with x < 0."""
    exponent = where(x < 0, x, 0.0) * input_scale
    return where(x > 0, g * scale, g * (scale * alpha * input_scale) * exp(exponent))


def _inside(x, low, high):
    return (x > low) & (x < high)


def _shrink_grad(g, x, y, lambd):
    """Zero on [-lambd, lambd] with lambd rounded to x's type (torch's shrink backward), as the
    comparisons round it."""
    return where((x >= -lambd) & (x <= lambd), 0.0, g)


def _hardswish_grad(g, x, y):
    return where(x <= -3, 0.0, where(x < 3, g * (x / 3 + 0.5), g))


_SPECS = {spec.name: spec for spec in (
    UnarySpec("gelu", _gelu_grad, rejects="bi", fused=True, backward_kernel="gelu_backward",
              one_node_backward=True),
    UnarySpec("gelu_tanh", _gelu_tanh_grad, rejects="bi", fused=True,
              backward_kernel="gelu_tanh_backward", one_node_backward=True),
    UnarySpec("silu", _silu_grad, rejects="bi", fused=True, backward_kernel="silu_backward"),
    UnarySpec("mish", _mish_grad, rejects="bi", fused=True),
    UnarySpec("softplus", lambda g, x, y, beta, threshold: where(
        x * beta > threshold, g, g * sigmoid(x * beta)), rejects="bi", fused=True,
        one_node_backward=True),
    UnarySpec("log_sigmoid", lambda g, x, y: g * sigmoid(-x), rejects="bi", fused=True,
              one_node_backward=True),
    UnarySpec("elu", _elu_grad, rejects="bi", fused=True, one_node_backward=True),
    UnarySpec("leaky_relu", lambda g, x, y, negative_slope: where(
        x > 0, g, g * negative_slope), rejects="bi", fused=True, one_node_backward=True),
    UnarySpec("hardtanh", lambda g, x, y, low, high: where(_inside(x, low, high), g, 0.0),
              promote=False, kernel="clamp", fused=True, one_node_backward=True),
    UnarySpec("hardsigmoid", lambda g, x, y: where(_inside(x, -3, 3), g / 6, 0.0),
              rejects="bi", fused=True, one_node_backward=True, double_backward=False),
    UnarySpec("hardswish", _hardswish_grad, rejects="bi", fused=True, one_node_backward=True),
    UnarySpec("hardshrink", _shrink_grad, rejects="bi", one_node_backward=True),
    UnarySpec("softshrink", _shrink_grad, rejects="bi", one_node_backward=True),
)}


def derivative(name):
    """`g, x, y -> g * act'(x)` of activation `name` ("gelu", "gelu_tanh", "silu"...), written
    with genesis ops (so it is itself differentiable)."""
    return _SPECS[name].derivative


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the normal CDF; `approximate="tanh"` uses GPT-2's tanh form."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    return _SPECS["gelu" if approximate == "none" else "gelu_tanh"](input)


_SPECS["gelu_tanh"].node_name = "GeluBackward0"  # PyTorch names both forms after gelu


def silu(input):
    """x * sigmoid(x)."""
    return _SPECS["silu"](input)


def mish(input):
    """x * tanh(softplus(x))."""
    return _SPECS["mish"](input)


@autocast_policy("softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return _SPECS["softplus"](input, beta=beta, threshold=threshold)


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow."""
    return _SPECS["log_sigmoid"](input)


def elu(input, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _SPECS["elu"](input, alpha=alpha, scale=1.0, input_scale=1.0)


def selu(input):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _SPECS["elu"](input, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def celu(input, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError (alpha must not be 0)")
    return name_node(_SPECS["elu"](input, alpha=alpha, scale=1.0, input_scale=1.0 / alpha),
                     "CeluBackward0")


def leaky_relu(input, negative_slope=0.01):
    """x for x > 0, negative_slope * x otherwise."""
    return _SPECS["leaky_relu"](input, negative_slope=negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """x clipped to [min_val, max_val]; the gradient passes strictly inside only."""
    if isinstance(input, Tensor):
        if input.dtype is dtypes.bool_:
            raise RuntimeError("hardtanh: Bool inputs not supported for hardtanh")
        if input.dtype is dtypes.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("hardtanh: cannot do hardtanh on an unsigned type with negative "
                               "limits")
    return _SPECS["hardtanh"](input, low=min_val, high=max_val)


def relu6(input):
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input):
    """min(max(x + 3, 0), 6) / 6."""
    return _SPECS["hardsigmoid"](input)


def hardswish(input):
    """x * hardsigmoid(x)."""
    return _SPECS["hardswish"](input)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0; lambd rounded to input's type, as torch compares."""
    if isinstance(input, Tensor) and input.dtype.is_floating_point:
        lambd = rounded_scalar(input.dtype, lambd)
    return _SPECS["hardshrink"](input, lambd=lambd)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")
    return _SPECS["softshrink"](input, lambd=lambd)


@autocast_policy("prelu")
def prelu(input, weight):
    """x for x > 0, weight * x otherwise; a weight of C values applies per channel (dim 1)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.ndim != 1 or count != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {count} and channel size = "
                               f"{channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((1, count) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return name_node(where(input > 0, input, weight * input), "PreluKernelBackward0")


def softsign(input):
    """x / (1 + |x|)."""
    return input / (1 + abs(input))


class ActivationMethods:
    """Tensor methods of this family."""

    hardshrink = hardshrink
    prelu = prelu


__all__ = ["gelu", "silu", "mish", "softplus", "logsigmoid", "elu", "selu", "celu", "leaky_relu",
           "hardtanh", "relu6", "hardsigmoid", "hardswish", "hardshrink", "softsign", "prelu"]
