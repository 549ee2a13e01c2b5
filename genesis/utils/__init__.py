"""Utilities with PyTorch's names: `genesis.utils.data` (datasets, samplers, DataLoader) and
`genesis.utils.checkpoint` (activation checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
