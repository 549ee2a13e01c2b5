"""A residual add followed by RMSNorm in one kernel, on the GPU (inference: no gradient).

("add_rms_norm": x and y (..., N) with unit last strides, rows of one stride, the norm's weight
(N,), eps.)
Returns h = x + y, rounded to the dtype as the add alone would round it, and
h * rsqrt(mean(h^2) + eps) * weight computed from that rounded h in float32 and rounded once,
as kernels/norm.py's RMSNorm computes it: the two results of `h = x + y; norm(h)`, with one
launch and one read of each input where the two ops take two launches and read h again.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn, wait_for_prior_grid
from ._strided_indexing import as_rows, next_pow2

# A row a program, whole in registers: next_pow2(N) lanes, 1024 lanes per 2 warps up to 16
# warps (16384 float32 values, 32 a thread, as kernels/norm.py's one-pass rows); wider rows
# take the two ops.
MAX_WIDTH = 16384


@triton.jit
def _add_rms_norm_kernel(
        # pointers: the inputs, the weight (N,), the sum h and the normalized output (rows, N)
        x_ptr, y_ptr, w_ptr, h_ptr, out_ptr,
        # sizes: the row length
        n_cols,
        # strides, in elements: of the rows of x and y (h and out are contiguous)
        x_row_stride, y_row_stride,
        # the norm's epsilon
        eps,
        # meta-parameters
        BN: tl.constexpr, PDL: tl.constexpr):
    """Row pid0."""
    wait_for_prior_grid(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BN)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=ok, other=0.0)
    y = tl.load(y_ptr + row * y_row_stride + cols, mask=ok, other=0.0)
    h = (x.to(tl.float32) + y.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * n_cols + cols, h, mask=ok)
    v = h.to(tl.float32)
    rstd = libdevice.rsqrt(div_rn(tl.sum(v * v, 0), n_cols) + eps)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, (v * rstd * w).to(out_ptr.dtype.element_ty),
             mask=ok)


def supports(x, y, weight):
    """The kernel takes these: (..., N) inputs of one shape and dtype with a unit last stride,
    N at most MAX_WIDTH, a contiguous (N,) weight of that dtype (and rows of one stride:
    `as_rows`)."""
    return (x.ndim >= 1 and x.shape == y.shape and weight.shape == x.shape[-1:]
            and x.dtype == y.dtype == weight.dtype and 0 < x.shape[-1] <= MAX_WIDTH
            and all(a.element_strides()[-1] == 1 for a in (x, y, weight)))


def _plan(x, target=None):
    bn = next_pow2(x.shape[1])
    return Launch(_add_rms_norm_kernel, (x.shape[0],), dict(BN=bn),
                  max(1, min(16, bn // 512)), device=x.device, target=target,
                  pdl=x.shape[0] == 1)


def _row_geometry(x, y):
    """(row length, row strides of x and y in elements) of (rows, N) arrays x and y: what
    _launch passes besides the pointers."""
    return x.shape[1], x.element_strides()[0], y.element_strides()[0]


def _launch(launch, geometry, stream, x, y, weight, h, out, eps):
    """The call of _add_rms_norm_kernel; `geometry` as _row_geometry gives it for x and y (any
    arrays at their addresses: only the pointers are read from them)."""
    n_cols, x_row_stride, y_row_stride = geometry
    launch(stream, x, y, weight, h, out, n_cols, x_row_stride, y_row_stride, float(eps))


_plans = LaunchCache()


@register("add_rms_norm", "cuda")
def add_rms_norm(x, y, weight, eps):
    """(x + y, rms_norm(x + y) * weight), new contiguous arrays of x's shape."""
    device = x.device
    key = (x.shape, x.strides, y.shape, y.strides, weight.shape, weight.strides, x.dtype,
           y.dtype, weight.dtype, (x.ptr % 16 == 0, y.ptr % 16 == 0, weight.ptr % 16 == 0), device)
    plan = _plans.get(key)
    if plan is None:  # operands of a new geometry (the key holds all the check reads)
        x2, y2 = as_rows(x), as_rows(y)
        if not supports(x, y, weight) or x2 is None or y2 is None:
            raise RuntimeError(f"add_rms_norm: unsupported operands {x.shape}, {y.shape} of "
                               f"{x.dtype}, {y.dtype}, weight {weight.shape} of {weight.dtype}")
        if x.size:
            plan = _plans.get_or_build(key, lambda: (_plan(x2), _row_geometry(x2, y2)))
    activate(device)
    stream = current_stream_handle(device)
    h = CUDAArray.empty(x.shape, x.dtype, device, stream)
    out = CUDAArray.empty(x.shape, x.dtype, device, stream)
    if plan is not None:
        _launch(plan[0], plan[1], stream, x, y, weight, h, out, eps)
    return h, out
