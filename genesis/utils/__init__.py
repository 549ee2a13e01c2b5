"""Utilities with PyTorch's names: `genesis.utils.data` (datasets, samplers, DataLoader),
`genesis.utils.checkpoint` (activation checkpointing) and `genesis.utils.hooks`."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
