"""The torch-namespace settings (genesis.settings) answer as PyTorch's do, a float32 matmul
precision other than "highest" turns on genesis.backends.cuda.matmul.allow_tf32, and the
default device is the one factory functions use."""

import pathlib
import subprocess
import sys

import pytest
import torch

import genesis
from genesis.backends import cuda as cuda_backend


@pytest.fixture(autouse=True)
def _restore():
    yield
    for lib in (genesis, torch):
        lib.set_float32_matmul_precision("highest")
        lib.use_deterministic_algorithms(False)


@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
def test_float32_matmul_precision(precision):
    for lib in (genesis, torch):
        lib.set_float32_matmul_precision(precision)
    assert genesis.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    assert cuda_backend.matmul.allow_tf32 == (precision != "highest")


def test_float32_matmul_precision_follows_the_flag():
    genesis.set_float32_matmul_precision("medium")
    cuda_backend.matmul.allow_tf32 = False
    assert genesis.get_float32_matmul_precision() == "highest"
    cuda_backend.matmul.allow_tf32 = True
    assert genesis.get_float32_matmul_precision() == "medium"
    genesis.set_float32_matmul_precision("highest")
    cuda_backend.matmul.allow_tf32 = True
    assert genesis.get_float32_matmul_precision() == "high"
    cuda_backend.matmul.allow_tf32 = False


def test_unknown_precision_warns_and_keeps_the_setting():
    genesis.set_float32_matmul_precision("high")
    with pytest.warns(UserWarning, match="unknown precision 'low'"):
        genesis.set_float32_matmul_precision("low")
    assert genesis.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("mode,warn_only", [(True, False), (True, True), (False, True),
                                            (False, False)])
def test_deterministic_algorithms(mode, warn_only):
    for lib in (genesis, torch):
        lib.use_deterministic_algorithms(mode, warn_only=warn_only)
    for name in ("are_deterministic_algorithms_enabled",
                 "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode"):
        assert getattr(genesis, name)() == getattr(torch, name)(), name


@pytest.mark.parametrize("debug_mode", [0, 1, 2, "default", "warn", "error"])
def test_deterministic_debug_mode(debug_mode):
    for lib in (genesis, torch):
        lib.set_deterministic_debug_mode(debug_mode)
    for name in ("are_deterministic_algorithms_enabled",
                 "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode"):
        assert getattr(genesis, name)() == getattr(torch, name)(), name


@pytest.mark.parametrize("bad,error,message", [
    ("x", RuntimeError, "expected one of `default`, `warn`, `error`, but got x"),
    (3, RuntimeError, "expected 0, 1, or 2, but got 3"),
    (1.5, TypeError, "debug_mode must be str or int"),
])
def test_bad_debug_mode(bad, error, message):
    for lib in (genesis, torch):
        with pytest.raises(error, match=message):
            lib.set_deterministic_debug_mode(bad)


def test_use_deterministic_algorithms_takes_a_bool():
    for lib in (genesis, torch):
        with pytest.raises(TypeError, match="must be bool, not str"):
            lib.use_deterministic_algorithms("yes")


def test_default_device_is_the_cpu():
    assert genesis.get_default_device() == genesis.device("cpu")
    genesis.set_default_device("cpu")
    try:
        assert genesis.zeros(2).device.type == "cpu"
        assert genesis.get_default_device() == genesis.device("cpu")
    finally:
        genesis.set_default_device(None)


FACTORIES = """
import sys
sys.path.insert(0, TESTS)
import fake_cuda
import genesis
fake_cuda.install()
genesis.set_default_device("cuda")
print(genesis.get_default_device())
made = [genesis.zeros(2), genesis.ones(2), genesis.empty(2), genesis.full((2,), 3.0),
        genesis.tensor([1, 2]), genesis.arange(3), genesis.linspace(0, 1, 3),
        genesis.logspace(0, 1, 3), genesis.eye(2), genesis.rand(2), genesis.randn(2),
        genesis.randint(0, 5, (2,)), genesis.randperm(3)]
print(sorted({t.device.type for t in made}))
host = genesis.zeros(2, device="cpu")
print(host.device.type, genesis.tensor(host).device.type)
genesis.set_default_device(None)
print(genesis.zeros(2).device.type, genesis.get_default_device())
"""


def test_factories_use_the_default_device():
    """Under the CPU-backed stand-in for a CUDA device (tests/fake_cuda.py, in a subprocess so
    it stays out of this one): factories given no device make tensors on the default device;
    an explicit device, or a tensor's own, wins."""
    tests = str(pathlib.Path(__file__).parent)
    code = FACTORIES.replace("TESTS", repr(tests))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=pathlib.Path(tests).parent, check=True).stdout.split("\n")
    assert out[:4] == ["cuda:0", "['cuda']", "cpu cpu", "cpu cpu"]


def test_num_threads_sizes_numpy_blas_pool():
    import threadpoolctl
    before = genesis.get_num_threads()
    assert before >= 1
    try:
        genesis.set_num_threads(1)
        assert genesis.get_num_threads() == 1
        pools = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert all(p["num_threads"] == 1 for p in pools)
    finally:
        genesis.set_num_threads(before)
    for bad, message in ((0, "set_num_threads expects a positive integer"),
                         (1.5, "set_num_threads expects an int, but got float")):
        for lib in (genesis, torch):
            with pytest.raises(RuntimeError, match=message):
                lib.set_num_threads(bad)
