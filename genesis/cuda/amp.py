"""`genesis.cuda.amp`: the CUDA spellings of `genesis.amp`, as `torch.cuda.amp`; each use warns
(FutureWarning) that it is deprecated for its `genesis.amp` form, as PyTorch's does."""

from .. import amp, dtypes
from ..amp.device_spellings import DeviceAutocast, DeviceGradScaler, deprecated


class autocast(DeviceAutocast):
    """`genesis.autocast("cuda", ...)` with float16 by default."""

    _device_type, _default_dtype = "cuda", dtypes.float16


class GradScaler(DeviceGradScaler):
    """`genesis.amp.GradScaler("cuda", ...)`."""

    _device_type = "cuda"


def custom_fwd(fwd=None, *, cast_inputs=None):
    """`genesis.amp.custom_fwd(..., device_type="cuda")`."""
    deprecated("cuda", "custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """`genesis.amp.custom_bwd(..., device_type="cuda")`."""
    deprecated("cuda", "custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return amp.custom_bwd(bwd, device_type="cuda")
