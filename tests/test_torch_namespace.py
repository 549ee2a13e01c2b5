"""Names of the torch namespace that are not functions (test_api_coverage.py counts those): the
submodules, the classes a script uses, the constants, genesis.version, genesis.functional and
genesis.cpu."""

import subprocess
import sys

import pytest
import torch

import genesis


def test_constants_as_torch():
    for name in ("e", "pi", "inf", "newaxis"):
        assert getattr(genesis, name) == getattr(torch, name)
    assert genesis.nan != genesis.nan


def test_version_module_as_torch():
    assert genesis.version.__version__ == genesis.__version__
    assert genesis.version.hip is None and genesis.version.debug is False
    assert genesis.version.cuda is None or genesis.version.cuda.count(".") == 1


def test_functional_module_as_torch():
    names = set(torch.functional.__all__) - {"stft", "istft"}  # complex results, out of scope
    assert set(genesis.functional.__all__) == names
    for name in names:
        ours = getattr(genesis, name)
        if hasattr(ours, "__out_variant__"):  # genesis.<name> adds the out= keyword
            ours = ours.__wrapped__
        assert getattr(genesis.functional, name) is ours, name


def test_top_level_aliases_as_torch():
    assert genesis.GradScaler is genesis.amp.GradScaler
    assert genesis.OutOfMemoryError is genesis.cuda.OutOfMemoryError


def test_cpu_module_for_device_agnostic_code():
    assert set(genesis.cpu.__all__) == set(torch.cpu.__all__) - {"get_capabilities"}
    device = genesis.device("cpu")
    module = getattr(genesis, device.type)
    assert module.is_available() and module.device_count() == 1
    assert module.current_device() == torch.cpu.current_device()
    module.synchronize()
    side = module.Stream()
    with module.stream(side):
        assert module.current_stream() is side
        event = module.Event()
        event.record()
        assert event.query()
    assert module.current_stream() is not side


# torch's public submodules that genesis does not have, and why. Any other is a gap.
MODULES_LEFT_OUT = {
    "fft": "its transforms return complex tensors (complex dtypes are out of scope)",
    "export": "torch.export's graph capture; genesis runs eagerly",
    "fx": "symbolic tracing to graphs; genesis runs eagerly",
    "package": "packages TorchScript and pickled code; genesis never loads code from files",
    "ao": "quantization (out of scope)",
    "quantization": "quantization (out of scope)",
    "library": "registers custom ATen operators; genesis ops are Python functions",
    "classes": "TorchScript custom classes",
    "monitor": "the C++ event and stat logging of the TorchScript runtime",
    "masked": "masked tensors, a prototype in PyTorch",
    "nested": "nested tensors (out of scope)",
    "sparse": "sparse layouts (out of scope)",
    "storage": "genesis has no storage objects",
    "overrides": "__torch_function__ overrides are not supported",
    "return_types": "genesis returns its named tuples from the functions themselves",
    "mps": "Apple's GPUs; genesis's GPU backend is CUDA",
    "mtia": "Meta's accelerators; genesis's GPU backend is CUDA",
    "torch_version": "the TorchVersion class; genesis.__version__ is a string",
    "windows": "torch.signal.windows, which an import inside torch leaves in its namespace; "
               "genesis.signal.windows",
    "quasirandom": "the Sobol sequence engine",
    "cpp": "C++ extension helpers",
    "types": "type aliases for annotations of torch's own signatures",
}


_TORCH_MODULES = """
import types, torch
print(' '.join(n for n in dir(torch) if not n.startswith('_') and n != 'torch'
               and isinstance(getattr(torch, n), types.ModuleType)
               and getattr(torch, n).__name__.startswith('torch')))
"""


def test_every_torch_module_is_present_or_left_out_with_a_reason():
    """torch's submodules as `import torch` alone gives them (read in a process of its own:
    torch loads some, as torch.onnx, lazily, when other tests touch them)."""
    result = subprocess.run([sys.executable, "-c", _TORCH_MODULES], capture_output=True,
                            text=True, check=True)
    names = set(result.stdout.split())
    missing = sorted(n for n in names - set(MODULES_LEFT_OUT) if not hasattr(genesis, n))
    assert not missing, missing


# torch's public classes a script constructs or catches; the rest are TorchScript, storage and
# dispatcher internals.
USER_CLASSES = ["Tensor", "Size", "device", "dtype", "Generator", "finfo", "iinfo",
                "memory_format", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled",
                "GradScaler", "OutOfMemoryError", "FloatTensor", "DoubleTensor", "HalfTensor",
                "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
                "ByteTensor", "BoolTensor"]


def test_user_facing_classes_are_present():
    assert all(hasattr(torch, n) for n in USER_CLASSES)
    assert [n for n in USER_CLASSES if not hasattr(genesis, n)] == []


def test_variable_and_removable_handle_as_torch():
    from genesis.autograd import Variable
    x = genesis.ones(2, requires_grad=True)
    v = Variable(x)
    assert isinstance(x, Variable) and not v.requires_grad and v.is_leaf
    assert Variable(x, requires_grad=True).requires_grad
    assert tuple(Variable().shape) == (0,)
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(x, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    handle = x.register_hook(lambda g: g)
    assert isinstance(handle, genesis.utils.hooks.RemovableHandle)


def test_fork_rng_restores_every_generator_state():
    genesis.manual_seed(3)
    with genesis.random.fork_rng():
        inside = genesis.rand(4)
    after = genesis.rand(4)
    assert genesis.equal(inside, after)
    with genesis.random.fork_rng(enabled=False):
        genesis.rand(1)
    assert not genesis.equal(genesis.rand(4), after)
