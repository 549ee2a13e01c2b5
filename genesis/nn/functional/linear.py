"""Affine maps: `linear` (x A^T + b) and `bilinear` (x1^T A x2 + b).

Where a backend has a fused kernel ("linear_act": the CUDA backend), `linear` runs as one
kernel with the bias added in the matmul's epilogue, and `linear_activation` adds an activation
(relu, gelu, gelu_tanh, silu) to that epilogue too. Elsewhere both compose matmul, add and the
activation, unchanged. On the GPU their float32 products run TF32 per
genesis.backends.cuda.matmul.allow_tf32, or per linear_activation's `allow_tf32` (the recurrent
layers pass genesis.backends.cudnn.allow_tf32), in the backward as in the forward.
"""

import math

from ... import dtypes
from ...autograd.function import Function, name_node, records
from ...autograd.grad_mode import is_grad_enabled
from ...dispatch import has_kernel
from ...ops import elementwise as ew
from ...ops import linalg
from ...ops import activation as act
from ...ops.autocast import autocast_policy
from ...ops.activation import derivative
from ...ops.common import call, wrap

ACTIVATIONS = (None, "relu", "gelu", "gelu_tanh", "silu")
_FUSED_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64)


def shape_mismatch(input_shape, weight_shape):
    """torch's words for an input whose last dim is not the weight's, or a 0-d operand: the
    product's rows (the input's leading dims flattened) by columns against weight^T's."""
    if not input_shape or not weight_shape:
        return (f"both arguments to linear need to be at least 1D, but they are "
                f"{len(input_shape)}D and {len(weight_shape)}D")
    rows = math.prod(input_shape[:-1])
    out = f"x{weight_shape[0]}" if len(weight_shape) > 1 else ""
    return (f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input_shape[-1]} and "
            f"{weight_shape[-1]}{out})")


def _composed(input, weight, bias):
    """input @ weight^T + bias with genesis ops (differentiable to any order)."""
    if input.ndim == 0 or weight.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear: {shape_mismatch(input.shape, weight.shape)}")
    if input.ndim > 2:
        out = linalg.matmul(input.reshape(-1, input.shape[-1]), weight.t())
        out = out.reshape(*input.shape[:-1], weight.shape[0])
    else:
        out = linalg.matmul(input, weight.t())
    return out if bias is None else out + bias


def _fusable(input, weight, bias):
    """One fused kernel can compute this layer: a backend kernel, one dtype and device, a
    matrix weight, a vector bias of its rows' count."""
    dtype, device = input.dtype, input.device
    if not (has_kernel("linear_act", device.type) and dtype in _FUSED_DTYPES
            and weight.dtype is dtype and weight.device == device
            and (bias is None or bias.dtype is dtype and bias.device == device)):
        return False
    shape, weight_shape = input._data.shape, weight._data.shape
    return (len(weight_shape) == 2 and len(shape) >= 1 and shape[-1] == weight_shape[1]
            and (bias is None or bias._data.shape == weight_shape[:1]))


@autocast_policy("linear")
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias over the last dimension of `input`."""
    if _fusable(input, weight, bias):
        out = _LinearAct.run(input, weight, bias, None, None)
    else:
        out = _composed(input, weight, bias)
    return name_node(out, _linear_node(input.ndim, bias is not None))


def _linear_node(ndim, has_bias):
    """PyTorch's node name for linear: addmm (or mm) for a matrix input, else the reshape that
    ends its product."""
    if ndim == 2:
        return "AddmmBackward0" if has_bias else "MmBackward0"
    if has_bias:
        return "ViewBackward0"
    return "SqueezeBackward4" if ndim == 1 else "UnsafeViewBackward0"


@autocast_policy("linear")
def linear_activation(input, weight, bias=None, activation=None, allow_tf32=None):
    """act(input @ weight.T + bias), `activation` one of None, "relu", "gelu", "gelu_tanh",
    "silu": one kernel where the backend fuses it, the composed ops elsewhere. `allow_tf32`:
    whether the fused kernels' float32 products, forward and backward, run TF32 (None:
    genesis.backends.cuda.matmul.allow_tf32)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"linear_activation: activation must be one of {ACTIVATIONS}, "
                         f"got {activation!r}")
    if _fusable(input, weight, bias):
        return _LinearAct.run(input, weight, bias, activation, allow_tf32)
    return _activate(_composed(input, weight, bias), activation)


