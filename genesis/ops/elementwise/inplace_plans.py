"""The in-place forms of the elementwise ops (`add_`, `exp_`...): validated out of place first, so
a failure leaves the tensor as it was, and written in one kernel where a plan says the op is
one."""

import math

from ... import dtypes
from ...autograd.function import records
from ..common import rounded_scalar
from ..inplace import check_inplace_target, snapshot_for_graph, write_elementwise, write_result
from .binary import float_power
from .unary import UNARY_OPS, UnaryInplace


def _plan_add(self, other, alpha, sign):
    """self + sign * alpha * other as one kernel: add/sub, else addcmul(self, other, 1, alpha),
    alpha read in self's dtype as PyTorch's add reads it."""
    if alpha == 1:
        return ("add" if sign == 1 else "sub"), (self, other), ()
    if type(alpha) not in (int, float):
        return None
    if self.dtype.is_floating_point:
        alpha = rounded_scalar(self.dtype, alpha)
    return "addcmul", (self, other, 1.0), (sign * alpha,)


def _plan_clamp(self, low, high):
    """clamp_ as one kernel; a missing bound is an infinite one (NaN still propagates)."""
    if low is None and high is None:
        return None
    return "clamp", (self, -math.inf if low is None else low,
                     math.inf if high is None else high), ()


# In-place ops that are one elementwise kernel: each plan takes the tensor and the method's
# arguments and gives (kernel op, operands, kernel params), or None for options that make the
# op something else (a rounding mode). See inplace.write_elementwise.

def _add_plan(self, other, *, alpha=1):
    return _plan_add(self, other, alpha, 1)


def _sub_plan(self, other, *, alpha=1):
    return _plan_add(self, other, alpha, -1)


def _mul_plan(self, other):
    return "mul", (self, other), ()


def _div_plan(self, other, *, rounding_mode=None):
    return ("div", (self, other), ()) if rounding_mode is None else None


def _lerp_plan(self, end, weight):
    return "lerp", (self, end, weight), ()


def _addcmul_plan(self, tensor1, tensor2, *, value=1):
    return "addcmul", (self, tensor1, tensor2), (value,)


def _addcdiv_plan(self, tensor1, tensor2, *, value=1):
    return "addcdiv", (self, tensor1, tensor2), (value,)


def _clamp_plan(self, min=None, max=None):
    return _plan_clamp(self, min, max)


def _clamp_min_plan(self, min):
    return _plan_clamp(self, min, None)


def _clamp_max_plan(self, max):
    return _plan_clamp(self, None, max)


def _unary_plan(name):
    """The plan of unary op `name`: its kernel over the tensor (None for ops that reject floats,
    whose in-place form can never write a floating tensor directly)."""
    spec = UNARY_OPS[name]
    return None if "f" in spec.rejects else lambda self: (spec.kernel, (self,), ())


def _inplace(fn, name, plan=None, from_output=None):
    """The in-place method `name` of the out-of-place `fn`; `plan` says when it is one
    elementwise kernel that may write the tensor directly. An op whose backward keeps only its
    output (relu, sigmoid, tanh: `from_output`, its UnarySpec) writes the tensor directly in a
    graph too, its node saving the tensor; others compute from a snapshot of it, then copy."""

    def method(self, *args, **kwargs):
        if plan is not None:
            try:
                planned = plan(self, *args, **kwargs)
            except TypeError:  # arguments the op rejects: the general path raises its error
                planned = None
            if planned is not None and write_elementwise(self, *planned, name):
                return self
        if from_output is not None and records(self) and self.dtype.is_floating_point:
            check_inplace_target(self, name)
            return UnaryInplace.apply(self, from_output, {})
        return write_result(self, fn(snapshot_for_graph(self, *args), *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = (f"In-place `{fn.__name__}`: validated first, so a failure leaves the tensor "
                      "as it was.")
    return method


def _float_power_(self, exponent):
    """In-place float_power: only a float64 tensor can hold its result, as in PyTorch."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{dtypes.scalar_type_name(self.dtype)} but the operation's result "
                           "requires dtype Double")
    return _float_power_inplace(self, exponent)


_float_power_inplace = _inplace(float_power, "float_power_")
