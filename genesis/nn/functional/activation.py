"""Activation functions: thin wrappers over genesis ops with torch.nn.functional's signatures.

The elementwise ones run one kernel each (genesis.ops.activation); `inplace=True` and the `*_`
forms compute out of place and write the input, as in-place tensor ops do (so a failed call
leaves the input as it was and autograd sees the write).
"""

from ... import dtypes, ops
from ...autograd.function import Function, name_node, records
from ...autograd.one_node import one_node
from ...ops import activation as act
from ...ops import creation
from ...ops import elementwise as ew
from ...ops.inplace import snapshot_for_graph, write_result
from ._utils import refused_backward, softmax_dim


def _apply(fn, input, inplace, name, *args, negative_slope=False):
    """fn(input, *args), written into `input` when `inplace` (the in-place op `name`).
    `negative_slope`: the op's slope is negative, which PyTorch's in-place backward refuses."""
    if not inplace:
        return fn(input, *args)
    result = fn(snapshot_for_graph(input), *args)
    if negative_slope:
        result = refused_backward(result, RuntimeError(_NEGATIVE_SLOPE_ERRORS[name]))
    out = write_result(input, result, name)
    return name_node(out, _INPLACE_NODES[name]) if name in _INPLACE_NODES and \
        out._base is None else out


# PyTorch's own backward overloads of these in-place activations (a view written in place
# shows its view node instead).
_INPLACE_NODES = {"elu_": "EluBackward1", "selu_": "EluBackward1", "celu_": "CeluBackward1",
                  "leaky_relu_": "LeakyReluBackward1", "threshold_": "ThresholdBackward1",
                  "rrelu_": "RreluWithNoiseBackward1"}

# PyTorch's backward of these in-place ops reads the input's sign off the result, so its
# gradient (and tangent) refuses a negative slope (elu's alpha, leaky_relu's negative_slope).
_NEGATIVE_SLOPE = ("In-place {} backward calculation is triggered with a negative slope which "
                   "is not supported. This is caused by calling in-place forward function with "
                   "a negative slope, please call out-of-place version instead.")
_LEAKY_NEGATIVE_SLOPE = _NEGATIVE_SLOPE.format("leakyReLu") + (
    " File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place "
    "leakRelu backward calculation with negative slope")
_NEGATIVE_SLOPE_ERRORS = {"elu_": _NEGATIVE_SLOPE.format("elu"),
                          "celu_": _NEGATIVE_SLOPE.format("elu"),
                          "leaky_relu_": _LEAKY_NEGATIVE_SLOPE, "rrelu_": _LEAKY_NEGATIVE_SLOPE}


def _inplace_form(fn, name):
    """The `F.name_` form of `fn`: fn with inplace=True."""
    def inplace_fn(input, *args, **kwargs):
        return fn(input, *args, inplace=True, **kwargs)
    inplace_fn.__name__ = name
    inplace_fn.__doc__ = f"In-place `{fn.__name__}`."
    return inplace_fn


def relu(input, inplace=False):
    return input.relu_() if inplace else ew.relu(input)


