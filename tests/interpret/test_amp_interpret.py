"""GradScaler's unscale kernel (kernels/amp.py) against its CPU twin, through Triton's
interpreter: `TRITON_INTERPRET=1 python -m pytest tests/cuda/test_amp_interpret.py`."""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

import genesis.backends.cpu  # noqa: F401  (registers the CPU twin)
from genesis import dispatch
from genesis.backends.cuda.kernels import amp as ka

FLOATS = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16),
          np.dtype(np.float64)]
SIZES = [(3, 5), (17000,), (0,), (1,), (40,)]


@pytest.fixture
def gpu():
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    with ti.device(ka):
        yield


@pytest.mark.parametrize("poison", [None, np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unscale_matches_the_cpu_kernel(gpu, rng, dtype, poison):
    host = [(rng.standard_normal(s) * 1024).astype(dtype) for s in SIZES]
    if poison is not None:
        host[1].reshape(-1)[int(rng.integers(17000))] = poison
    device = [ti.to_device(h) for h in host]
    inv = np.array(1 / 1024, dtype=np.float32)
    found_host, found_dev = np.zeros((), np.float32), ti.to_device(np.zeros((), np.float32))
    dispatch.kernel("amp_unscale_", "cpu")(host, found_host, inv)
    ka.amp_unscale_(device, found_dev, ti.to_device(inv))
    assert float(ti.to_host(found_dev)) == float(found_host) == (0.0 if poison is None else 1.0)
    for d, h in zip(device, host):
        np.testing.assert_array_equal(ti.to_host(d).astype(np.float64), h.astype(np.float64))
