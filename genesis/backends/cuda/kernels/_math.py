"""Device math shared by the kernel modules: correctly rounded division and square root (as
PyTorch's CUDA kernels compute them), SwiGLU's gate, the matmul epilogues' activations and
tile order, which dtypes are floating, and the wait of a programmatic dependent launch."""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

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


@triton.jit
def swiglu_gate(gate, up):
    """silu(gate) * up (SwiGLU's gate) in float32, float64 in float64, the division correctly
    rounded as PyTorch's CUDA silu divides."""
    if gate.dtype != tl.float64:
        gate = gate.to(tl.float32)
        up = up.to(tl.float32)
    return div_rn(gate, 1.0 + tl.exp(-gate)) * up


@triton.jit
def apply_activation(x, ACT: tl.constexpr):
    """A matmul epilogue's activation (kernels/matmul.py ACTIVATIONS): none, relu, exact gelu,
    tanh gelu, silu."""
    if ACT == 1:
        x = tl.maximum(x, 0.0)
    elif ACT == 2:
        x = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    elif ACT == 3:
        x = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif ACT == 4:
        x = x / (1.0 + libdevice.exp(-x))
    return x


@triton.jit
def grouped_tile(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(row, column) of output tile number `tile` when tiles go GROUP_M tile-rows at a time:
    consecutive tiles sweep a GROUP_M-tall band column by column, so the tiles of A and B
    they load are still in L2 (the matmul kernels' program order)."""
    band = GROUP_M * tiles_n
    first_m = (tile // band) * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (tile % band) % band_rows, (tile % band) // band_rows


def is_float(dtype):
    """True for floating numpy dtypes, bfloat16 included (whose numpy kind is "V")."""
    return dtype in _FLOATS


@triton.jit
def wait_for_prior_grid(PDL: tl.constexpr):
    """With PDL (the kernel launched as a programmatic dependent, launch.Launch's `pdl`): wait
    until the previous kernel in the stream has finished and its writes are visible, then let
    the next kernel's programs be dispatched. Called before the kernel's first memory access,
    so no ordering of the stream is lost: only the dispatch overlaps."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
