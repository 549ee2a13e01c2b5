"""`torch.distributions.gumbel`'s import path for Gumbel."""

from .location_scale import Gumbel

__all__ = ["Gumbel"]
