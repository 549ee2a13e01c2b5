"""A stand-in "cuda" device for checking the device-parametrized tests without a GPU.

`install()` registers every CPU kernel under "cuda" as well, host<->device copies copying, so
tensors on "cuda" are numpy-backed but carry the cuda device: a test that mixes a CPU tensor into
a "cuda" computation, or reads a "cuda" tensor with .numpy(), fails as it would on a GPU. It
checks the tests' plumbing, not the CUDA kernels. Enabled by conftest when GENESIS_TEST_FAKE_CUDA=1
(run with GENESIS_TEST_DEVICES=cuda or cpu,cuda); never import it in a real GPU run. What needs
the real backend fails under it: generators of the cuda device (Philox kernels), CUDA-only
kernels, and subprocesses (which do not inherit the stand-in).
"""

import importlib

import numpy as np

import genesis
from genesis import dispatch


def _from_numpy(array, device_index=None, non_blocking=False):
    return np.array(array, copy=True)


def _to_numpy(arr, non_blocking=False):
    return np.array(arr, copy=True)


def install():
    """Make "cuda" an alias of the CPU backend (copying across the host boundary). Kernels the
    real CUDA backend registered, when an earlier test loaded it, go: a CUDA-only op (a fused
    backward) would otherwise reach for the driver."""
    dispatch.registered_ops("cpu")
    dispatch._loaded.add("cuda")
    for (name, device_type), fn in list(dispatch._KERNELS.items()):
        if device_type == "cuda":
            del dispatch._KERNELS[(name, device_type)]
    for (name, device_type), fn in list(dispatch._KERNELS.items()):
        if device_type == "cpu":
            dispatch._KERNELS[(name, "cuda")] = fn
    dispatch._KERNELS[("from_numpy", "cuda")] = _from_numpy
    dispatch._KERNELS[("to_numpy", "cuda")] = _to_numpy
    importlib.import_module("genesis.device")._current_cuda_device = lambda: 0
    genesis.cuda.is_available = lambda: True


def install_for_test(monkeypatch):
    """install() until the test ends: dispatch's tables and the patched names copied first,
    so that `monkeypatch` puts them back."""
    dispatch.registered_ops("cpu")
    monkeypatch.setattr(dispatch, "_KERNELS", dict(dispatch._KERNELS))
    monkeypatch.setattr(dispatch, "_loaded", set(dispatch._loaded))
    device_module = importlib.import_module("genesis.device")
    monkeypatch.setattr(device_module, "_current_cuda_device",
                        device_module._current_cuda_device)
    monkeypatch.setattr(genesis.cuda, "is_available", genesis.cuda.is_available)
    install()