def _activate(z, activation):
    if activation is None:
        return z
    if activation == "gelu_tanh":
        return act.gelu(z, approximate="tanh")
    return {"relu": ew.relu, "gelu": act.gelu, "silu": act.silu}[activation](z)


class _LinearAct(Function):
    """act(x @ W^T + b) through the backend's fused kernel, which also returns the
    pre-activation z when the backward needs it. Backward: dz = g * act'(z), then
    dx = dz @ W, dW = dz^T x (batch folded into one product), db = sum(dz); when the backward
    itself is differentiated, z is recomputed with genesis ops so every order is exact;
    otherwise the three products run as one backend call ("linear_act_backward"), with the
    forward's `allow_tf32` (None: the matmul flag as each runs)."""

    @classmethod
    def run(cls, x, weight, bias, activation, allow_tf32):
        """apply, or the values alone when no graph records the call."""
        if records(x, weight, bias):
            return cls.apply(x, weight, bias, activation, allow_tf32)
        return cls.compute(x, weight, bias, activation, False, allow_tf32)[0]

    @staticmethod
    def compute(x, weight, bias, activation, keep, allow_tf32):
        """(act(x @ W^T + b), with `keep` the pre-activation else None) from the kernel."""
        y, z = call("linear_act", x, weight, bias, activation, keep, allow_tf32,
                    device=x.device)
        return wrap(y, x.device), None if z is None else wrap(z, x.device)

    @staticmethod
    def forward(ctx, x, weight, bias, activation, allow_tf32):
        keep = activation is not None and any(ctx.needs_input_grad[:3])
        y, z = _LinearAct.compute(x, weight, bias, activation, keep, allow_tf32)
        ctx.activation, ctx.allow_tf32 = activation, allow_tf32
        ctx.save_for_backward(x, weight, bias, z)
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight, bias, z = ctx.saved_tensors
        differentiable = is_grad_enabled()
        if ctx.activation is not None:
            if differentiable:
                g = _activation_grad(g, _composed(x, weight, bias), ctx.activation)
            else:
                g = _activation_backward(g, z, ctx.activation)
        needs = ctx.needs_input_grad[:2] + (bias is not None and ctx.needs_input_grad[2],)
        if not differentiable and has_kernel("linear_act_backward", x.device.type):
            grads = call("linear_act_backward", g, x, weight, *needs, ctx.allow_tf32,
                         device=x.device)
            return tuple(None if a is None else wrap(a, x.device) for a in grads) + (None, None)
        n, k = weight.shape
        gx = linalg.matmul(g, weight) if needs[0] else None
        g2 = g.reshape(-1, n)
        gw = linalg.matmul(g2.mT, x.reshape(-1, k)) if needs[1] else None
        gb = g2.sum(0) if needs[2] else None
        return gx, gw, gb, None, None


def _activation_backward(g, z, activation):
    """g * act'(z) in one kernel (the activation's backward kernel; float32 inside for half
    types, rounded once), for a backward that records no graph."""
    if activation == "relu":
        return ew.where(z > 0, g, 0.0)
    return ew.elementwise(f"{activation}_backward", g, z)


def _activation_grad(g, z, activation):
    """g * act'(z) with genesis ops, so the backward itself is differentiable: the activation's
    own derivative (ops/activation.py), in float32 for half types and rounded once."""
    if activation == "relu":
        return ew.where(z > 0, g, 0.0)
    if z.dtype not in (dtypes.float16, dtypes.bfloat16):
        return derivative(activation)(g, z, None)
    return derivative(activation)(g.float(), z.float(), None).to(z.dtype)


@autocast_policy("bilinear")
def _check_bilinear(input1, input2, weight, bias):
    """torch's refusals, in its order: inputs of other ranks or leading dims, an input's last dim
    or the bias's size not the weight's."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for dim, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: "
                               f"got {a} and {b}")
    for name, size, expected in (("input1", input1.shape[-1], weight.shape[1]),
                                 ("input2", input2.shape[-1], weight.shape[2]),
                                 ("bias", None if bias is None else bias.shape[0],
                                  weight.shape[0])):
        if size is not None and size != expected:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {size} "
                               f"but expected {expected}")


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    out_features, in1, in2 = weight.shape
    _check_bilinear(input1, input2, weight, bias)
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    mixed = linalg.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    out = (mixed.reshape(-1, out_features, in2) * x2.unsqueeze(1)).sum(-1)
    out = out.reshape(*lead, out_features)
    return out if bias is None else out + bias