def relu6(input, inplace=False):
    """min(max(x, 0), 6)."""
    return _apply(act.relu6, input, inplace, "relu6_")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(act.hardtanh, input, inplace, "hardtanh_", min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, negative_slope * x otherwise."""
    return _apply(act.leaky_relu, input, inplace, "leaky_relu_", negative_slope,
                  negative_slope=negative_slope < 0)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _apply(act.elu, input, inplace, "elu_", alpha, negative_slope=alpha < 0)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _apply(act.selu, input, inplace, "selu_")


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return _apply(act.celu, input, inplace, "celu_", alpha, negative_slope=alpha < 0)


def gelu(input, approximate="none"):
    return act.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _apply(act.silu, input, inplace, "silu_")


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _apply(act.mish, input, inplace, "mish_")


def hardsigmoid(input, inplace=False):
    """min(max(x + 3, 0), 6) / 6."""
    return _apply(act.hardsigmoid, input, inplace, "hardsigmoid_")


def hardswish(input, inplace=False):
    """x * hardsigmoid(x)."""
    return _apply(act.hardswish, input, inplace, "hardswish_")


def softplus(input, beta=1.0, threshold=20.0):
    return act.softplus(input, beta=beta, threshold=threshold)


def tanh(input):
    return ew.tanh(input)


def sigmoid(input):
    return ew.sigmoid(input)


def logsigmoid(input):
    """log(sigmoid(x)), stable for large |x|."""
    return act.logsigmoid(input)


def softsign(input):
    """x / (1 + |x|)."""
    return act.softsign(input)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - ew.tanh(input)


def _above(input, threshold):
    """input > threshold; PyTorch's kernel compares a half input in float32 with the threshold
    unrounded."""
    wide = dtypes.float32 if input.dtype in dtypes.half_dtypes else None
    return ew.elementwise("gt", input, threshold, dtype=wide)


class _Threshold(Function):
    """`value` where input <= threshold (cast to the input's dtype, as `where` does). Its
    gradient is torch's threshold_backward of the gradient and the input: recorded, one node
    with an edge to each (the input's derivative zero)."""

    saved_names = ("self",)

    @staticmethod
    def forward(ctx, input, threshold, value):
        ctx.node_name, ctx.threshold = "ThresholdBackward0", threshold
        ctx.save_for_backward(input)
        return ew.where(_above(input, threshold), input, value)

    @staticmethod
    def backward(ctx, grad):
        (input,) = ctx.saved_tensors
        threshold = ctx.threshold
        return one_node(lambda grad, input: ew.where(_above(input, threshold), grad, 0),
                        "ThresholdBackwardBackward0", grad, input), None, None


def _threshold(input, threshold, value):
    """`value` where input <= threshold, recorded as one node when the graph records it."""
    if records(input):
        return _Threshold.apply(input, threshold, value)
    return ew.where(_above(input, threshold), input, value)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else `value`."""
    return _apply(_threshold, input, inplace, "threshold_", threshold, value)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return act.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return act.softshrink(input, lambd)


prelu = act.prelu


def _rrelu(input, lower, upper, training):
    if not training:
        return name_node(act.leaky_relu(input, (lower + upper) / 2), "RreluWithNoiseBackward0")
    slope = creation.empty(tuple(input.shape), dtype=input.dtype, device=input.device)
    slope.uniform_(lower, upper)
    return name_node(ew.where(input >= 0, input, input * slope), "RreluWithNoiseBackward0")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with slopes drawn from U(lower, upper) per element when training, and their
    mean (lower + upper) / 2 otherwise."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"rrelu: expected a floating input, got {input.dtype}")
    if lower > upper:
        raise RuntimeError(f"rrelu: Lower bound should be less than or equal to the upper bound, "
                           f"got lower={lower}, upper={upper}")
    return _apply(_rrelu, input, inplace, "rrelu_", lower, upper, training,
                  negative_slope=not training and lower + upper < 0)


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the two halves of `input` along `dim`."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension "
                           f"{dim % input.ndim} is size {size}")
    a, b = input.chunk(2, dim)
    return name_node(a * ew.sigmoid(b), "GluBackward0")


def _softmax_like(fn, name, input, dim, dtype):
    if dim is None:
        dim = softmax_dim(name, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return fn(input, dim)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_like(ops.reduce.softmax, "softmax", input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x)."""
    if dim is None:
        dim = softmax_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return ops.reduce.softmax(-input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_like(ops.reduce.log_softmax, "log_softmax", input, dim, dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g; `hard` returns one-hot samples
    whose gradient is the soft sample's (straight-through)."""
    noise = creation.empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -ew.log(noise.exponential_())
    soft = ops.reduce.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = creation.zeros_like(soft).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


relu_ = _inplace_form(relu, "relu_")
elu_ = _inplace_form(elu, "elu_")
selu_ = _inplace_form(selu, "selu_")
celu_ = _inplace_form(celu, "celu_")
leaky_relu_ = _inplace_form(leaky_relu, "leaky_relu_")
hardtanh_ = _inplace_form(hardtanh, "hardtanh_")
rrelu_ = _inplace_form(rrelu, "rrelu_")
threshold_ = _inplace_form(threshold, "threshold_")
