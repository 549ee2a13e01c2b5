"""nn.DataParallel on the GPU: one device runs the module there; over two devices (when the
machine has them) outputs and gradients equal a one-device run."""

import numpy as np
import pytest
from helpers import skip_no_cuda

import genesis
import genesis.nn as nn

pytestmark = skip_no_cuda


def _model():
    genesis.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).cuda()


def _step(model, x):
    out = model(x)
    out.square().sum().backward()
    return out.detach().cpu().numpy(), [p.grad.cpu().numpy() for p in model.parameters()]


def test_one_device(rng):
    x = genesis.tensor(rng.standard_normal((8, 16)).astype(np.float32), device="cuda")
    plain = _step(_model(), x)
    wrapped = nn.DataParallel(_model(), device_ids=[0])
    got = _step(wrapped, x)
    np.testing.assert_array_equal(got[0], plain[0])


@pytest.mark.skipif(genesis.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_devices_equal_one(rng):
    x = genesis.tensor(rng.standard_normal((8, 16)).astype(np.float32), device="cuda")
    plain = _step(_model(), x)
    got = _step(nn.DataParallel(_model(), device_ids=[0, 1]), x)
    np.testing.assert_allclose(got[0], plain[0], rtol=1e-5, atol=1e-6)
    for g, p in zip(got[1], plain[1]):
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers on"):
        nn.DataParallel(_model().cpu(), device_ids=[0, 1])(x)
