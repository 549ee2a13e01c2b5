"""`genesis.cuda.amp`: the CUDA spellings of `genesis.amp`, as `torch.cuda.amp`."""

from .. import amp, dtypes


class autocast(amp.autocast):
    """`genesis.autocast("cuda", ...)` with float16 by default."""

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """`genesis.amp.GradScaler("cuda", ...)`."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


custom_fwd = amp.custom_fwd
custom_bwd = amp.custom_bwd
