"""genesis.accelerator, genesis.backends.mps and cudnn, genesis.xpu and genesis.onnx against
torch's on this machine (the tests' torch is a CPU build; CI has no GPU): the same names,
signatures' defaults and answers, so that device-choosing lines of PyTorch scripts run
unchanged."""

import inspect

import pytest
import torch

import genesis


def test_accelerator_has_torchs_functions():
    ours = set(genesis.accelerator.__all__)
    left_out = {"Graph", "get_device_capability", "empty_host_cache"}
    assert set(torch.accelerator.__all__) - left_out <= ours
    for name in ours:
        assert callable(getattr(genesis.accelerator, name)), name


@pytest.mark.skipif(genesis.cuda.is_available(), reason="answers of a machine without a GPU")
def test_without_a_gpu_answers_as_a_cpu_build_of_torch():
    assert genesis.accelerator.is_available() is torch.accelerator.is_available() is False
    assert genesis.accelerator.current_accelerator() is None
    assert torch.accelerator.current_accelerator() is None
    assert genesis.accelerator.device_count() == torch.accelerator.device_count() == 0
    for lib in (genesis, torch):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                                               "available"):
            lib.accelerator.current_device_index()
    device = (genesis.accelerator.current_accelerator().type
              if genesis.accelerator.is_available() else "cpu")
    assert genesis.ones(2, device=device).device.type == "cpu"
    genesis.accelerator.empty_cache()


def test_mps_is_not_there():
    assert genesis.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert genesis.backends.mps.is_built() is False


def test_cudnn_flags_take_torchs_defaults_and_restore():
    ours, theirs = genesis.backends.cudnn, torch.backends.cudnn
    assert ours.is_available() is False and ours.version() is None
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32"):
        assert (inspect.signature(ours.flags).parameters[name].default
                == inspect.signature(theirs.flags).parameters[name].default), name
    with ours.flags(enabled=True, benchmark=True, deterministic=True):
        assert ours.benchmark and ours.deterministic
    assert not ours.benchmark and not ours.deterministic
    with ours.flags(allow_tf32=False):
        assert ours.allow_tf32 is False
    assert ours.allow_tf32 is True
    ours.benchmark = True  # as scripts set it
    try:
        assert genesis.backends.cudnn.benchmark is True
    finally:
        ours.benchmark = False


def test_xpu_is_not_there():
    for lib in (genesis, torch):
        assert lib.xpu.is_available() is False and lib.xpu.device_count() == 0
        assert lib.xpu.is_initialized() is False
        with pytest.raises(AssertionError, match="Torch not compiled with XPU enabled"):
            lib.xpu.current_device()
    assert torch.xpu.is_bf16_supported() is genesis.xpu.is_bf16_supported() is False


def test_onnx_is_importable_and_refuses_to_export():
    """`import torch.onnx` heads training scripts (fast_neural_style); only exporting fails."""
    import genesis.onnx
    assert genesis.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    with pytest.raises(genesis.onnx.OnnxExporterError, match="Genesis has no ONNX exporter"):
        genesis.onnx.export(genesis.nn.Linear(2, 2), (genesis.ones(1, 2),), "model.onnx")
    assert issubclass(genesis.onnx.OnnxExporterError, RuntimeError)
