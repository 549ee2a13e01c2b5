"""The special-function and polynomial kernels (kernels/special.py) against PyTorch, through
Triton's interpreter. Run explicitly:
`TRITON_INTERPRET=1 python -m pytest tests/interpret/test_special_interpret.py`.

Fresh random values and the edge values of tests/test_special_functions.py, in float32 and
float64, with the same tolerances (helpers.TOLERANCES); operands contiguous, transposed,
broadcast (stride 0) and as a Python scalar. libdevice is stood in for by numpy here
(triton_interpret.py), so these check the formulas, branches, loops and launch code.
"""

import math

import numpy as np
import pytest
import torch
import triton_interpret as ti
from test_special_functions import NAN_DEFINED, POLYNOMIALS, UNARY, UNARY_EDGES

import genesis
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import special
from helpers import TOLERANCES

DTYPES = {np.float32: genesis.float32, np.float64: genesis.float64}


@pytest.fixture
def gpu():
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    with ti.device(special, array_ops):
        yield


def on_device(a):
    """A numpy array on the device in its own layout (a broadcast one as a stride-0 view of
    its row), or a Python number as it is."""
    if not isinstance(a, np.ndarray):
        return a
    if a.ndim == 2 and a.size and a.strides[0] == 0:
        return ti.view(ti.to_device(a[0]), a.shape, (0, 1))
    return ti.dense_on_device(a)


def check(op, *operands):
    """special.run(op) on the operands (numpy arrays, as laid out, or a Python number) against
    PyTorch's op on them."""
    ours = ti.to_host(special.run(op, *map(on_device, operands)))
    expected = getattr(torch.special, op)(*(torch.from_numpy(np.ascontiguousarray(a))
                                            if isinstance(a, np.ndarray) else a
                                            for a in operands)).numpy()
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    rtol, atol = TOLERANCES[DTYPES[ours.dtype.type]]
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", special.UNARY_OPS)
def test_unary(gpu, op, dtype, rng):
    low, high = UNARY[op]
    check(op, rng.uniform(low, high, 300).astype(dtype))
    check(op, np.array(UNARY_EDGES, dtype))
    check(op, rng.uniform(low, high, (9, 7)).astype(dtype).T)
    check(op, np.zeros((0, 3), dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", special.POLYNOMIAL_OPS)
def test_polynomial(gpu, op, dtype, rng):
    """Random degrees up to 15 (to keep the interpreter quick), the special cases of x and n,
    a transposed x beside broadcast degrees, and a scalar degree."""
    low, high, top = POLYNOMIALS[op][torch.float32 if dtype is np.float32 else torch.float64]
    top = min(top, 15)
    check(op, rng.uniform(low, high, 300).astype(dtype),
          rng.integers(-2, top + 1, 300).astype(dtype))
    xs = [-1.0, 1.0, 0.0, 0.5, 2.0, -2.0, math.inf, -math.inf]
    ns = [-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 9.0, 10.0]
    x, n = np.broadcast_arrays(np.array(xs, dtype)[:, None], np.array(ns, dtype))
    check(op, np.ascontiguousarray(x), n)
    odd_n = np.array([math.nan, math.inf, -math.inf, 1e30, -0.5, 2.7], dtype)
    check(op, np.full(6, 0.3, dtype), odd_n)
    if op in NAN_DEFINED:
        check(op, np.full(3, math.nan, dtype), np.array([0.0, 1.0, 4.0], dtype))
    x = rng.uniform(low, high, (6, 5)).astype(dtype).T
    check(op, x, np.broadcast_to(rng.integers(0, top + 1, 6).astype(dtype), (5, 6)))
    check(op, x, 3.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_zeta(gpu, dtype, rng):
    check("zeta", rng.uniform(1.01, 12.0, 300).astype(dtype),
          rng.uniform(-4.9, 10.0, 300).astype(dtype))
    x = [1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.0, math.inf, 2.0, math.nan, 2.0, 1e10, 2.0, 4.0]
    q = [1.0, 1.0, 0.0, -1.0, -1.5, -1.5, math.inf, 2.0, math.nan, 1.0, 1e-30, 0.5, -20.5, -3.0]
    check("zeta", np.array(x, dtype), np.array(q, dtype))
    check("zeta", 2.5, rng.uniform(0.1, 3.0, (4, 3)).astype(dtype).T)
