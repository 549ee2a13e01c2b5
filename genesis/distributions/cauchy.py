"""`torch.distributions.cauchy`'s import path for Cauchy."""

from .location_scale import Cauchy

__all__ = ["Cauchy"]
