import numpy as np
import pytest

import genesis


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
