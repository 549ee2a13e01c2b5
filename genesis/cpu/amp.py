"""`genesis.cpu.amp`: the CPU spellings of `genesis.amp`, as `torch.cpu.amp`; each use warns
(FutureWarning) that it is deprecated for its `genesis.amp` form, as PyTorch's does."""

from .. import dtypes
from ..amp.device_spellings import DeviceAutocast, DeviceGradScaler


class autocast(DeviceAutocast):
    """`genesis.autocast("cpu", ...)` with bfloat16 by default."""

    _device_type, _default_dtype = "cpu", dtypes.bfloat16


class GradScaler(DeviceGradScaler):
    """`genesis.amp.GradScaler("cpu", ...)`."""

    _device_type = "cpu"
