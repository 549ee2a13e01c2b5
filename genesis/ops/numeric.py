"""Smaller numeric and shape functions of the torch namespace, composed from existing ops:
angle conversions, gcd/lcm, ldexp, frexp, nextafter, logaddexp2, trace, inner, dist, renorm, the
trapezoid rules, vander, diagflat, hsplit/vsplit/dsplit, unravel_index, broadcasting helpers,
combinations."""

import builtins
import itertools
import math

from .. import dtypes
from .._warnings import warn_once
from ..autograd.function import Function, name_node
from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor, check_host_read, wrap_dim
from .common import _finfo, broadcast_shapes as _broadcast_shapes, sum_to
from .creation import CreationMethods, as_tensor, empty, full_like, tensor, zeros
from .elementwise import (ElementwiseMethods, _inplace, abs, acosh, asinh, atanh, exp2, isfinite,
                          isinf, logaddexp, logical_and, remainder, sub, trunc, where)
from .gather_scatter import index_select
from .index import IndexMethods
from .linalg import tensordot
from .named_tuples import return_type
from .products import ProductsMethods
from .random import multinomial
from .ranges import arange
from .reduce import cumprod, cumsum, sum, vector_norm
from .shape import ShapeMethods, broadcast_to, chunk, diagonal, flatten, narrow, split, tensor_split
from .shape_copies import cat, diag, stack
from .size_args import _shape_arg
from .special import SpecialMethods, float_operands

_LN2 = math.log(2.0)


def deg2rad(input):
    """Degrees to radians."""
    return input * (math.pi / 180)


def rad2deg(input):
    """Radians to degrees."""
    return input * (180 / math.pi)


def positive(input):
    """`input` itself (unary plus); bool tensors are rejected as in PyTorch."""
    if input.dtype is dtypes.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def isposinf(input):
    """Whether each element is +inf."""
    return logical_and(isinf(input), input > 0)


def isneginf(input):
    """Whether each element is -inf."""
    return logical_and(isinf(input), input < 0)


def logaddexp2(input, other):
    """log2(2^input + 2^other), without overflow."""
    return logaddexp(input * _LN2, other * _LN2) / _LN2


def ldexp(input, other):
    """input * 2^other."""
    return input * exp2(other)


_HALF = (dtypes.float16, dtypes.bfloat16)
_DIGITS = {dtypes.float64: 53, dtypes.float32: 24, dtypes.float16: 11, dtypes.bfloat16: 8}
_FrexpResult = return_type("frexp", ("mantissa", "exponent"))


def _exact_compute(t):
    """`t` in a type that holds its values' powers of two exactly: float64 for float32 and
    float64, float32 for the half types."""
    return t.to(dtypes.float32 if t.dtype in _HALF else dtypes.float64)


def _times_power_of_two(x, k):
    """x * 2^k, exact, in two halves so that neither power overflows for subnormal x."""
    half = (k / 2).floor()
    return x * exp2(half) * exp2(k - half)


def _binary_exponent(x):
    """e with |x| = m 2^e, 0.5 <= m < 1, for finite nonzero x (0 elsewhere): log2's estimate,
    put right where it rounded across a power of two."""
    finite = isfinite(x) & (x != 0)
    size = abs(where(finite, x, 1.0))
    e = size.log2().floor() + 1
    m = _times_power_of_two(size, -e)
    e = where(m >= 1, e + 1, where(m < 0.5, e - 1, e))
    return where(finite, e, 0.0)


class Frexp(Function):
    """The mantissa x 2^-e of x, given e; d/dx = 2^-e, as PyTorch's."""

    @staticmethod
    def forward(ctx, x, e):
        ctx.save_for_backward(e)
        return _times_power_of_two(_exact_compute(x), e).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        return g / exp2(-e.to(g.dtype)), None


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2^exponent and 0.5 <= |mantissa| < 1
    (mantissa = input and exponent 0 for zeros, infinities and NaN); exponent is int32."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("frexp() only supports floating-point dtypes")
    with no_grad():
        e = _binary_exponent(_exact_compute(input.detach()))
    return _FrexpResult(Frexp.apply(input, -e), e.to(dtypes.int32))


