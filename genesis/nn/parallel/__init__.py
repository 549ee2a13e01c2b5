"""Parallel training wrappers: `DistributedDataParallel` (a process per GPU) and `DataParallel`
(one process, the batch split over the GPUs), with DataParallel's parts (scatter, replicate,
gather, data_parallel) under PyTorch's names."""

from .data_parallel import DataParallel, data_parallel, gather, replicate, scatter
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel", "scatter", "replicate",
           "gather"]
