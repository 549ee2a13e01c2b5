"""torch.special's Airy, Bessel, erfcx and Hurwitz zeta functions and its orthogonal polynomials,
one elementwise kernel each (backends/cpu/special.py, backends/cpu/polynomials.py and the GPU's
kernels/special.py), with PyTorch's rules around them:

- integer and bool inputs compute in the default float dtype; float16 and bfloat16 raise
  NotImplementedError, as PyTorch's kernels (float32 and float64 only) do;
- the two-argument functions broadcast (x, n) or (x, q) and take a Python number for either
  one (not both), promoted as PyTorch promotes a wrapped number;
- autograd as PyTorch's: erfcx is differentiable, zeta in q only (in x its backward raises),
  the others give results that do not require grad at all.
"""

import math

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from .common import sum_to
from .creation import tensor
from .elementwise.core import elementwise

_HALVES = (dtypes.float16, dtypes.bfloat16)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _compute_dtype(op, dtype, device):
    """The floating dtype `op` computes in for operands promoting to `dtype`."""
    if not dtype.is_floating_point:
        dtype = dtypes.get_default_dtype()
    if dtype in _HALVES:
        raise NotImplementedError(f"\"{op}_{device.type}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(dtype)}'")
    return dtype


def _input(op, x, name="input"):
    """The tensor argument `name` of unary `op` in the dtype it computes in."""
    if not isinstance(x, Tensor):
        raise TypeError(f"special_{op}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x.to(_compute_dtype(op, x.dtype, x.device))


def _named(fn, op, doc):
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc
    return fn


def _unary(op, doc):
    def fn(input):
        return elementwise(op, _input(op, input))
    return _named(fn, op, doc)


def _unary_of_x(op, doc):
    """As _unary, for the functions whose argument PyTorch names x."""
    def fn(x):
        return elementwise(op, _input(op, x, "x"))
    return _named(fn, op, doc)


def _overload(first, second):
    """Which of PyTorch's overloads a call takes: 0 (Tensor, Tensor), 1 (Number, Tensor) or
    2 (Tensor, Number); None for two numbers, which none takes."""
    tensors = isinstance(first, Tensor), isinstance(second, Tensor)
    return {(True, True): 0, (False, True): 1, (True, False): 2}.get(tensors)


def _operands(op, first, second, names):
    """Both arguments of a two-argument `op` as tensors of its compute dtype on one device; a
    Python number (one at most) becomes a 0-d tensor, promoted as PyTorch's wrapped numbers.
    `names`: the arguments' names in PyTorch's three overloads, for its TypeError."""
    if _overload(first, second) is None:
        got = f"{type(first).__name__}, {type(second).__name__}"
        signatures = "".join(f"\n * ({a}, {b}, *, Tensor out = None)" for a, b in names)
        raise TypeError(f"special_{op}() received an invalid combination of arguments - got "
                        f"({got}), but expected one of:{signatures}\n")
    device = (first if isinstance(first, Tensor) else second).device
    dtype = _compute_dtype(op, dtypes.result_type(first, second), device)
    return tuple(t.to(dtype) if isinstance(t, Tensor) else tensor(t, dtype=dtype, device=device)
                 for t in (first, second))


_POLYNOMIAL_NAMES = (("Tensor x", "Tensor n"), ("Number x", "Tensor n"), ("Tensor x", "Number n"))
_ZETA_NAMES = (("Tensor input", "Tensor other"), ("Number self", "Tensor other"),
               ("Tensor input", "Number other"))


def _polynomial(op, doc):
    def fn(x, n):
        return elementwise(op, *_operands(op, x, n, _POLYNOMIAL_NAMES))
    return _named(fn, op, doc)


class SpecialErfcx(Function):
    """exp(x^2) erfc(x); d/dx = 2x erfcx(x) - 2/sqrt(pi), PyTorch's formula."""

    @staticmethod
    def forward(ctx, x):
        y = elementwise("erfcx", x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (2.0 * x * y - _TWO_OVER_SQRT_PI) * g


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x), without erfc's underflow."""
    return SpecialErfcx.apply(_input("erfcx", input))


class SpecialZeta(Function):
    """The Hurwitz zeta function; d/dq = -x zeta(x + 1, q). PyTorch has no derivative in x.
    Its node is named after the overload called (SpecialZetaBackward0, 1 or 2), as PyTorch's."""

    @staticmethod
    def forward(ctx, x, q, overload):
        ctx.save_for_backward(x, q)
        ctx.node_name = f"SpecialZetaBackward{overload}"
        return elementwise("zeta", x, q)

    @staticmethod
    def backward(ctx, g):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        return None, sum_to(g * -x * zeta(x + 1.0, q), tuple(q.shape)), None


def zeta(input, other):
    """The Hurwitz zeta function sum_k (other + k)^-input."""
    return SpecialZeta.apply(*_operands("zeta", input, other, _ZETA_NAMES),
                             _overload(input, other))


airy_ai = _unary_of_x("airy_ai", "The Airy function Ai(x).")
bessel_j0 = _unary("bessel_j0", "The Bessel function of the first kind of order 0.")
bessel_j1 = _unary("bessel_j1", "The Bessel function of the first kind of order 1.")
bessel_y0 = _unary("bessel_y0", "The Bessel function of the second kind of order 0.")
bessel_y1 = _unary("bessel_y1", "The Bessel function of the second kind of order 1.")
modified_bessel_i0 = _unary("modified_bessel_i0",
                            "The modified Bessel function of the first kind of order 0.")
modified_bessel_i1 = _unary("modified_bessel_i1",
                            "The modified Bessel function of the first kind of order 1.")
modified_bessel_k0 = _unary("modified_bessel_k0",
                            "The modified Bessel function of the second kind of order 0.")
modified_bessel_k1 = _unary("modified_bessel_k1",
                            "The modified Bessel function of the second kind of order 1.")
scaled_modified_bessel_k0 = _unary_of_x("scaled_modified_bessel_k0",
                                        "exp(x) times the modified Bessel function K0(x).")
scaled_modified_bessel_k1 = _unary_of_x("scaled_modified_bessel_k1",
                                        "exp(x) times the modified Bessel function K1(x).")
spherical_bessel_j0 = _unary_of_x("spherical_bessel_j0",
                                  "The spherical Bessel function of the first kind of order 0.")

chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t",
                                     "The Chebyshev polynomial of the first kind T_n(x).")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u",
                                     "The Chebyshev polynomial of the second kind U_n(x).")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v",
                                     "The Chebyshev polynomial of the third kind V_n(x).")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w",
                                     "The Chebyshev polynomial of the fourth kind W_n(x).")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             "T_n(2x - 1), Chebyshev's T shifted to [0, 1].")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             "U_n(2x - 1), Chebyshev's U shifted to [0, 1].")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             "V_n(2x - 1), Chebyshev's V shifted to [0, 1].")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             "W_n(2x - 1), Chebyshev's W shifted to [0, 1].")
hermite_polynomial_h = _polynomial("hermite_polynomial_h",
                                   "The physicists' Hermite polynomial H_n(x).")
hermite_polynomial_he = _polynomial("hermite_polynomial_he",
                                    "The probabilists' Hermite polynomial He_n(x).")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", "The Laguerre polynomial L_n(x).")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", "The Legendre polynomial P_n(x).")

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p", "erfcx", "zeta"]
