"""DDP communication hooks (PyTorch's torch.distributed.algorithms.ddp_comm_hooks): the default
hooks, the no-op debugging hook, and registration by name."""

from enum import Enum

from . import debugging_hooks as debugging
from . import default_hooks as default

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


class _Registration:
    """Registers `hook` on a DDP model with a state (DDPCommHookType's values)."""

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, model, state):
        model.register_comm_hook(state, self.hook)


class DDPCommHookType(Enum):
    """The hooks by name: `DDPCommHookType.ALLREDUCE.value(model=model, state=group)`."""

    ALLREDUCE = _Registration(default.allreduce_hook)
    FP16_COMPRESS = _Registration(default.fp16_compress_hook)
    BF16_COMPRESS = _Registration(default.bf16_compress_hook)
    NOOP = _Registration(debugging.noop_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook `comm_hook_type` names on `model` with `state`."""
    comm_hook_type.value(model=model, state=state)
