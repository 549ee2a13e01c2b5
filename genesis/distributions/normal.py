"""`torch.distributions.normal`'s import path for Normal."""

from .location_scale import Normal

__all__ = ["Normal"]
