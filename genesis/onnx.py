"""genesis.onnx: what scripts touch of torch.onnx without exporting. `import torch.onnx` at the
top of a training script works, model code asking `is_in_onnx_export()` gets False, and an export
itself fails with an error saying Genesis has no ONNX exporter."""

__all__ = ["OnnxExporterError", "export", "is_in_onnx_export"]


class OnnxExporterError(RuntimeError):
    """Raised when a model cannot be exported to ONNX (with Genesis: always)."""


def is_in_onnx_export():
    """False: Genesis never traces a model for ONNX."""
    return False


def export(model, args=(), f=None, **kwargs):
    """Refused: Genesis has no ONNX exporter (save the state_dict and export from PyTorch)."""
    raise OnnxExporterError("genesis.onnx.export: Genesis has no ONNX exporter; save the model's "
                            "state_dict and export it from PyTorch")
