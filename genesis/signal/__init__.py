"""genesis.signal, as torch.signal: window functions (`windows`)."""

from . import windows  # noqa: F401

__all__ = ["windows"]
