"""torch._foreach_*: one op applied to each tensor of a list, as optimizers and EMA updates call
it. Genesis has no fused multi-tensor kernels, so each is a loop over the tensor method of the
same name (gradients flow through the out-of-place forms), with torch's checks on the lists.
Out-of-place forms return a tuple; in-place forms update the tensors and return the list."""

import numbers

from ..tensor import Tensor
from .elementwise import pow  # noqa: A004  (torch's name)
from .reduce import vector_norm

_HAS_ALPHA = ("add", "sub")
_CLAMPS = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _tensor_list(op, tensors, position=1, name="self"):
    """`tensors` checked to be a non-empty list or tuple of tensors."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of "
                        f"Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position - 1}, but "
                            f"got {type(t).__name__}")
    return tensors


def _matched(tensors, others):
    """A second tensor list, checked to be as long as the first."""
    if len(others) != len(tensors):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                           f"{len(tensors)} and {len(others)}")
    return others


def _per_tensor(op, tensors, other):
    """`other` as one operand per tensor: a tensor list, a scalar list, one 0-dim tensor or
    one number."""
    if isinstance(other, (list, tuple)):
        if other and all(isinstance(o, Tensor) for o in other):
            return _matched(tensors, _tensor_list(op, other, 2, "other"))
        if len(other) != len(tensors):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return other
    if isinstance(other, Tensor) and other.dim() != 0:
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.dim()} "
                           f"dimensions and {other.numel()} elements.")
    return [other] * len(tensors)


def _scalars(tensors, scalars):
    """addcmul/addcdiv's `scalars`: one number, a list of numbers, or a 1-d tensor of them."""
    if isinstance(scalars, Tensor):
        scalars = scalars.tolist()
    if not isinstance(scalars, (list, tuple)):
        return [scalars] * len(tensors)
    if len(scalars) != len(tensors):
        raise RuntimeError(f"Expected length of scalars to match input of length "
                           f"{len(tensors)} but got {len(scalars)} instead.")
    return scalars


def _result(tensors, outs, inplace):
    """What a form returns: the updated list in place, else a tuple of the results."""
    return tensors if inplace else tuple(outs)


def _named(fn, op, doc):
    """`fn` under torch's name `op`, with `doc` as its docstring."""
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc
    return fn


def _unary(name, inplace):
    method = name + "_" if inplace else name
    op = f"_foreach_{method}"

    def fn(self):
        outs = [getattr(t, method)() for t in _tensor_list(op, self)]
        return _result(self, outs, inplace)

    return _named(fn, op, f"`{method}` of each tensor of the list.")


def _alpha_checked(op, name, other, alpha):
    """torch takes `alpha` with a tensor list (add, sub) or one tensor (add)."""
    if alpha == 1:
        return {}
    if name in _HAS_ALPHA and isinstance(other, (list, tuple)):
        _tensor_list(op, other, 2, "other")
        return {"alpha": alpha}
    if name != "add" or not isinstance(other, Tensor):
        raise TypeError(f"{op}(): argument 'other' (position 2) must be tuple of Tensors, not "
                        f"{type(other).__name__}")
    return {"alpha": alpha}


def _method_for(name, other, inplace):
    """The tensor method applying `name` with `other`: the maximum or minimum with a number is
    a clamp (the tensor methods take only tensors)."""
    if not isinstance(other, Tensor):
        name = _CLAMPS.get(name, name)
    return name + "_" if inplace else name


def _binary(name, inplace):
    method = name + "_" if inplace else name
    op = f"_foreach_{method}"

    def fn(self, other, *, alpha=1):
        if name == "pow" and not inplace and isinstance(self, numbers.Number):
            return _scalar_pow(op, self, other)
        _tensor_list(op, self)
        kwargs = _alpha_checked(op, name, other, alpha)
        others = _per_tensor(op, self, other)
        outs = [getattr(t, _method_for(name, o, inplace))(o, **kwargs)
                for t, o in zip(self, others)]
        return _result(self, outs, inplace)

    return _named(fn, op, f"`{method}` of each tensor of the list with a scalar, scalars or "
                          f"tensors.")


def _scalar_pow(op, base, exponents):
    """`_foreach_pow(scalar, tensors)`: the scalar raised to each tensor."""
    return tuple(pow(base, e) for e in _tensor_list(op, exponents, 2, "exponent"))


def _pointwise(name, inplace):
    method = name + "_" if inplace else name
    op = f"_foreach_{method}"

    def fn(self, tensor1, tensor2, scalars=1):
        _tensor_list(op, self)
        firsts = _matched(self, _tensor_list(op, tensor1, 2, "tensor1"))
        seconds = _matched(self, _tensor_list(op, tensor2, 3, "tensor2"))
        values = _scalars(self, scalars)
        outs = [getattr(t, method)(a, b, value=v)
                for t, a, b, v in zip(self, firsts, seconds, values)]
        return _result(self, outs, inplace)

    return _named(fn, op, f"`{method}` of each tensor of the list with the matching tensors.")


