"""`genesis.cuda.amp`: the CUDA spellings of `genesis.amp`, as `torch.cuda.amp`; each use warns
(FutureWarning) that it is deprecated for its `genesis.amp` form, as PyTorch's does."""

import warnings

from .. import amp, dtypes


def _deprecated(name, replacement):
    warnings.warn(f"`genesis.cuda.amp.{name}(args...)` is deprecated. Please use "
                  f"`{replacement}` instead.", FutureWarning, stacklevel=3)


class autocast(amp.autocast):
    """`genesis.autocast("cuda", ...)` with float16 by default."""

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        _deprecated("autocast", "genesis.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """`genesis.amp.GradScaler("cuda", ...)`."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _deprecated("GradScaler", "genesis.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """`genesis.amp.custom_fwd(..., device_type="cuda")`."""
    _deprecated("custom_fwd", "genesis.amp.custom_fwd(args..., device_type='cuda')")
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """`genesis.amp.custom_bwd(..., device_type="cuda")`."""
    _deprecated("custom_bwd", "genesis.amp.custom_bwd(args..., device_type='cuda')")
    return amp.custom_bwd(bwd, device_type="cuda")
