"""`torch.distributions.half_normal`'s import path for HalfNormal."""

from .location_scale import HalfNormal

__all__ = ["HalfNormal"]
