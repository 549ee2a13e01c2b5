"""torch.special's Airy, Bessel, erfcx and Hurwitz zeta functions and orthogonal polynomials on
the GPU: the contracts of backends/cpu/special.py and backends/cpu/polynomials.py, one launch
each.

Operands are float32 or float64 arrays of one shape and dtype (broadcast views are copied
dense first), or a Python scalar beside an array; the result is a new contiguous array of that
dtype. The formulas (kernels/_special_formulas.py, kernels/_polynomial_formulas.py) compute in
the data's type, but zeta in float64 always, as PyTorch's CPU kernels (float32's sum would
drift by some ulps from theirs); `OP` (a constexpr string) selects one, so each (op, dtype) is
its own specialization. Their loops run per block until every lane is done: 256 elements a
program keeps a slow lane from holding up many others.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..array_ops import contiguous
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._polynomial_formulas import degree, polynomial
from ._special_formulas import special_unary, zeta
from ._strided_indexing import cdiv
from .copy import fill

BLOCK = 256
NUM_WARPS = 4

UNARY_OPS = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
             "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
             "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
             "spherical_bessel_j0", "erfcx")
POLYNOMIAL_OPS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                  "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                  "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                  "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


@triton.jit
def _unary_kernel(x_ptr, out_ptr, n_elements, OP: tl.constexpr, BLOCK: tl.constexpr):
    """out = OP(x) over elements pid*BLOCK..."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n_elements
    x = tl.load(x_ptr + offs, mask=live, other=0.0)
    tl.store(out_ptr + offs, special_unary(OP, x, live), mask=live)


@triton.jit
def _binary_kernel(x_ptr, y_ptr, out_ptr, n_elements, OP: tl.constexpr, BLOCK: tl.constexpr):
    """out = OP(x, y) over elements pid*BLOCK..: zeta(x, q), or a polynomial p_n(x) of
    degree y (truncated to an integer)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n_elements
    x = tl.load(x_ptr + offs, mask=live, other=0.0)
    y = tl.load(y_ptr + offs, mask=live, other=0.0)
    if OP == "zeta":
        r = zeta(x.to(tl.float64), y.to(tl.float64), live)
    else:
        r = polynomial(OP, x, degree(y), live)
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=live)


def plan(op, n, device, target=None):
    """The launch of `op` over `n` elements."""
    fn = _unary_kernel if op in UNARY_OPS else _binary_kernel
    return Launch(fn, (cdiv(n, BLOCK),), dict(OP=op, BLOCK=BLOCK), NUM_WARPS, int_type="i64",
                  device=device, target=target)


_launches = LaunchCache()


def run(op, *operands):
    """A new contiguous array holding `op` of `operands` (arrays of one shape and dtype, or a
    scalar beside an array)."""
    ref = next(x for x in operands if isinstance(x, CUDAArray))
    device = ref.device
    activate(device)
    stream = current_stream_handle(device)
    operands = [_dense(x, ref, stream) for x in operands]
    out = CUDAArray.empty(ref.shape, ref.dtype, device, stream)
    n = out.size
    if n:
        key = (op, out.dtype, n, device) + tuple(x.ptr % 16 == 0 for x in operands + [out])
        _launches.get_or_build(key, lambda: plan(op, n, device))(stream, *operands, out, n)
    return out


def _dense(x, ref, stream):
    """`x` as a contiguous array of ref's shape and dtype (a scalar filled in)."""
    if not isinstance(x, CUDAArray):
        full = CUDAArray.empty(ref.shape, ref.dtype, ref.device, stream)
        fill(full, x, stream)
        return full
    return x if x.is_contiguous() else contiguous(x)


def _unary(op):
    def kernel(x):
        return run(op, x)
    kernel.__name__ = kernel.__qualname__ = op
    kernel.__doc__ = f"`{op}` on the GPU (see the module docstring)."
    return kernel


def _polynomial(op):
    def kernel(x, n):
        return run(op, x, n)
    kernel.__name__ = kernel.__qualname__ = op
    kernel.__doc__ = f"`{op}`(x, n) on the GPU (see the module docstring)."
    return kernel


@register("zeta", "cuda")
def zeta_(x, q):
    """The Hurwitz zeta function on the GPU (see the module docstring)."""
    return run("zeta", x, q)


for _op in UNARY_OPS:
    register(_op, "cuda")(_unary(_op))
for _op in POLYNOMIAL_OPS:
    register(_op, "cuda")(_polynomial(_op))
