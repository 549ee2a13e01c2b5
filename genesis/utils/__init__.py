"""Utilities with PyTorch's names: `genesis.utils.data` (datasets, samplers, DataLoader),
`genesis.utils.checkpoint` (activation checkpointing) and `genesis.utils.hooks`;
`genesis.utils.benchmark` and `genesis.utils.tensorboard` (which needs the tensorboard package)
are imported on their own."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
