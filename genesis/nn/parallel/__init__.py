"""Parallel training wrappers: `DistributedDataParallel`."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
