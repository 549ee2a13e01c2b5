"""Data-parallel communication with PyTorch's `torch.distributed` API.

Backends: "nccl" for CUDA tensors (nccl4py) and "mpi" for CPU tensors (mpi4py). Both are
imported when a process group is created, never at `import genesis`.
"""

from .process_group import (all_gather, all_gather_into_tensor, all_gather_object, all_reduce,
                            barrier, broadcast, destroy_process_group, gather, get_backend,
                            get_rank, get_world_size, init_process_group, is_available,
                            is_initialized, reduce, reduce_scatter_tensor, scatter)
from .store import DistBackendError, DistError, DistStoreError, TCPStore
from .work import ReduceOp, Work

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized",
           "get_rank", "get_world_size", "get_backend", "all_reduce", "broadcast", "reduce",
           "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "gather", "scatter",
           "barrier", "all_gather_object", "ReduceOp", "Work", "TCPStore", "DistError",
           "DistStoreError", "DistBackendError"]
