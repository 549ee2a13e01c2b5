"""The linear-algebra kernels on CUDA as a host round trip: copy the operands to the host, run
the CPU backend's numpy.linalg kernel, copy the results back to the operands' device.

This keeps every `genesis.linalg` op (and its gradient, which is written with genesis ops)
working on CUDA tensors. The copies synchronize the current stream, so these ops are correct but
not fast on the GPU: solve, inv, cholesky, eigh and svd run through cuSOLVER instead where it is
available (linalg_cusolver.py), and come back here where it is not.
"""

import functools

import numpy as np

from ...dispatch import register
from ..cpu.decompositions import KERNELS
from .array_ops import from_numpy, to_numpy
from .runtime.array import CUDAArray


def on_host(fn):
    """`fn` with CUDA array arguments copied to the host and array results copied back."""
    @functools.wraps(fn)
    def run(*args):
        device = next(a.device for a in args if isinstance(a, CUDAArray))
        host = [to_numpy(a) if isinstance(a, CUDAArray) else a for a in args]
        out = fn(*host)
        if isinstance(out, tuple):
            return tuple(from_numpy(np.asarray(o), device) for o in out)
        return from_numpy(np.asarray(out), device)
    return run


for _name, _fn in KERNELS.items():
    register(_name, "cuda")(on_host(_fn))
