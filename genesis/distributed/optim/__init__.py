"""Distributed optimizers (PyTorch's torch.distributed.optim): ZeroRedundancyOptimizer, which
shards an optimizer's state over the ranks of a process group."""

from .post_localSGD_optimizer import PostLocalSGDOptimizer
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["PostLocalSGDOptimizer", "ZeroRedundancyOptimizer"]
