import os

import numpy as np
import pytest

import genesis

if os.environ.get("GENESIS_TEST_FAKE_CUDA") == "1":  # before helpers reads is_available()
    import fake_cuda
    fake_cuda.install()

from helpers import devices  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_defaults():
    """Each test starts with float32 as the default dtype and grad mode on."""
    genesis.set_default_dtype(genesis.float32)
    genesis.autograd.grad_mode._set_enabled(True)
    yield
    genesis.set_default_dtype(genesis.float32)


@pytest.fixture
def rng():
    """Fresh random inputs every run (seeded from OS entropy)."""
    return np.random.default_rng()


def pytest_configure(config):
    for name in ("cpu", "cuda"):
        config.addinivalue_line("markers", f"{name}: a device-parametrized test's {name} case")


def pytest_generate_tests(metafunc):
    """A test taking a `device` argument runs on each of helpers.devices(), its id first and
    marked with the device's name (`-m cuda` selects the cuda cases)."""
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", [pytest.param(d, marks=getattr(pytest.mark, d))
                                        for d in devices()])
