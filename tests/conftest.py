import os
import secrets
import zlib

import numpy as np
import pytest
import torch

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
def cudnn_ieee(monkeypatch):
    """float32 convolutions and recurrent layers run IEEE float32 on a GPU, not TF32
    (genesis.backends.cudnn.allow_tf32 off, as PyTorch's own tests turn torch's off), for tests
    that compare them with PyTorch's CPU results at float32's tolerance."""
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", False)


@pytest.fixture
def torch_validates_distributions():
    """torch.distributions validates arguments, the oracle's default, whatever ran before:
    importing torch._dynamo (as some torch paths do) turns torch's validation off for good."""
    import torch.distributions
    saved = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved)


def pytest_addoption(parser):
    parser.addoption("--seed", type=int, default=None,
                     help="seed of the `rng` fixture (default: a fresh one per run, printed with "
                          "each failure)")


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the run's seed and the test's id: fresh inputs every run,
    and the same ones for a test whenever the run's seed is the same (`--seed N`), whatever
    other tests run. torch's generator is seeded from them too, so that torch's default
    initialisations replay as well. A failure's report names the seed."""
    seed = request.config.rng_seed
    request.node.rng_seed = seed
    entropy = [seed, zlib.crc32(request.node.nodeid.encode())]
    torch.manual_seed(int(np.random.SeedSequence(entropy).generate_state(1)[0]))  # its inits too
    return np.random.default_rng(entropy)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Add the `rng` seed to a failed test's report, with the option that replays it."""
    report = (yield).get_result()
    seed = getattr(item, "rng_seed", None)
    if seed is not None and report.failed:
        report.sections.append(("rng", f"rng seed {seed}: replay with --seed {seed}"))


def pytest_runtest_logreport(report):
    """With GENESIS_FAILURE_LOG set, each failure's traceback and seed go into that file as the
    failure happens (written once, by the controlling process under pytest-xdist): a GPU run
    cut off by its time limit still tells why its tests failed."""
    path = os.environ.get("GENESIS_FAILURE_LOG")
    if not path or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    seeds = [content for name, content in report.sections if name == "rng"]
    with open(path, "a") as log:
        log.write(f"{report.nodeid} ({report.when})\n{report.longreprtext}\n"
                  + "".join(f"{seed}\n" for seed in seeds) + "\n")


def pytest_configure(config):
    seed = config.getoption("--seed")
    config.rng_seed = secrets.randbits(32) if seed is None else seed
    for name in ("cpu", "cuda"):
        config.addinivalue_line("markers", f"{name}: a device-parametrized test's {name} case")


def pytest_generate_tests(metafunc):
    """A test taking a `device` argument runs on each of helpers.devices(), its id first and
    marked with the device's name (`-m cuda` selects the cuda cases)."""
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", [pytest.param(d, marks=getattr(pytest.mark, d))
                                        for d in devices()])
