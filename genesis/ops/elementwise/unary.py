"""The one-operand elementwise ops, declared in one table: each `UnarySpec` names its kernel, its
derivative (written with genesis ops, in the order of PyTorch's formula so half types round as
PyTorch's do) and the dtypes it takes; `Unary` runs one, forward and backward."""

import math

from ... import dtypes
from ...autograd import forward_ad
from ...autograd.function import Function, name_node, records
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.one_node import not_implemented, one_node
from ...dispatch import kernel
from ...tensor import Tensor
from ..autocast import autocast_policy
from ..common import rounded_scalar
from .core import elementwise, reject
from .selection import where


_HALF_DTYPES = (dtypes.float16, dtypes.bfloat16)


class Unary(Function):
    """A unary op given by a `UnarySpec`: forward runs its kernel, backward its derivative
    (for half types a fused one computed in float32 and rounded once, as PyTorch's backward
    kernels do). When no graph of the backward is recorded, a spec with a `backward_kernel`
    computes its gradient in that one kernel instead."""

    saved_names = ("self", "result")  # grad_fn._saved_self, _saved_result

    @staticmethod
    def forward(ctx, x, spec, kwargs):
        out = spec.values(x, kwargs)
        _setup(ctx, spec, kwargs)
        # a derivative of the output alone keeps no input: its in-place form may overwrite it
        ctx.save_for_backward(None if spec.from_output else x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        spec = ctx.spec
        saved = y if spec.from_output else x
        if spec.backward_kernel and not is_grad_enabled():
            return elementwise(spec.backward_kernel, g, saved), None, None
        if spec.one_node_backward and is_grad_enabled() and (g.requires_grad
                                                             or saved.requires_grad):
            return _recorded_derivative(ctx, spec, g, saved), None, None
        return _derivative(spec, g, saved, ctx.kwargs, x, y), None, None


def _recorded_derivative(ctx, spec, g, saved):
    """The gradient as the one node of PyTorch's backward op; a NotImplemented node where that
    op has no derivative, except while forward-mode AD pushes tangents through this backward
    (PyTorch's forward AD of the op itself is defined)."""
    def derivative(g, saved):
        return _derivative(spec, g, saved, ctx.kwargs)
    if spec.double_backward or forward_ad.is_pushing_tangents():
        return one_node(derivative, _backward_node(ctx.node_name), g, saved)
    return not_implemented(derivative, f"{spec.name}_backward", g, saved)


def _derivative(spec, g, saved, kwargs, x=None, y=None):
    """The gradient of `spec`'s op from the incoming one `g` and the input `x` and output `y`,
    or from the tensor its node saved alone (the output with `from_output`, else the input);
    for half types a fused derivative is computed in float32 and rounded once."""
    if x is None and y is None:
        x, y = (None, saved) if spec.from_output else (saved, None)
    if not spec.fused or saved.dtype not in _HALF_DTYPES:
        return spec.derivative(g, x, y, **kwargs)
    wide = dtypes.float32
    return spec.derivative(g.to(wide), None if x is None else x.to(wide),
                           None if y is None else y.to(wide), **kwargs).to(saved.dtype)


# Ops whose backward op in PyTorch is another op's: relu's is threshold_backward, celu's
# elu_backward.
_BACKWARD_OPS = {"Relu": "Threshold", "Celu": "Elu"}


def _backward_node(node_name):
    """PyTorch's name for the node recording the backward op of the node `node_name`
    ("TanhBackward0" -> "TanhBackwardBackward0", "CeluBackward1" -> "EluBackwardBackward0")."""
    op = node_name[:node_name.index("Backward")]
    return f"{_BACKWARD_OPS.get(op, op)}BackwardBackward0"


class UnaryInplace(Unary):
    """A unary op whose derivative needs only its output, written into its input in a graph
    (relu_, sigmoid_, tanh_): the node saves the overwritten tensor itself, so that writing it
    again before backward fails the version check, as in PyTorch."""

    @staticmethod
    def forward(ctx, x, spec, kwargs):
        kernel("elementwise_into", x.device.type)(spec.kernel, x._data, (x._data,), ())
        x._bump_version()
        _setup(ctx, spec, kwargs)
        ctx.mark_dirty(x)
        ctx.save_for_backward(None, x)
        return x


def _setup(ctx, spec, kwargs):
    """The node's op, its arguments and names; one whose derivative reads the output alone
    has no grad_fn._saved_self, as PyTorch's (ReluBackward0 keeps _saved_result only)."""
    ctx.spec, ctx.kwargs = spec, kwargs
    ctx.node_name = spec.node_name
    if spec.from_output:
        ctx.saved_names = (None, "result")


class UnarySpec:
    """How a unary op runs: its kernel, derivative, and which input dtypes it takes.

    `promote`: integer and bool inputs compute in the default float dtype. `rejects`: dtype
    categories ("b", "i", "f") that raise NotImplementedError, as in PyTorch. `fused`: PyTorch
    computes the derivative in one kernel, so half types compute it in float32, rounded once.
    `backward_kernel`: the binary kernel (gradient, x, or y with `from_output`) giving the same
    derivative in one launch, as PyTorch's tanh_backward, gelu_backward... do.
    `one_node_backward`: PyTorch's backward is one op of the gradient and the saved tensor
    (threshold_backward, tanh_backward...), so a recorded backward is that one node
    ("ThresholdBackwardBackward0"), its edges to the two, as PyTorch's.
    `double_backward`: False where PyTorch's backward op has no derivative itself
    (hardsigmoid_backward): the recorded backward is a NotImplemented node whose own backward
    raises.
    """

    __slots__ = ("name", "kernel", "derivative", "promote", "rejects", "fused",
                 "backward_kernel", "from_output", "node_name", "one_node_backward",
                 "double_backward")

    def __init__(self, name, derivative, promote=True, rejects="", kernel=None, fused=False,
                 backward_kernel=None, from_output=False, one_node_backward=False,
                 double_backward=True):
        self.name, self.kernel = name, kernel or name
        self.derivative, self.promote, self.rejects = derivative, promote, rejects
        self.fused, self.one_node_backward = fused, one_node_backward
        self.double_backward = double_backward
        self.backward_kernel, self.from_output = backward_kernel, from_output
        self.node_name = "".join(w.capitalize() for w in name.split("_")) + "Backward0"

    def result_dtype(self, dtype):
        reject(self.name, dtype, self.rejects)
        if self.promote and not dtype.is_floating_point:
            return dtypes.get_default_dtype()
        return dtype

    def values(self, x, kwargs):
        """The op's result on tensor `x`, from its kernel, outside any graph."""
        return elementwise(self.kernel, x, dtype=self.result_dtype(x.dtype),
                           kernel_op=self.kernel, **kwargs)

    def __call__(self, input, **kwargs):
        """The op on `input`; a call no graph records computes the values alone."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{self.name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        if records(input):
            return Unary.apply(input, self, kwargs)
        return self.values(input, kwargs)


def zero_grad(g, x, y, **_):
    return g * 0


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# derivative(g, x, y) gives dL/dx from dL/dy = g, the input x and the output y, in the order of
# operations of PyTorch's formula (derivatives.yaml), so half types round as PyTorch's do; `fused`
# marks those PyTorch computes in one backward kernel (in float32 for half types).
_UNARY = [
    UnarySpec("neg", lambda g, x, y: -g, promote=False),
    UnarySpec("abs", lambda g, x, y: g * sgn(x), promote=False, rejects="b"),
    UnarySpec("exp", lambda g, x, y: g * y),
    UnarySpec("exp2", lambda g, x, y: g * y * math.log(2.0)),
    UnarySpec("expm1", lambda g, x, y: g * (y + 1)),
    UnarySpec("log", lambda g, x, y: g / x),
    UnarySpec("log2", lambda g, x, y: g / (x * math.log(2.0))),
    UnarySpec("log10", lambda g, x, y: g / (x * math.log(10.0))),
    UnarySpec("log1p", lambda g, x, y: g / (x + 1)),
    UnarySpec("sqrt", lambda g, x, y: g / (2 * y)),
    UnarySpec("rsqrt", lambda g, x, y: -0.5 * g * y ** 3),
    UnarySpec("sin", lambda g, x, y: g * cos(x)),
    UnarySpec("cos", lambda g, x, y: g * -sin(x)),
    UnarySpec("tan", lambda g, x, y: g * (1 + y ** 2)),
    UnarySpec("asin", lambda g, x, y: g * rsqrt(-x * x + 1)),
    UnarySpec("acos", lambda g, x, y: g * -rsqrt(-x * x + 1)),
    UnarySpec("atan", lambda g, x, y: g / (x * x + 1)),
    UnarySpec("sinh", lambda g, x, y: g * cosh(x)),
    UnarySpec("cosh", lambda g, x, y: g * sinh(x)),
    UnarySpec("tanh", lambda g, x, y: g * (1 - y * y), fused=True,
              backward_kernel="tanh_backward", from_output=True, one_node_backward=True),
    UnarySpec("asinh", lambda g, x, y: g * rsqrt(x ** 2 + 1)),
    UnarySpec("acosh", lambda g, x, y: g * rsqrt(x ** 2 - 1)),
    UnarySpec("atanh", lambda g, x, y: g * (1 / (1 - x ** 2))),
    UnarySpec("sigmoid", lambda g, x, y: g * (1 - y) * y, fused=True,
              backward_kernel="sigmoid_backward", from_output=True, one_node_backward=True),
    UnarySpec("relu", lambda g, x, y: where(y <= 0, 0.0, g), promote=False,
              backward_kernel="relu_backward", from_output=True, one_node_backward=True),
    UnarySpec("erf", lambda g, x, y: _TWO_OVER_SQRT_PI * exp(-(x ** 2)) * g),
    UnarySpec("erfc", lambda g, x, y: -_TWO_OVER_SQRT_PI * exp(-(x ** 2)) * g),
    UnarySpec("reciprocal", lambda g, x, y: -g * (y * y)),
    UnarySpec("floor", zero_grad, promote=False, rejects="b"),
    UnarySpec("ceil", zero_grad, promote=False, rejects="b"),
    UnarySpec("trunc", zero_grad, promote=False, rejects="b"),
    UnarySpec("round", zero_grad, promote=False, rejects="b"),
    UnarySpec("frac", lambda g, x, y: g, promote=False, rejects="bi"),
    UnarySpec("sign", zero_grad, promote=False),
    UnarySpec("sgn", zero_grad, promote=False),
    UnarySpec("nan_to_num", lambda g, x, y, **_: where(isfinite(x), g, 0.0), promote=False),
]
UNARY_OPS = {spec.name: spec for spec in _UNARY}


def abs(input):
    """|input|, elementwise."""
    return UNARY_OPS["abs"](input)


@autocast_policy("exp")
def exp(input):
    """e ** input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["exp"](input)


def exp2(input):
    """2 ** input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["exp2"](input)


@autocast_policy("expm1")
def expm1(input):
    """exp(input) - 1, accurate near 0, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["expm1"](input)


@autocast_policy("log")
def log(input):
    """The natural logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log"](input)


@autocast_policy("log2")
def log2(input):
    """The base-2 logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log2"](input)


@autocast_policy("log10")
def log10(input):
    """The base-10 logarithm, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log10"](input)


@autocast_policy("log1p")
def log1p(input):
    """log(1 + input), accurate near 0, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["log1p"](input)


def sqrt(input):
    """The square root, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sqrt"](input)


@autocast_policy("rsqrt")
def rsqrt(input):
    """1 / sqrt(input), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["rsqrt"](input)


def sin(input):
    """The sine (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sin"](input)


def cos(input):
    """The cosine (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["cos"](input)


@autocast_policy("tan")
def tan(input):
    """The tangent (radians), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["tan"](input)


@autocast_policy("asin")
def asin(input):
    """The arcsine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["asin"](input)


@autocast_policy("acos")
def acos(input):
    """The arccosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["acos"](input)


def atan(input):
    """The arctangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["atan"](input)


@autocast_policy("sinh")
def sinh(input):
    """The hyperbolic sine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sinh"](input)


@autocast_policy("cosh")
def cosh(input):
    """The hyperbolic cosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["cosh"](input)


def tanh(input):
    """The hyperbolic tangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["tanh"](input)


def asinh(input):
    """The inverse hyperbolic sine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["asinh"](input)


def acosh(input):
    """The inverse hyperbolic cosine, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["acosh"](input)


def atanh(input):
    """The inverse hyperbolic tangent, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["atanh"](input)


def sigmoid(input):
    """1 / (1 + exp(-input)), elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["sigmoid"](input)


def erf(input):
    """The error function, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["erf"](input)


def erfc(input):
    """1 - erf(input), accurate where erf is near 1; integers compute in the default float dtype."""
    return UNARY_OPS["erfc"](input)


@autocast_policy("reciprocal")
def reciprocal(input):
    """1 / input, elementwise; integers compute in the default float dtype."""
    return UNARY_OPS["reciprocal"](input)


def floor(input):
    """Rounded down, elementwise."""
    return UNARY_OPS["floor"](input)


def ceil(input):
    """Rounded up, elementwise."""
    return UNARY_OPS["ceil"](input)


def trunc(input):
    """Rounded toward zero, elementwise."""
    return UNARY_OPS["trunc"](input)


def frac(input):
    """input - trunc(input), elementwise."""
    return UNARY_OPS["frac"](input)


def sign(input):
    """-1, 0 or 1 by the sign, elementwise."""
    return UNARY_OPS["sign"](input)


def sgn(input):
    """-1, 0 or 1 by the sign (as `sign` for real tensors), elementwise."""
    return UNARY_OPS["sgn"](input)


def neg(input):
    """-input, elementwise (not for bool tensors: use `~` or logical_not)."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool_:
        raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return UNARY_OPS["neg"](input)


def relu(input):
    """max(input, 0), elementwise."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu")
    return UNARY_OPS["relu"](input)


negative, absolute, arcsin, arccos, arctan = neg, abs, asin, acos, atan


def square(input):
    """input * input, as PyTorch's `pow(input, 2)` (bool becomes int64)."""
    return input ** 2 if input.dtype is dtypes.bool_ else name_node(input * input, "PowBackward0")


def round(input, *, decimals=0):
    """Rounded to `decimals` places, halves to even."""
    return UNARY_OPS["round"](input, decimals=decimals)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf`, `neginf` (default: the dtype's extremes),
    which PyTorch casts to a floating input's dtype first."""
    if isinstance(input, Tensor) and input.dtype.is_floating_point:
        nan, posinf, neginf = (None if v is None else rounded_scalar(input.dtype, v)
                               for v in (nan, posinf, neginf))
    return UNARY_OPS["nan_to_num"](input, nan=nan, posinf=posinf, neginf=neginf)


def isnan(input):
    """True where input is NaN."""
    return elementwise("isnan", input)


def isinf(input):
    """True where input is +inf or -inf."""
    return elementwise("isinf", input)


def isfinite(input):
    """True where input is neither infinite nor NaN."""
    return elementwise("isfinite", input)


def signbit(input):
    """True where the sign bit of input is set (-0.0 included)."""
    return elementwise("signbit", input)


__all__ = [
    "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu", "erf", "erfc",
    "reciprocal", "square", "floor", "ceil", "trunc", "frac", "sign", "sgn", "round", "nan_to_num",
    "isnan", "isinf", "isfinite", "signbit"]
