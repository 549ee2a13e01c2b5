"""PyTorch's `out=` keyword, for the functions that take it (`genesis.add(a, b, out=c)`).

The function runs as usual, then its result is written into `out` as PyTorch's out variants
leave it: in place when the shapes agree (so `out` may be a view into a larger buffer), else
`out` is resized to the result's shape, with PyTorch's deprecation warning when it held
elements. The result is cast to out's dtype where PyTorch's casting rule allows it (a float
result into an integer tensor raises), except for the ops whose kernels want out in the
result's dtype exactly (`_SAME_DTYPE`, with their error texts); sums and products compute in
out's dtype (`_COMPUTE_IN_OUT`); factories (`zeros`, `arange`, `randn`, ...) are made in out's
dtype and on its device. As in PyTorch, out= does not record gradients: with grad mode on,
an argument that requires grad is an error, raised before anything is written.
"""

import collections.abc
import functools
import warnings

from . import dtypes
from .autograd.grad_mode import is_grad_enabled, no_grad
from .tensor import Tensor

FUNCTIONS = (
    "abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin "
    "aminmax any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin "
    "asin asinh atan atan2 atanh baddbmm bartlett_window bernoulli bitwise_and "
    "bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor "
    "blackman_window bmm bucketize cat ceil chain_matmul cholesky cholesky_inverse "
    "cholesky_solve clamp clamp_max clamp_min clip column_stack concat concatenate copysign "
    "cos cosh cross cummax cummin cumprod cumsum deg2rad diag diff digamma div divide dot "
    "dstack empty eq erf erfc erfinv exp exp2 expm1 eye fix float_power floor floor_divide "
    "fmax fmin fmod frac frexp frobenius_norm full gather gcd ge ger greater greater_equal gt "
    "hamming_window hann_window hardshrink heaviside histc histogram hstack hypot i0 igamma "
    "igammac index_add index_copy index_reduce index_select inner inverse isin isneginf "
    "isposinf kaiser_window kron kthvalue lcm ldexp le lerp less less_equal lgamma linspace "
    "log log10 log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp logical_and "
    "logical_not logical_or logical_xor logit logspace logsumexp lt lu_solve lu_unpack "
    "masked_select matmul matrix_power max maximum mean median min minimum mm mode msort mul "
    "multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile nansum ne neg "
    "negative nextafter nonzero norm normal not_equal nuclear_norm ones orgqr outer polygamma pow "
    "prod qr quantile rad2deg rand randint randn randperm range reciprocal remainder renorm "
    "round row_stack rsqrt scatter scatter_add scatter_reduce searchsorted sgn sigmoid sign "
    "signbit sin sinc sinh slice_scatter softmax sort sqrt square stack std sub subtract sum "
    "svd take take_along_dim tan tanh tensordot threshold topk triangular_solve tril triu "
    "true_divide trunc var vdot vstack where xlogy zeros").split()
LINALG_FUNCTIONS = (
    "cholesky cholesky_ex cond cross det eigh eigvalsh householder_product inv inv_ex ldl_factor "
    "ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex "
    "lu_solve matmul matrix_norm matrix_power matrix_rank multi_dot norm pinv qr "
    "slogdet solve solve_ex solve_triangular svd svdvals tensorinv tensorsolve vecdot "
    "vector_norm").split()
SPECIAL_FUNCTIONS = (
    "digamma entr erf erfc erfinv exp2 expit expm1 gammainc gammaincc gammaln i0 i0e i1 i1e log1p "
    "log_ndtr logit logsumexp multigammaln ndtr ndtri polygamma psi round sinc xlog1py xlogy "
    "airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 modified_bessel_i1 "
    "modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 scaled_modified_bessel_k1 "
    "spherical_bessel_j0 chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v "
    "chebyshev_polynomial_w shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u "
    "shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w hermite_polynomial_h "
    "hermite_polynomial_he laguerre_polynomial_l legendre_polynomial_p erfcx zeta").split()
# Functions that make a tensor from sizes alone: with out=, made in out's dtype and device.
FACTORIES = frozenset(
    "arange bartlett_window blackman_window empty eye full hamming_window hann_window "
    "kaiser_window linspace logspace ones rand randint randn randperm range zeros".split())


