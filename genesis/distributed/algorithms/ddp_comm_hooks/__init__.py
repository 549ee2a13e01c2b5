"""DDP communication hooks (PyTorch's torch.distributed.algorithms.ddp_comm_hooks): the default
hooks, uint8 quantization, PowerSGD compression, the no-op debugging hook, and registration by
name."""

from enum import Enum

from . import debugging_hooks as debugging
from . import default_hooks as default
from . import powerSGD_hook as powerSGD
from . import quantization_hooks as quantization

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


class _Registration:
    """Registers `hook` on a DDP model with a state (DDPCommHookType's values)."""

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, model, state):
        model.register_comm_hook(state, self.hook)


class _PowerSGDRegistration:
    """Registers a PowerSGD `hook` of rank `matrix_approximation_rank` on a DDP model; the
    state given is the process group, wrapped in a PowerSGDState."""

    def __init__(self, hook, matrix_approximation_rank):
        self.hook, self.matrix_approximation_rank = hook, matrix_approximation_rank

    def __call__(self, model, state, start_powerSGD_iter=1_000):
        powerSGD_state = powerSGD.PowerSGDState(
            process_group=state, matrix_approximation_rank=self.matrix_approximation_rank,
            start_powerSGD_iter=start_powerSGD_iter)
        model.register_comm_hook(powerSGD_state, self.hook)


class DDPCommHookType(Enum):
    """The hooks by name: `DDPCommHookType.ALLREDUCE.value(model=model, state=group)`."""

    ALLREDUCE = _Registration(default.allreduce_hook)
    FP16_COMPRESS = _Registration(default.fp16_compress_hook)
    BF16_COMPRESS = _Registration(default.bf16_compress_hook)
    QUANTIZE_PER_TENSOR = _Registration(quantization.quantization_pertensor_hook)
    QUANTIZE_PER_CHANNEL = _Registration(quantization.quantization_perchannel_hook)
    POWER_SGD = _PowerSGDRegistration(powerSGD.powerSGD_hook, 1)
    POWER_SGD_RANK2 = _PowerSGDRegistration(powerSGD.powerSGD_hook, 2)
    BATCHED_POWER_SGD = _PowerSGDRegistration(powerSGD.batched_powerSGD_hook, 1)
    BATCHED_POWER_SGD_RANK2 = _PowerSGDRegistration(powerSGD.batched_powerSGD_hook, 2)
    NOOP = _Registration(debugging.noop_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook `comm_hook_type` names on `model` with `state`."""
    comm_hook_type.value(model=model, state=state)
