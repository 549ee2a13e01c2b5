"""torch._foreach_*: one op applied to each tensor of a list, as optimizers and EMA updates call
it. Genesis has no fused multi-tensor kernels, so each is a loop over the tensor method of the
same name (gradients flow through the out-of-place forms), with torch's checks on the lists.
Out-of-place forms return a tuple; in-place forms update the tensors and return the list."""

import numbers

from ..tensor import Tensor
from .elementwise import pow  # noqa: A004  (torch's name)
from .reduce import vector_norm

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max", "maximum", "minimum")
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


def _lerp(inplace):
    method = "lerp_" if inplace else "lerp"
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


def _register():
    """The generated forms, bound in this module under torch's names."""
    made = [make(name, inplace) for inplace in (False, True)
            for names, make in ((_UNARY, _unary), (_BINARY, _binary),
                                (("addcmul", "addcdiv"), _pointwise))
            for name in names]
    made += [_lerp(False), _lerp(True)]
    globals().update({fn.__name__: fn for fn in made})
    return [fn.__name__ for fn in made]


__all__ = _register() + ["_foreach_norm", "_foreach_max", "_foreach_copy_", "_foreach_zero_",
                         "_foreach_clone"]
