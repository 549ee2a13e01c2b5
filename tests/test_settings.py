"""The torch-namespace settings (genesis.settings) answer as PyTorch's do, a float32 matmul
precision other than "highest" turns on genesis.backends.cuda.matmul.allow_tf32, and the
default device is the one factory functions use."""

import pathlib
import pickle
import subprocess
import sys
import warnings

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


DEVICE_BLOCKS = """
import sys
sys.path.insert(0, TESTS)
import fake_cuda
import genesis
fake_cuda.install()
with genesis.device("cuda") as entered:
    layer = genesis.nn.Linear(2, 3)
    with genesis.device("cpu"):
        inner = genesis.randn(2)
    print(entered, layer.weight.device.type, layer(genesis.ones(2)).device.type, inner.device)
print(genesis.zeros(2).device, genesis.get_default_device())
"""


def test_device_blocks_set_the_default_device():
    """`with genesis.device(d):` makes factories and new modules use `d`, nests, and restores
    the previous default on exit, as torch.device's context manager does."""
    tests = str(pathlib.Path(__file__).parent)
    code = DEVICE_BLOCKS.replace("TESTS", repr(tests))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=pathlib.Path(tests).parent, check=True).stdout.split("\n")
    assert out[:2] == ["cuda cuda cuda cpu", "cpu cpu"]


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


INTEROP = """
import LIB as lib
print(lib.get_num_interop_threads() >= 1)
lib.set_num_interop_threads(3)
print(lib.get_num_interop_threads())
for bad in (4, 0):
    try:
        lib.set_num_interop_threads(bad)
    except RuntimeError as e:
        print(e)
lib.init_num_threads()
"""


def test_interop_threads_are_set_once_as_torch():
    """In a process of its own for each library (the count can be set once a process)."""
    outputs = [subprocess.run([sys.executable, "-c", INTEROP.replace("LIB", name)],
                              capture_output=True, text=True, check=True,
                              cwd=pathlib.Path(__file__).parent.parent).stdout
               for name in ("genesis", "torch")]
    assert outputs[0] == outputs[1]
    assert "cannot set number of interop threads" in outputs[0]


def test_flush_denormal_is_reported_unsupported():
    """numpy has no flush-to-zero mode: Genesis says so (False) and denormals stay exact."""
    assert genesis.set_flush_denormal(True) is False
    assert genesis.tensor([1e-40], dtype=genesis.float32).item() != 0.0


def test_warn_always_repeats_the_once_a_process_warnings(rng):
    """The deprecated scalar-first add warns once a process, and every time under
    set_warn_always(True), as PyTorch's."""
    x, y = genesis.ones(2), genesis.ones(2)
    try:
        for lib in (genesis, torch):
            lib.set_warn_always(True)
            assert lib.is_warn_always_enabled()
        for _ in range(2):
            with pytest.warns(UserWarning, match="This overload of add is deprecated"):
                x.add(2, y)
    finally:
        for lib in (genesis, torch):
            lib.set_warn_always(False)
    assert not genesis.is_warn_always_enabled()


def _warned(lib, call):
    """The messages `call(lib)` warns with, PyTorch's C++ location suffix cut off."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(lib)
    return [str(w.message).split(" (Triggered internally at")[0] for w in caught]


@pytest.mark.parametrize("call", [
    lambda lib: lib.range(0, 3), lambda lib: lib.ones(3)[lib.tensor([1, 0, 1]).byte()],
    lambda lib: lib.tensor(1.0).T, lambda lib: lib.ones(3).T, lambda lib: lib.ones(2, 3, 4).T,
    lambda lib: lib.ones(2, 3).T, lambda lib: lib.nn.NLLLoss2d(),
    lambda lib: lib.nn.functional.upsample(lib.ones(1, 1, 2, 2), scale_factor=2),
    lambda lib: lib.nn.functional.upsample_nearest(lib.ones(1, 1, 2, 2), scale_factor=2),
    lambda lib: lib.nn.functional.upsample_bilinear(lib.ones(1, 1, 2, 2), scale_factor=2)],
    ids=["range", "uint8_index", "T_0d", "T_1d", "T_3d", "T_2d", "NLLLoss2d", "upsample",
         "upsample_nearest", "upsample_bilinear"])
def test_deprecations_warn_as_torch(call):
    """Deprecated names and uses old scripts still make (torch.range, uint8 masks, `.T` off
    matrices, NLLLoss2d, F.upsample) warn with torch's text; the once-a-process ones every time
    under set_warn_always(True)."""
    try:
        for lib in (genesis, torch):
            lib.set_warn_always(True)
        assert _warned(genesis, call) == _warned(torch, call)
    finally:
        for lib in (genesis, torch):
            lib.set_warn_always(False)


def test_layout_typename_and_legacy_names_as_torch():
    for lib in (genesis, torch):
        t = lib.randn(2, 3)
        assert t.layout is lib.strided and not t.is_sparse
        assert repr(lib.strided) == f"{lib.__name__}.strided"
        assert lib.legacy_contiguous_format is lib.contiguous_format
        assert isinstance(lib.default_generator, lib.Generator)
    assert genesis.typename(genesis.randn(2)) == torch.typename(torch.randn(2))
    assert genesis.typename(genesis.randn(2).long()) == "torch.LongTensor"
    for obj, expected in ((3, "int"), (len, "len"), (pathlib.Path, "pathlib.Path")):
        assert genesis.typename(obj) == torch.typename(obj) == expected
    assert genesis.typename(genesis.nn.Linear) == "genesis.nn.modules.linear.Linear"
    assert genesis.typename(genesis.nn.Linear(2, 2)) == "genesis.nn.modules.linear.Linear"
    assert pickle.loads(pickle.dumps(genesis.strided)) is genesis.strided


def test_set_default_tensor_type_as_torch():
    """PyTorch's deprecated form (its warning given once a process, every time under
    set_warn_always): a floating legacy type or its name sets the default dtype; anything
    else raises PyTorch's TypeError."""
    try:
        for lib in (genesis, torch):
            lib.set_warn_always(True)
            with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
                lib.set_default_tensor_type("torch.DoubleTensor")
            assert lib.get_default_dtype() is lib.float64 and lib.zeros(1).dtype is lib.float64
            with pytest.warns(UserWarning):
                lib.set_default_tensor_type(lib.FloatTensor)
            assert lib.zeros(1).dtype is lib.float32
            with pytest.raises(TypeError, match="only floating-point types are supported"):
                with pytest.warns(UserWarning):
                    lib.set_default_tensor_type("torch.IntTensor")
            with pytest.raises(TypeError, match="invalid type object"):
                with pytest.warns(UserWarning):
                    lib.set_default_tensor_type(3)
    finally:
        for lib in (genesis, torch):
            lib.set_default_dtype(lib.float32)
            lib.set_warn_always(False)


def test_float_of_a_tensor_requiring_grad_warns_in_grad_mode_only():
    """float() of a tensor that requires grad warns (once a process; every time here) where
    grad mode is on, and not under no_grad, where LBFGS reads its losses, as PyTorch's."""
    try:
        for lib in (genesis, torch):
            lib.set_warn_always(True)
            y = lib.ones(2, requires_grad=True).sum()
            with pytest.warns(UserWarning, match="requires_grad=True to a scalar"):
                assert float(y) == 2.0
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with lib.no_grad():
                    assert float(y) == 2.0
    finally:
        for lib in (genesis, torch):
            lib.set_warn_always(False)
