"""SwiGLU's gate, silu(gate) * up, in one kernel, on the GPU.

("silu_mul": x (..., 2 * N) with unit last stride and rows of one stride, gate in the first N
columns and up in the last N, as a fused gate/up projection gives them; the result (..., N)
contiguous.) One read of each input and one write, where silu and the product as two ops read and
write twice; half types compute in float32 and round once. silu(g) = g / (1 + exp(-g)) with the
division correctly rounded, as PyTorch's CUDA kernel computes it.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import swiglu_gate
from ._strided_indexing import as_rows, cdiv

# 1024 columns a program at 4 warps: 8 elements (16 bytes of a half type) a thread for each
# of gate, up and the output, so loads and stores are 16-byte vectors.
BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def _silu_mul_kernel(
        # pointers: the fused input (rows, 2 * N), the output (rows, N)
        x_ptr, out_ptr,
        # sizes: columns of the output
        n_cols,
        # strides, in elements: of the input's rows
        x_row_stride,
        # meta-parameters
        BLOCK: tl.constexpr):
    """Columns pid1*BLOCK.. of row pid0."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < n_cols
    src = x_ptr + row * x_row_stride + cols
    gate = tl.load(src, mask=ok, other=0.0)
    up = tl.load(src + n_cols, mask=ok, other=0.0)
    y = swiglu_gate(gate, up)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=ok)


def _plan(x, target=None):
    rows, width = x.shape
    return Launch(_silu_mul_kernel, (rows, cdiv(width // 2, BLOCK)), dict(BLOCK=BLOCK),
                  NUM_WARPS, device=x.device, target=target)


_plans = LaunchCache()


@register("silu_mul", "cuda")
def silu_mul(x):
    """silu(x[..., :N]) * x[..., N:] of a (..., 2 * N) array with unit last stride and rows of
    one stride: a new (..., N) array."""
    device = x.device
    key = (x.shape, x.strides, x.dtype, x.ptr % 16 == 0, device)
    plan = _plans.get(key)
    if plan is None:  # an operand of a new geometry (the key holds all the check reads)
        rows = as_rows(x) if x.ndim else None
        if rows is None or x.shape[-1] % 2 or (x.shape[-1] and x.element_strides()[-1] != 1):
            raise RuntimeError(f"silu_mul: expected (..., 2 * N) with unit last stride and rows "
                               f"of one stride, got {x.shape} with strides {x.element_strides()}")
        if x.size:
            plan = _plans.get_or_build(key, lambda: (
                _plan(rows), rows.shape[1] // 2, rows.element_strides()[0]))
    activate(device)
    stream = current_stream_handle(device)
    out = CUDAArray.empty(x.shape[:-1] + (x.shape[-1] // 2,), x.dtype, device, stream)
    if plan is not None:
        launch, half, row_stride = plan
        launch(stream, x, out, half, row_stride)
    return out
