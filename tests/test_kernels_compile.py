"""Every Triton kernel compiles for sm_90 (H100/H200) on this machine, GPU or not."""

import importlib
import pkgutil

import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402

import genesis.backends.cuda.kernels as kernels  # noqa: E402

MODULES = sorted(m.name for m in pkgutil.iter_modules(kernels.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_kernel_module_compiles_for_sm90(name):
    module = importlib.import_module(f"genesis.backends.cuda.kernels.{name}")
    assert hasattr(module, "compile_all"), f"kernels/{name}.py must define compile_all(target)"
    module.compile_all(GPUTarget("cuda", 90, 32))
