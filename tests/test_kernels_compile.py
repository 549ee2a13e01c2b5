"""Every Triton kernel compiles for sm_90 (H100/H200) on this machine, GPU or not."""

import importlib
import pkgutil

import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402

import genesis.backends.cuda.kernels as kernels  # noqa: E402

MODULES = sorted(m.name for m in pkgutil.iter_modules(kernels.__path__))


def _kernels(module):
    return [name for name, value in vars(module).items()
            if isinstance(value, triton.runtime.JITFunction) and value.__module__ == module.__name__
            and name.endswith("_kernel")]


@pytest.mark.parametrize("name", MODULES)
def test_kernel_module_compiles_for_sm90(name):
    """The kernel modules are imported here, not at collection: importing one registers its
    kernels, which would replace a fake "cuda" backend's (tests/fake_cuda.py) for every test."""
    from kernel_compile_cases import CASES
    module = importlib.import_module(f"genesis.backends.cuda.kernels.{name}")
    cases = CASES.get(name)
    assert cases is not None or not _kernels(module), \
        f"kernels/{name}.py has kernels but no compile cases in tests/kernel_compile_cases.py"
    if cases is not None:
        cases(GPUTarget("cuda", 90, 32))