def _named(template, namer=dtypes.scalar_type_name, applies=lambda result, out: True,
           error=RuntimeError):
    """A rule: the error a result of one dtype written into an out of another raises (where
    `applies`), its text naming both dtypes."""
    def rule(name, result, out):
        if applies(result, out):
            return error(template.format(name=name, result=namer(result), out=namer(out),
                                         flag=result is dtypes.int32))
        return None
    return rule


_EXACT = _named("Expected out tensor to have dtype {result}, but got {out} instead",
                dtypes.type_meta_name)
_FOUND = _named("Found dtype {out} but expected {result}")
# Ops whose out= must have the result's dtype exactly, as PyTorch's kernels check it, with their
# error texts; the others accept any dtype the result casts to (`dtypes.check_result_cast`).
# `_EXACT` checks every output (sort's indices too); the rest the values alone.
_SAME_DTYPE = {
    **dict.fromkeys("addmm addmv baddbmm bmm cross det diag gather index_add inv inverse "
                    "log_softmax matmul matrix_power mm msort mv norm renorm softmax sort "
                    "take_along_dim topk tril triu argmax argmin max min".split(), _EXACT),
    **dict.fromkeys(("cat", "concat", "concatenate", "stack"), _named(
        "torch.cat(): input types can't be cast to the desired output type {out}",
        applies=lambda result, out: not dtypes.can_cast(result, out), error=TypeError)),
    "logsumexp": _named(
        "logsumexp(): Expected floating point type for result tensor, but got: {out}",
        applies=lambda result, out: not out.is_floating_point),
    **dict.fromkeys("abs absolute ceil clamp clamp_max clamp_min clip fix floor frac neg "
                    "negative round sgn sign trunc".split(), _FOUND),
    **dict.fromkeys(("dot", "vdot"),
                    _named("result dtype {out} does not match input dtype {result}")),
    **dict.fromkeys(("amax", "amin"), _named(
        "Expected the dtype for input and out to match, but got {result} for input's dtype and "
        "{out} for out's dtype.")),
    **dict.fromkeys(("cummax", "cummin", "logcumsumexp"),
                    _named("expected scalar_type {result} but found {out}")),
    **dict.fromkeys(("inner", "tensordot"), _named(
        "tensordot: Expected the output tensor to have dtype {result}, but got an output "
        "tensor with dtype {out}")),
    **dict.fromkeys(("index_select", "masked_select"),
                    _named("{name}(): self and result must have the same scalar type")),
    **dict.fromkeys(("quantile", "nanquantile"),
                    _named("quantile() out tensor must be same dtype as the input tensor")),
    "where": _named("Expected out type to be {result} but got {out}"),
    "nonzero": _named("nonzero: Expected out tensor to have scalar type Long but got scalar "
                      "type{out}"),
    "signbit": _named("signbit does not support non-boolean outputs."),
    "heaviside": _named("heaviside is not yet implemented for tensors with different dtypes."),
    **dict.fromkeys(("searchsorted", "bucketize"), _named(
        "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
        "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
        "dtype {out} and out_int32 flag is {flag}")),
    "take": _named("take(): self and out expected to have the same dtype, but got self.dtype = "
                   "{result} and out.dtype = {out}"),
    "nan_to_num": _named("nan_to_num: dtype of out: {out} should be same as input: {result}"),
    "kthvalue": _named("output values must be of same type as input"),
    "mode": _named("expected scalar type '{result}' but got '{out}' for values output"),
    "histc": _named("torch.histogram: input tensor and hist tensor should have the same dtype, "
                    "but got input {result} and hist {out}", dtypes.type_meta_name),
}
# max and min check their values and indices where they reduce a dim (two results) only.
_DIM_ONLY = frozenset(("max", "min"))
# Reductions whose out= sets the dtype they compute in, as their dtype= argument does: summing
# float values into an integer out sums the truncated values.
_COMPUTE_IN_OUT = frozenset(("sum", "prod", "cumsum", "cumprod"))


