"""Utilities with PyTorch's names: `genesis.utils.data` (datasets, samplers, DataLoader)."""

from . import data

__all__ = ["data"]
