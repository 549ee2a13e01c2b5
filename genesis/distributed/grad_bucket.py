"""What a DDP communication hook is handed: one bucket of gradients (PyTorch's
`dist.GradBucket`), and the hooks DDP has built in (`dist.BuiltinCommHookType`)."""

from enum import Enum


class BuiltinCommHookType(Enum):
    """The hooks `DistributedDataParallel._register_builtin_comm_hook` takes."""

    ALLREDUCE = 1
    FP16_COMPRESS = 2


class GradBucket:
    """Bucket `index`'s flat gradient buffer and its parameters, in bucket order; `gradients()`
    are the parameters' gradients as views of the buffer."""

    def __init__(self, index, buffer, parameters, offsets, is_last):
        self._index, self._buffer, self._is_last = index, buffer, is_last
        self._parameters, self._offsets = list(parameters), list(offsets)

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer):
        """Replace the buffer (a compressing hook swaps in its cast copy)."""
        self._buffer = buffer

    def gradients(self):
        return [self._buffer[o:o + p.numel()].view(p.shape)
                for p, o in zip(self._parameters, self._offsets)]

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        """True for the last bucket of the iteration (all-reduced last)."""
        return self._is_last
