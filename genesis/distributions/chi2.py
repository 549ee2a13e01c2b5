"""`torch.distributions.chi2`'s import path for Chi2."""

from .gamma import Chi2

__all__ = ["Chi2"]
