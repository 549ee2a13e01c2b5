"""`torch.distributions.geometric`'s import path for Geometric."""

from .bernoulli import Geometric

__all__ = ["Geometric"]
