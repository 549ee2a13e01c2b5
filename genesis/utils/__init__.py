"""Utilities with PyTorch's names: `genesis.utils.data` (datasets, samplers, DataLoader),
`genesis.utils.checkpoint` (activation checkpointing), `genesis.utils.hooks` and
`swap_tensors`; `genesis.utils.benchmark` and `genesis.utils.tensorboard` (which needs the
tensorboard package) are imported on their own."""

from . import checkpoint, data, hooks
from ._swap import swap_tensors

__all__ = ["checkpoint", "data", "hooks", "swap_tensors"]