def install(namespace, names):
    """Give each function `names` of `namespace` (a module's globals) the out= keyword; names
    of one function (aliases, as abs and absolute) keep naming one function."""
    wrapped = {}
    for name in names:
        fn = namespace.get(name)
        if fn is None or hasattr(fn, "__out_variant__"):
            continue
        if id(fn) not in wrapped:
            op = wrapped[id(fn)] = with_out(fn, name)
            op.__module__, op.__qualname__ = namespace["__name__"], name  # found by that name
        namespace[name] = wrapped[id(fn)]


def with_out(fn, name):
    """`fn` taking PyTorch's out= keyword (see the module docstring)."""
    factory = name in FACTORIES

    @functools.wraps(fn)
    def op(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call_into(fn, name, factory, args, kwargs, out)

    op.__out_variant__ = True
    return op


def _call_into(fn, name, factory, args, kwargs, out):
    outs = _out_tensors(name, out)
    _check_no_grad(name, args, kwargs, outs)
    if factory:
        kwargs = _factory_kwargs(name, kwargs, outs[0])
    elif name in _COMPUTE_IN_OUT:
        kwargs = _compute_in(name, kwargs, outs[0])
    result = fn(*args, **kwargs)
    results = (result,) if isinstance(result, Tensor) else tuple(result)
    if len(results) != len(outs):
        raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors, "
                        f"got {len(outs)}")
    _check_same_dtype(name, results, outs)
    for value, target in zip(results, outs):
        _check_writable(value, target)
    for value, target in zip(results, outs):
        _write(value, target)
    if isinstance(result, Tensor):
        return out
    return type(result)(*outs) if hasattr(result, "_fields") else type(result)(outs)


def _out_tensors(name, out):
    """`out` as a tuple of tensors (one, or a tuple/list for several results)."""
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, collections.abc.Sequence) and out and all(
            isinstance(t, Tensor) for t in out):
        return tuple(out)
    raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")


def _check_no_grad(name, args, kwargs, outs):
    if not is_grad_enabled():
        return
    values = list(args) + list(kwargs.values()) + list(outs)
    for value in values:
        tensors = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")


def _factory_kwargs(name, kwargs, out):
    """A factory's keywords with out's dtype and device (a different dtype asked is an error)."""
    dtype = kwargs.get("dtype")
    if dtype is not None and dtypes.as_dtype(dtype) is not out.dtype:
        raise RuntimeError(f"dtype {dtypes.scalar_type_name(dtypes.as_dtype(dtype))} does not "
                           f"match dtype of out parameter ({dtypes.scalar_type_name(out.dtype)})")
    return dict(kwargs, dtype=out.dtype, device=out.device)


def _compute_in(name, kwargs, out):
    """A sum's or product's keywords computing in out's dtype; a dtype= asked is out's."""
    dtype = kwargs.get("dtype")
    if dtype is None:
        return dict(kwargs, dtype=out.dtype)
    dtype = dtypes.as_dtype(dtype)
    if dtype is not out.dtype:
        raise _EXACT(name, dtype, out.dtype)
    return kwargs


def _check_same_dtype(name, results, outs):
    """PyTorch's error where op `name` wants its out= in the result's dtype exactly."""
    rule = _SAME_DTYPE.get(name)
    if rule is None or name in _DIM_ONLY and len(results) == 1:
        return
    checked = zip(results, outs) if rule is _EXACT else zip(results[:1], outs[:1])
    for value, target in checked:
        error = value.dtype is not target.dtype and rule(name, value.dtype, target.dtype)
        if error:
            raise error


def _check_writable(value, out):
    if out.device != value.device:
        raise RuntimeError(f"Expected out tensor to have device {value.device}, but got "
                           f"{out.device} instead")
    dtypes.check_result_cast(value.dtype, out.dtype)


def _write(value, out):
    """Copy `value` into `out`, resizing `out` first when the shapes differ."""
    if tuple(out.shape) == tuple(value.shape):
        with no_grad():
            out.copy_(value)
        return
    if out.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(out.shape)}, which does not match the required output shape "
            f"{list(value.shape)}. This behavior is deprecated, and in a future PyTorch release "
            "outputs will not be resized unless they have zero elements. You can explicitly "
            "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            UserWarning, stacklevel=4)
    out.data = value.detach().to(out.dtype).contiguous()
