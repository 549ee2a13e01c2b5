"""`torch.distributions.exponential`'s import path for Exponential."""

from .uniform import Exponential

__all__ = ["Exponential"]
