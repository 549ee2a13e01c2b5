"""The CUDA arange kernel (backends/cuda/kernels/arange.py) against the CPU backend's arange,
on the CPU through Triton's interpreter (`TRITON_INTERPRET=1`)."""

import numpy as np
import pytest
import triton_interpret as ti

import genesis
from genesis.backends.cuda.kernels import arange as kernels

CASES = [(0, 1, 7, genesis.int64), (-3, 2, 1500, genesis.int32), (5, -1, 11, genesis.int16),
         (0.5, 0.1, 2049, genesis.float32), (-1.0, 0.25, 300, genesis.float64),
         (0.0, 0.3, 100, genesis.bfloat16), (2.0, -0.7, 33, genesis.float16)]


@pytest.fixture
def gpu():
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    with ti.device(kernels):
        yield


@pytest.mark.parametrize("start,step,n,dtype", CASES)
def test_arange_matches_the_cpu(gpu, start, step, n, dtype):
    out = kernels.arange(n, start, step, dtype.numpy_dtype, 0)
    end = start + step * n if isinstance(step, int) else start + step * (n - 0.5)
    expected = genesis.arange(start, end, step, dtype=dtype).numpy()
    assert len(expected) == n
    np.testing.assert_array_equal(ti.to_host(out), expected)


def test_empty_arange(gpu):
    assert ti.to_host(kernels.arange(0, 0, 1, np.dtype(np.int64), 0)).shape == (0,)
