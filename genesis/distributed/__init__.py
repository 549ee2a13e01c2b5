"""Data-parallel communication with PyTorch's `torch.distributed` API.

Backends: "nccl" for CUDA tensors (nccl4py); for CPU tensors "gloo" (the default: pure Python
over TCP sockets, ranks started by any means) and "mpi" (mpi4py, ranks started by mpiexec).
Each is imported when a process group is created, never at `import genesis`.
"""

from . import algorithms
from .backend import (Backend, get_default_backend_for_device, is_backend_available,
                      is_gloo_available, is_mpi_available, is_nccl_available, is_ucc_available,
                      is_xccl_available)
from .debug import (DebugLevel, breakpoint, get_debug_level, set_debug_level,
                    set_debug_level_from_env)
from .errors import (DistBackendError, DistError, DistNetworkError, DistStoreError,
                     QueueEmptyError)
from .grad_bucket import BuiltinCommHookType, GradBucket
from .groups import (GroupMember, ProcessGroup, get_global_rank, get_group_rank,
                     get_node_local_rank, get_process_group_ranks, group)
from .objects import (broadcast_object_list, gather_object, recv_object_list,
                      scatter_object_list, send_object_list)
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .process_group import (all_gather, all_gather_into_tensor, all_gather_object,
                            all_gather_single, all_reduce, all_reduce_coalesced, all_to_all,
                            all_to_all_single, barrier,
                            broadcast, default_pg_timeout, destroy_process_group, gather,
                            get_backend, get_pg_count, get_rank, get_world_size,
                            init_process_group, is_available, is_initialized,
                            monitored_barrier, new_group, reduce, reduce_scatter,
                            reduce_scatter_single, reduce_scatter_tensor, scatter)
from .rendezvous import is_torchelastic_launched
from .store import TCPStore
from .store_api import Store
from .stores import FileStore, HashStore, PrefixStore
from .subgroups import new_subgroups, new_subgroups_by_enumeration
from .work import ReduceOp, Work, supports_complex

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized",
           "get_rank", "get_world_size", "get_backend", "all_reduce", "broadcast", "reduce",
           "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "all_gather_single",
           "reduce_scatter_single", "gather", "scatter",
           "barrier", "all_gather_object", "ReduceOp", "Work", "TCPStore", "DistError",
           "DistStoreError", "DistBackendError", "send", "recv", "isend", "irecv", "P2POp",
           "batch_isend_irecv", "all_to_all", "all_to_all_single", "reduce_scatter",
           "all_reduce_coalesced", "broadcast_object_list", "gather_object",
           "scatter_object_list", "new_group", "group", "GroupMember", "ProcessGroup",
           "get_process_group_ranks", "get_global_rank", "get_group_rank",
           "get_node_local_rank", "get_default_backend_for_device", "is_mpi_available",
           "is_nccl_available", "is_gloo_available", "is_ucc_available", "is_xccl_available",
           "is_backend_available", "Backend", "monitored_barrier", "send_object_list",
           "recv_object_list", "new_subgroups", "new_subgroups_by_enumeration", "get_pg_count",
           "Store", "HashStore", "FileStore", "PrefixStore", "DebugLevel", "get_debug_level",
           "set_debug_level", "set_debug_level_from_env", "default_pg_timeout",
           "is_torchelastic_launched", "breakpoint", "supports_complex", "DistNetworkError",
           "QueueEmptyError", "GradBucket", "BuiltinCommHookType", "algorithms"]
