"""genesis.xpu: Intel's XPU device, which Genesis does not have. Scripts that choose their
device with `torch.xpu.is_available()` get False, as on a PyTorch built without it; asking for
a device fails as it does there."""

__all__ = ["current_device", "device_count", "is_available", "is_bf16_supported",
           "is_initialized", "synchronize"]


def is_available():
    """False: Genesis has no XPU backend."""
    return False


def device_count():
    """0: no XPU device is visible."""
    return 0


def is_initialized():
    """False: there is no XPU runtime to initialise."""
    return False


def is_bf16_supported(including_emulation=True):
    """False: there is no XPU device."""
    return False


def _not_compiled():
    raise AssertionError("Torch not compiled with XPU enabled")


def current_device():
    """Fails as a PyTorch without XPU does."""
    _not_compiled()


def synchronize(device=None):
    """Fails as a PyTorch without XPU does."""
    _not_compiled()
