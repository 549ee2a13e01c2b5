"""GradScaler's unscale: every gradient multiplied by 1/scale in place, and a flag set when any
holds inf or NaN, in one multi-tensor launch per gradient dtype.

The gradients travel as the optimizer kernels' table of (address, element count) rows and
(array, first element) chunks (see kernels/optim.py), so a model's gradients are one launch.
The flag is written, never accumulated: programs that find a non-finite value all store 1.0,
so the result does not depend on their order.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from .optim import _TL, BLOCK, _buckets, _chunk, _launch, _list_table


@triton.jit
def _unscale_kernel(
    # the gradient table and its chunks (kernels/optim.py's layout)
    tensors, chunks,
    # 0-d float32 tensors on the device
    found_inf_ptr, inv_scale_ptr,
    GRAD_T: tl.constexpr, COMPUTE_T: tl.constexpr, BLOCK: tl.constexpr,
):
    """g *= inv_scale over this program's chunk; found_inf = 1 if the chunk holds inf/NaN."""
    inv_scale = tl.load(inv_scale_ptr).to(COMPUTE_T)
    g_ptr, start, end = _chunk(tensors, chunks, 0, GRAD_T)
    non_finite = tl.zeros([BLOCK], dtype=tl.int32)
    for offset in range(start, end, BLOCK):
        idx = offset + tl.arange(0, BLOCK)
        mask = idx < end
        g = tl.load(g_ptr + idx, mask=mask, other=0.0).to(COMPUTE_T)
        non_finite |= (tl.abs(g) == float("inf")).to(tl.int32) | (g != g).to(tl.int32)
        tl.store(g_ptr + idx, (g * inv_scale).to(GRAD_T), mask=mask)
    if tl.max(non_finite, axis=0) > 0:
        tl.store(found_inf_ptr, 1.0)


def _launch_unscale(tensors, chunks, n_chunks, found_inf, inv_scale, grad_dtype, device, stream,
                    target=None):
    """One launch over `n_chunks` chunks of gradients of `grad_dtype` (or, with `target`, its
    compilation alone)."""
    grad_dtype = np.dtype(grad_dtype)
    compute = tl.float64 if grad_dtype == np.float64 else tl.float32
    _launch(_unscale_kernel, (n_chunks,), (tensors, chunks, found_inf, inv_scale),
            dict(GRAD_T=_TL[grad_dtype.name], COMPUTE_T=compute, BLOCK=BLOCK), device, stream,
            target)


@register("amp_unscale_", "cuda")
def amp_unscale_(grads, found_inf, inv_scale):
    """Multiply the contiguous `grads` by the 0-d float32 `inv_scale` in place and set the 0-d
    float32 `found_inf` to 1 if any holds inf or NaN: one launch per gradient dtype."""
    if not grads:
        return
    device = grads[0].device
    activate(device)
    stream = current_stream_handle(device)
    for (grad_dtype,), idx in _buckets(grads).items():
        _, tensors, chunks, n_chunks = _list_table(grads, idx, device, stream)
        if n_chunks:
            _launch_unscale(tensors, chunks, n_chunks, found_inf, inv_scale, grad_dtype, device,
                            stream)
