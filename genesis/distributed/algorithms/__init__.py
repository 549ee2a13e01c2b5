"""Training algorithms over process groups (PyTorch's torch.distributed.algorithms): the join
context for uneven inputs, and DDP's communication hooks (in ddp_comm_hooks)."""

from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
