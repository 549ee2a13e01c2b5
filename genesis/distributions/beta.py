"""`torch.distributions.beta`'s import path for Beta."""

from .dirichlet import Beta

__all__ = ["Beta"]
