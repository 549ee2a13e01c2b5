"""`torch.distributions.laplace`'s import path for Laplace."""

from .location_scale import Laplace

__all__ = ["Laplace"]
