"""Mixed-precision kernels (numpy): GradScaler's unscale with its inf/NaN check."""

import numpy as np

from ...dispatch import register


@register("amp_unscale_", "cpu")
def amp_unscale_(grads, found_inf, inv_scale):
    """Multiply every gradient by `inv_scale` in place (half types in float32, rounded once) and
    set the 0-d `found_inf` to 1 if any gradient holds inf or NaN."""
    inv = np.float32(inv_scale)
    with np.errstate(all="ignore"):
        for g in grads:
            wide = g if g.dtype == np.float64 else g.astype(np.float32)
            if not np.isfinite(wide).all():
                found_inf[...] = 1.0
            g[...] = wide * inv