class NextAfter(Function):
    """The next value of `x`'s type after x toward y. PyTorch's gradient: g to x where x != y
    (where they are equal the result is y), zero to y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _next_after(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return where(x != y, g, 0.0), g * 0


def _next_after(x, y):
    """x moved one unit in the last place toward y (y where they are equal, NaN for NaN): the
    spacing at x is 2^(e - digits), or the smallest subnormal, halved when stepping down from a
    power of two toward zero (and the smallest subnormal from zero)."""
    dtype = x.dtype
    info = _finfo(dtype)
    tiny, largest = float(info.smallest_subnormal), float(info.max)
    xc, yc = _exact_compute(x), _exact_compute(y)
    e = _binary_exponent(xc)
    toward_zero = (yc > xc) != (xc > 0)
    power_of_two = abs(_times_power_of_two(xc, -e)) == 0.5
    e = where(toward_zero & power_of_two, e - 1, e)
    spacing = where(xc == 0, 0.0, exp2(e - _DIGITS[dtype])).clamp(min=tiny)
    out = xc + where(yc > xc, spacing, -spacing)
    out = where(out == 0, xc * 0.0, out)  # zero reached from x keeps x's sign
    out = where(isinf(xc), xc.sign() * largest, out)
    return where(xc == yc, yc, where((xc != xc) | (yc != yc), math.nan, out)).to(dtype)


def nextafter(input, other):
    """The next floating-point value after `input` toward `other`, elementwise."""
    return NextAfter.apply(*float_operands("nextafter", input, other))


def _check_integral(op, *xs):
    for x in xs:
        if x.dtype.is_floating_point or x.dtype is dtypes.bool_:
            raise RuntimeError(f"\"{op}_cpu\" not implemented for "
                               f"'{dtypes.scalar_type_name(x.dtype)}'")


def gcd(input, other):
    """Greatest common divisor, elementwise, by Euclid's algorithm on every element at once."""
    _check_integral("gcd", input, other)
    a, b = abs(input), abs(other)
    shape = _broadcast_shapes(tuple(a.shape), tuple(b.shape), op="gcd")
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    while bool((b != 0).any().item()):
        done = b == 0
        a, b = where(done, a, b), where(done, 0, remainder(a, where(done, 1, b)))
    return a


