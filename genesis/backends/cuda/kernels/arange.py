"""`arange` made on the GPU: out[i] = start + i * step, so that it needs no host copy (and can be
captured in a CUDA graph).

The values are computed as the CPU backend computes them: in float64 for float32 and float64
outputs, float32 for half types, int64 for integers, then rounded once to the output type.
"""

import triton
import triton.language as tl

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import cdiv

# 1024 elements a program, 4 warps: 8 stores a thread.
BLOCK = 1024


@triton.jit
def _arange_kernel(out_ptr, n_elements, start, step, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = start + i * step, in ACC, rounded to out's type."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    values = start.to(ACC) + i.to(ACC) * step.to(ACC)
    tl.store(out_ptr + i, values.to(out_ptr.dtype.element_ty), mask=i < n_elements)


def _accumulator(dtype):
    """(Triton accumulation type, the scalars' Triton type) of an arange into `dtype`."""
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return (tl.float64, "fp64") if dtype.itemsize > 2 else (tl.float32, "fp64")
    return tl.int64, "i64"


def arange_plan(n, dtype, device, target=None):
    acc, scalar_type = _accumulator(dtype)
    return Launch(_arange_kernel, (cdiv(n, BLOCK),), dict(ACC=acc, BLOCK=BLOCK), 4,
                  int_type="i64", types={"start": scalar_type, "step": scalar_type},
                  per_call=("start", "step"), device=device, target=target)


_launches = LaunchCache()


@register("arange", "cuda")
def arange(n, start, step, dtype, device_index):
    """A new array of the `n` values start + i * step, of numpy dtype `dtype`."""
    activate(device_index)
    stream = current_stream_handle(device_index)
    out = CUDAArray.empty((n,), dtype, device_index, stream)
    if n:
        launch = _launches.get_or_build((n, out.dtype, out.ptr % 16 == 0, device_index),
                                        lambda: arange_plan(n, out.dtype, device_index))
        floating = out.dtype.kind == "f" or out.dtype.name == "bfloat16"
        launch(stream, out, n, float(start) if floating else int(start),
               float(step) if floating else int(step))
    return out