def _lerp(name, inplace):
    method = name + "_" if inplace else name
    op = f"_foreach_{method}"

    def fn(self, tensors1, weight):
        ends = _matched(_tensor_list(op, self), _tensor_list(op, tensors1, 2, "tensors1"))
        weights = _per_tensor(op, self, weight)
        outs = [getattr(t, method)(e, w) for t, e, w in zip(self, ends, weights)]
        return _result(self, outs, inplace)

    return _named(fn, op, f"`{method}` of each tensor of the list toward the matching tensor.")


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002  (torch's name)
    """The vector norm of each tensor of the list, as 0-dim tensors."""
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensor_list("_foreach_norm", self))


def _foreach_max(self):
    """The largest element of each tensor of the list, as 0-dim tensors."""
    return tuple(t.amax() for t in _tensor_list("_foreach_max", self))


def _foreach_copy_(self, src, non_blocking=False):
    """Copy each tensor of `src` into the matching tensor of the list."""
    sources = _matched(_tensor_list("_foreach_copy_", self),
                       _tensor_list("_foreach_copy_", src, 2, "src"))
    for t, s in zip(self, sources):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self):
    """Fill each tensor of the list with zeros."""
    for t in _tensor_list("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_clone(self, *, memory_format=None):
    """A copy of each tensor of the list."""
    kwargs = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**kwargs) for t in _tensor_list("_foreach_clone", self))


def _forms(make, name):
    """The out-of-place and in-place forms of op `name` that `make` builds."""
    return make(name, False), make(name, True)


_foreach_abs, _foreach_abs_ = _forms(_unary, "abs")
_foreach_acos, _foreach_acos_ = _forms(_unary, "acos")
_foreach_asin, _foreach_asin_ = _forms(_unary, "asin")
_foreach_atan, _foreach_atan_ = _forms(_unary, "atan")
_foreach_ceil, _foreach_ceil_ = _forms(_unary, "ceil")
_foreach_cos, _foreach_cos_ = _forms(_unary, "cos")
_foreach_cosh, _foreach_cosh_ = _forms(_unary, "cosh")
_foreach_erf, _foreach_erf_ = _forms(_unary, "erf")
_foreach_erfc, _foreach_erfc_ = _forms(_unary, "erfc")
_foreach_exp, _foreach_exp_ = _forms(_unary, "exp")
_foreach_expm1, _foreach_expm1_ = _forms(_unary, "expm1")
_foreach_floor, _foreach_floor_ = _forms(_unary, "floor")
_foreach_frac, _foreach_frac_ = _forms(_unary, "frac")
_foreach_lgamma, _foreach_lgamma_ = _forms(_unary, "lgamma")
_foreach_log, _foreach_log_ = _forms(_unary, "log")
_foreach_log10, _foreach_log10_ = _forms(_unary, "log10")
_foreach_log1p, _foreach_log1p_ = _forms(_unary, "log1p")
_foreach_log2, _foreach_log2_ = _forms(_unary, "log2")
_foreach_neg, _foreach_neg_ = _forms(_unary, "neg")
_foreach_reciprocal, _foreach_reciprocal_ = _forms(_unary, "reciprocal")
_foreach_round, _foreach_round_ = _forms(_unary, "round")
_foreach_rsqrt, _foreach_rsqrt_ = _forms(_unary, "rsqrt")
_foreach_sigmoid, _foreach_sigmoid_ = _forms(_unary, "sigmoid")
_foreach_sign, _foreach_sign_ = _forms(_unary, "sign")
_foreach_sin, _foreach_sin_ = _forms(_unary, "sin")
_foreach_sinh, _foreach_sinh_ = _forms(_unary, "sinh")
_foreach_sqrt, _foreach_sqrt_ = _forms(_unary, "sqrt")
_foreach_tan, _foreach_tan_ = _forms(_unary, "tan")
_foreach_tanh, _foreach_tanh_ = _forms(_unary, "tanh")
_foreach_trunc, _foreach_trunc_ = _forms(_unary, "trunc")
_foreach_add, _foreach_add_ = _forms(_binary, "add")
_foreach_sub, _foreach_sub_ = _forms(_binary, "sub")
_foreach_mul, _foreach_mul_ = _forms(_binary, "mul")
_foreach_div, _foreach_div_ = _forms(_binary, "div")
_foreach_pow, _foreach_pow_ = _forms(_binary, "pow")
_foreach_clamp_min, _foreach_clamp_min_ = _forms(_binary, "clamp_min")
_foreach_clamp_max, _foreach_clamp_max_ = _forms(_binary, "clamp_max")
_foreach_maximum, _foreach_maximum_ = _forms(_binary, "maximum")
_foreach_minimum, _foreach_minimum_ = _forms(_binary, "minimum")
_foreach_addcmul, _foreach_addcmul_ = _forms(_pointwise, "addcmul")
_foreach_addcdiv, _foreach_addcdiv_ = _forms(_pointwise, "addcdiv")
_foreach_lerp, _foreach_lerp_ = _forms(_lerp, "lerp")

__all__ = [name for name in dir() if name.startswith("_foreach_")]