def lcm(input, other):
    """Least common multiple, elementwise (0 when either is 0)."""
    g = gcd(input, other)
    return abs(input * (other // where(g == 0, 1, g)))


def trace(input):
    """Sum of the main diagonal of a 2-D tensor."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return name_node(sum(diagonal(input)), "TraceBackward0")


def inner(input, other):
    """Sum of products over the last dimension (a product with a scalar when one is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def dist(input, other, p=2):
    """The p-norm of input - other (its node named DistBackward0, as PyTorch's)."""
    return name_node(vector_norm(sub(input, other), p), "DistBackward0")


def renorm(input, p, dim, maxnorm):
    """Each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to norm `maxnorm`."""
    dim = wrap_dim(dim, input.ndim, "renorm")
    others = [d for d in builtins.range(input.ndim) if d != dim]
    norms = vector_norm(input, p, dim=others, keepdim=True)
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * scale


def _spacing(y, x, dx, dim):
    if x is None:
        return dx
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[dim] = x.shape[0] - 1
        return (narrow(x, 0, 1, x.shape[0] - 1) - narrow(x, 0, 0, x.shape[0] - 1)).reshape(shape)
    n = x.shape[dim]
    return narrow(x, dim, 1, n - 1) - narrow(x, dim, 0, n - 1)


def _trapezoids(y, x, dx, dim):
    dim = wrap_dim(dim, y.ndim, "trapezoid")
    n = y.shape[dim]
    if n == 0:
        return None, dim
    heights = narrow(y, dim, 1, n - 1) + narrow(y, dim, 0, n - 1)
    return heights * _spacing(y, x, dx, dim) / 2, dim


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`, with sample points `x` or spacing `dx` (default 1)."""
    pieces, dim = _trapezoids(y, x, 1 if dx is None else dx, dim)
    if pieces is None:
        shape = list(y.shape)
        del shape[dim]
        return zeros(tuple(shape), dtype=y.dtype, device=y.device)
    return sum(pieces, dim=dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along `dim` (one element fewer than `y`)."""
    pieces, dim = _trapezoids(y, x, 1 if dx is None else dx, dim)
    return y if pieces is None else cumsum(pieces, dim)


def _check_spacing(spacing, dims, input):
    """One step (a number) or one 1-D coordinate tensor per dimension in `dims`."""
    if isinstance(spacing, (int, float)):
        return [spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(dims)}.")
    for h, d in zip(spacing, dims):
        if isinstance(h, Tensor) and h.ndim != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                               f"dimension, but got an element with {h.ndim} dimensions!")
        if isinstance(h, Tensor) and h.shape[0] != input.shape[d]:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and of size {input.shape[d]} along dimension {d}, got "
                               f"{h.shape[0]}")
    return spacing


def _slicer(f, dim):
    """at(start, length=1): the slice of `f` along `dim` (a view)."""
    return lambda start, length=1: narrow(f, dim, start, length)


def _uniform_gradient(f, dim, h, edge_order):
    """Central differences with step h inside; one-sided of order `edge_order` at the ends."""
    n = f.shape[dim]
    at = _slicer(f, dim)
    inside = (at(2, n - 2) - at(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(n - 1) - at(n - 2)) / h
    else:
        first = (-1.5 * at(0) + 2 * at(1) - 0.5 * at(2)) / h
        last = (0.5 * at(n - 3) - 2 * at(n - 2) + 1.5 * at(n - 1)) / h
    return cat([first, inside, last], dim)


def _coordinate_gradient(f, dim, x, edge_order):
    """numpy.gradient's second-order differences over the sample coordinates `x`."""
    n = f.shape[dim]
    at = _slicer(f, dim)
    shape = [1] * f.ndim
    shape[dim] = -1
    dx = (x[1:] - x[:-1]).to(f.dtype)
    h1, h2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
    inside = (-h2 / (h1 * (h1 + h2)) * at(0, n - 2) + (h2 - h1) / (h1 * h2) * at(1, n - 2)
              + h1 / (h2 * (h1 + h2)) * at(2, n - 2))
    if edge_order == 1:
        first, last = (at(1) - at(0)) / dx[0], (at(n - 1) - at(n - 2)) / dx[-1]
    else:
        a, b = dx[0], dx[1]
        first = (-(2 * a + b) / (a * (a + b)) * at(0) + (a + b) / (a * b) * at(1)
                 - a / (b * (a + b)) * at(2))
        a, b = dx[-2], dx[-1]
        last = (b / (a * (a + b)) * at(n - 3) - (a + b) / (a * b) * at(n - 2)
                + (2 * b + a) / (b * (a + b)) * at(n - 1))
    return cat([first, inside, last], dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of `input` estimated along each of `dim` (all dimensions by default), one
    tensor per dimension: central differences inside, one-sided differences of order
    `edge_order` at the ends. `spacing` is one step for every dimension, one step per dimension,
    or one 1-D tensor of sample coordinates per dimension (as numpy.gradient)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = builtins.range(input.ndim) if dim is None else [dim] if isinstance(dim, int) else dim
    dims = [wrap_dim(d, input.ndim, "gradient") for d in dims]
    spacing = _check_spacing(spacing, dims, input)
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return tuple(_coordinate_gradient(input, d, h, edge_order) if isinstance(h, Tensor) else
                 _uniform_gradient(input, d, h, edge_order) for d, h in zip(dims, spacing))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D `x`: columns x^(N-1) ... x^0 (reversed if increasing)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    powers = arange(n, device=x.device)
    if not increasing:
        powers = (n - 1) - powers
    base = x if x.dtype.is_floating_point or x.dtype is dtypes.int64 else x.long()
    return base.unsqueeze(1) ** powers.unsqueeze(0)


def diagflat(input, offset=0):
    """A 2-D matrix with the flattened input on diagonal `offset`."""
    return diag(flatten(input), offset)


def _split_along(op, input, sections, dim, min_ndim):
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of "
                           f"the dimension {input.shape[dim]} is not divisible by the split_size "
                           f"{sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """tensor_split along the columns (dimension 1; 0 for a 1-D tensor)."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """tensor_split along the rows (dimension 0) of a tensor of 2 or more dimensions."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """tensor_split along the depth (dimension 2) of a tensor of 3 or more dimensions."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of the given sizes along `dim` (they must add up to its size)."""
    dim = wrap_dim(dim, input.ndim, "split_with_sizes")
    if builtins.sum(split_sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), dim)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat `indices`, one tensor per dimension."""
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = math.prod(shape)
    if indices.numel() and (indices.min().item() < -total or indices.max().item() >= total):
        raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
    flat = remainder(indices.long(), builtins.max(total, 1))
    out = []
    for size in reversed(shape):
        out.append(remainder(flat, size))
        flat = flat // size
    return tuple(reversed(out))


def broadcast_shapes(*shapes):
    """The shape all of `shapes` (ints or sequences of ints) broadcast to (a Size), with
    torch.broadcast_shapes's errors: each shape read from its last dim into the common one."""
    common = [1] * builtins.max([1 if isinstance(s, int) else len(s) for s in shapes],
                                default=0)
    for index, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, int) else shape
        for dim in builtins.range(-1, -1 - len(shape), -1):
            if shape[dim] < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if common[dim] == 1:
                common[dim] = shape[dim]
            elif shape[dim] not in (1, common[dim]):
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[dim]} at {dim}! "
                    f"Mismatching argument at index {index} had {shape}; but expected shape "
                    f"should be broadcastable to {common}")
    return Size(common)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape (views)."""
    shape = _broadcast_shapes(*(tuple(t.shape) for t in tensors), op="broadcast_tensors")
    return tuple(broadcast_to(t, shape) for t in tensors)


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-D tensor's elements, as rows (itertools order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    if not rows or r == 0:
        return zeros((0,) if r == 0 else (0, r), dtype=input.dtype, device=input.device)
    index = tensor(rows, dtype=dtypes.int64, device=input.device)
    return stack([index_select(input, 0, index[:, j]) for j in builtins.range(r)], dim=1)


def fill(input, value):
    """A new tensor of input's shape, dtype and device filled with `value`."""
    return full_like(input, value.item() if isinstance(value, Tensor) else value)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """`obj` as a tensor: shared when it already is one of that dtype and device (unless
    copy=True), a new tensor otherwise (an error with copy=False when a copy is needed)."""
    out = as_tensor(obj, dtype=dtype, device=device)
    shared = out is obj
    if copy is False and not shared and isinstance(obj, Tensor):
        raise ValueError("asarray(): can't satisfy copy=False: a copy is needed to change the "
                         "dtype or device")
    if copy and (shared or not isinstance(obj, Tensor)):
        out = out.clone()
    return out.requires_grad_(True) if requires_grad else out


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated in PyTorch for arange (it warns once): values from start to end inclusive,
    `step` apart, in the default float dtype."""
    warn_once("range", "torch.range is deprecated and will be removed in a future release because "
              "its behavior is inconsistent with Python's range builtin. Instead, use "
              "torch.arange, which produces values in [start, end).")
    if end is None:
        start, end = 0, start
    if step == 0 or (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = math.floor((end - start) / step) + 1
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    out = (arange(count, dtype=dtypes.float64, device=device) * step + start).to(dtype)
    return out.requires_grad_(True) if requires_grad else out


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given size and strides (over just enough storage)."""
    size, stride = _shape_arg((size,), "empty_strided"), tuple(stride)
    extent = 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    out = empty(extent, dtype=dtype, device=device).as_strided(size, stride)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of `size` whose dimensions lie in memory in the order
    `physical_layout` (outermost first): empty_permuted((2, 3, 4), (0, 2, 1)) has strides
    (12, 1, 3)."""
    size, layout = tuple(size), tuple(physical_layout)
    if len(size) != len(layout):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(layout)}")
    if sorted(layout) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(layout)} is not a permutation "
                           f"of the dimensions of size {list(size)}")
    out = empty(tuple(size[d] for d in layout), dtype=dtype, device=device)
    out = out.permute(*(layout.index(d) for d in builtins.range(len(size))))
    return out.requires_grad_(True) if requires_grad else out


def get_device(input):
    """The CUDA device index of a CUDA tensor, -1 for a CPU tensor."""
    return input.get_device()


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding `s` (in the default float dtype unless `dtype` is given)."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    out = tensor(s, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


def _expandable(size, shape):
    """Whether `size` broadcasts to exactly `shape`."""
    if len(size) > len(shape):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(size), reversed(shape)))


def is_nonzero(input):
    """The truth value of a one-element tensor: bool(input), as PyTorch's `__bool__` is."""
    check_host_read(input, "control flow")
    return bool(input)


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    """Whether the tensor's dtype is a signed type."""
    return input.dtype.is_signed


def ravel(input):
    """`input` flattened to 1-D (a view when its layout allows)."""
    return flatten(input)


fix, arccosh, arcsinh, arctanh = trunc, acosh, asinh, atanh
unsafe_chunk, unsafe_split, unsafe_split_with_sizes = chunk, split, split_with_sizes


class NumericMethods:
    """Tensor methods of this family and their in-place forms."""

    deg2rad = deg2rad
    rad2deg = rad2deg
    fix = fix
    positive = positive
    isposinf = isposinf
    isneginf = isneginf
    logaddexp2 = logaddexp2
    ldexp = ldexp
    frexp = frexp
    nextafter = nextafter
    nextafter_ = _inplace(nextafter, "nextafter_")
    gcd = gcd
    lcm = lcm
    trace = trace
    inner = inner
    dist = dist
    renorm = renorm
    diagflat = diagflat
    hsplit = hsplit
    vsplit = vsplit
    dsplit = dsplit
    split_with_sizes = split_with_sizes
    ravel = ravel
    arccosh = arccosh
    arcsinh = arcsinh
    arctanh = arctanh
    is_nonzero = is_nonzero
    is_same_size = is_same_size
    is_signed = is_signed
    unsafe_chunk = unsafe_chunk
    unsafe_split = unsafe_split
    unsafe_split_with_sizes = unsafe_split_with_sizes
    deg2rad_ = _inplace(deg2rad, "deg2rad_")
    rad2deg_ = _inplace(rad2deg, "rad2deg_")
    fix_ = _inplace(fix, "fix_")
    ldexp_ = _inplace(ldexp, "ldexp_")
    gcd_ = _inplace(gcd, "gcd_")
    lcm_ = _inplace(lcm, "lcm_")
    renorm_ = _inplace(renorm, "renorm_")
    arccosh_ = _inplace(arccosh, "arccosh_")
    arcsinh_ = _inplace(arcsinh, "arcsinh_")
    arctanh_ = _inplace(arctanh, "arctanh_")
    cumsum_ = _inplace(cumsum, "cumsum_")
    cumprod_ = _inplace(cumprod, "cumprod_")
    multinomial = multinomial
    swapaxes_ = ShapeMethods.transpose_
    swapdims_ = ShapeMethods.transpose_

    def type_as(self, other):
        """This tensor converted to `other`'s dtype."""
        return self.to(other.dtype)

    def where(self, condition, y):
        """`where(condition, self, y)`."""
        return where(condition, self, y)

    def sum_to_size(self, *size):
        """`self` summed down to `size`, which it must broadcast from."""
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        if not _expandable(size, tuple(self.shape)):
            raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                               f"{{{', '.join(map(str, self.shape))}}}.")
        return sum_to(self, size)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                          pin_memory=False):
        """empty_strided with this tensor's dtype and device unless given."""
        return empty_strided(size, stride, dtype=dtype or self.dtype,
                             device=device or self.device, requires_grad=requires_grad)

    def fill_diagonal_(self, fill_value, wrap=False):
        """Write `fill_value` on the main diagonal (of a matrix, or of an equal-sided tensor)."""
        if self.ndim < 2:
            raise RuntimeError("dimensions must larger than 1")
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        rows = self.shape[0]
        step = self.shape[1] + 1 if wrap and self.ndim == 2 else rows  # wrap: again 1 row down
        stride = builtins.sum(self.stride())
        for start in builtins.range(0, rows, builtins.max(step, 1)):
            count = builtins.min(rows - start, *self.shape[1:])
            offset = self.storage_offset() + start * self.stride(0)
            self.as_strided((count,), (stride,), offset).fill_(fill_value)
        return self


# The in-place ops (and detach) that PyTorch also exposes in the torch namespace: the Tensor
# methods themselves, so `genesis.abs_(x)` is `x.abs_()`.
abs_ = ElementwiseMethods.abs_
acos_ = ElementwiseMethods.acos_
acosh_ = ElementwiseMethods.acosh_
addmv_ = ProductsMethods.addmv_
arccos_ = ElementwiseMethods.arccos_
arccosh_ = NumericMethods.arccosh_
arcsin_ = ElementwiseMethods.arcsin_
arcsinh_ = NumericMethods.arcsinh_
arctan_ = ElementwiseMethods.arctan_
arctanh_ = NumericMethods.arctanh_
asin_ = ElementwiseMethods.asin_
asinh_ = ElementwiseMethods.asinh_
atan_ = ElementwiseMethods.atan_
atanh_ = ElementwiseMethods.atanh_
ceil_ = ElementwiseMethods.ceil_
clamp_ = ElementwiseMethods.clamp_
clamp_max_ = ElementwiseMethods.clamp_max_
clamp_min_ = ElementwiseMethods.clamp_min_
clip_ = ElementwiseMethods.clip_
cos_ = ElementwiseMethods.cos_
cosh_ = ElementwiseMethods.cosh_
deg2rad_ = NumericMethods.deg2rad_
detach = Tensor.detach
detach_ = Tensor.detach_
erf_ = ElementwiseMethods.erf_
erfc_ = ElementwiseMethods.erfc_
exp2_ = ElementwiseMethods.exp2_
exp_ = ElementwiseMethods.exp_
expm1_ = ElementwiseMethods.expm1_
fill_ = CreationMethods.fill_
fix_ = NumericMethods.fix_
floor_ = ElementwiseMethods.floor_
frac_ = ElementwiseMethods.frac_
gcd_ = NumericMethods.gcd_
i0_ = SpecialMethods.i0_
index_put_ = IndexMethods.index_put_
lcm_ = NumericMethods.lcm_
ldexp_ = NumericMethods.ldexp_
log10_ = ElementwiseMethods.log10_
log1p_ = ElementwiseMethods.log1p_
log2_ = ElementwiseMethods.log2_
log_ = ElementwiseMethods.log_
logit_ = SpecialMethods.logit_
nan_to_num_ = ElementwiseMethods.nan_to_num_
neg_ = ElementwiseMethods.neg_
negative_ = ElementwiseMethods.negative_
rad2deg_ = NumericMethods.rad2deg_
reciprocal_ = ElementwiseMethods.reciprocal_
relu_ = ElementwiseMethods.relu_
round_ = ElementwiseMethods.round_
rsqrt_ = ElementwiseMethods.rsqrt_
sigmoid_ = ElementwiseMethods.sigmoid_
sin_ = ElementwiseMethods.sin_
sinc_ = SpecialMethods.sinc_
sinh_ = ElementwiseMethods.sinh_
sqrt_ = ElementwiseMethods.sqrt_
square_ = ElementwiseMethods.square_
tan_ = ElementwiseMethods.tan_
tanh_ = ElementwiseMethods.tanh_
trunc_ = ElementwiseMethods.trunc_
xlogy_ = ElementwiseMethods.xlogy_
zero_ = CreationMethods.zero_

__all__ = [
    "deg2rad", "rad2deg", "fix", "positive", "isposinf", "isneginf", "logaddexp2", "ldexp", "frexp",
    "nextafter", "gcd",
    "lcm", "trace", "inner", "dist", "renorm", "diagflat", "hsplit", "vsplit", "dsplit",
    "split_with_sizes", "ravel", "arccosh", "arcsinh", "arctanh", "is_nonzero", "is_same_size",
    "is_signed", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "abs_", "acos_",
    "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "cos_", "cosh_", "deg2rad_", "detach", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_",
    "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
    "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "trapezoid", "trapz",
    "cumulative_trapezoid", "vander", "unravel_index", "broadcast_shapes", "broadcast_tensors",
    "combinations", "scalar_tensor", "fill", "asarray", "range", "empty_strided",
    "gradient", "empty_permuted", "get_device"]
