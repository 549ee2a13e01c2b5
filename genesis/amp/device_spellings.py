"""The device spellings of genesis.amp (genesis.cuda.amp, genesis.cpu.amp), as torch's: each
use warns (FutureWarning) that it is deprecated for its amp form, in PyTorch's words (which
name torch.*, as Genesis's other warnings do, so that scripts' warning filters match)."""

import warnings

from .autocast_mode import autocast
from .grad_scaler import GradScaler


def deprecated(device_type, name, replacement):
    """Warn, at the caller of the spelling's constructor or decorator, that it is deprecated."""
    warnings.warn(f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                  f"`{replacement}` instead.", FutureWarning, stacklevel=3)


class DeviceAutocast(autocast):
    """`genesis.autocast(_device_type, ...)`, in `_default_dtype` unless `dtype` is given."""

    _device_type = _default_dtype = None

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        deprecated(self._device_type, "autocast",
                   f"torch.amp.autocast('{self._device_type}', args...)")
        super().__init__(self._device_type, dtype=dtype or self._default_dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class DeviceGradScaler(GradScaler):
    """`genesis.amp.GradScaler(_device_type, ...)`."""

    _device_type = None

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        deprecated(self._device_type, "GradScaler",
                   f"torch.amp.GradScaler('{self._device_type}', args...)")
        super().__init__(self._device_type, init_scale, growth_factor, backoff_factor,
                         growth_interval, enabled)
