"""InstanceNorm1d/2d/3d: each sample's channels normalized over their own spatial values."""

from ..._warnings import warn
from .batchnorm import _NormBase
from .. import functional as F


class _InstanceNorm(_NormBase):
    """Shared by InstanceNorm1d/2d/3d; `_spatial` is the number of spatial dims."""

    _spatial = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def forward(self, input):
        batched = self._spatial + 2
        if input.ndim not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.ndim}D "
                             f"input)")
        self._check_channels(input, input.ndim - self._spatial - 1)
        unbatched = input.ndim == batched - 1
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out

    def _check_channels(self, input, channel_dim):
        """A channel count other than num_features is an error with affine parameters, else a
        warning (num_features is then unused), as in PyTorch."""
        if input.shape[channel_dim] == self.num_features:
            return
        if self.affine:
            raise ValueError(f"expected input's size at dim={channel_dim} to match num_features "
                             f"({self.num_features}), but got: {input.shape[channel_dim]}.")
        warn(f"input's size at dim={channel_dim} does not match num_features. You can silence "
             "this warning by not passing in num_features, which is not used because "
             "affine=False")


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L) input."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W) input."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W) input."""

    _spatial = 3
