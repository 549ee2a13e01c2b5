"""Device math shared by the kernel modules: correctly rounded division and square root (as
PyTorch's CUDA kernels compute them), and which dtypes are floating."""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

_FLOATS = frozenset(np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))


@triton.jit
def div_rn(a, b):
    """a / b correctly rounded, as PyTorch's CUDA kernels divide: Triton's float32 `/` is an
    approximate division (div.full.f32, up to 2 ulp off); float64 `/` is already exact."""
    q = a / b
    if q.dtype == tl.float32:
        q = tl.div_rn(tl.cast(a, tl.float32), tl.cast(b, tl.float32))
    return q


@triton.jit
def sqrt_rn(x):
    """Correctly rounded square root (tl.sqrt is approximate for float32)."""
    if x.dtype == tl.float64:
        r = tl.sqrt(x)
    else:
        r = tl.sqrt_rn(x)
    return r


def is_float(dtype):
    """True for floating numpy dtypes, bfloat16 included (whose numpy kind is "V")."""
    return dtype in _FLOATS
