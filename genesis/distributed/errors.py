"""The errors of genesis.distributed, with PyTorch's names and hierarchy."""


class DistError(RuntimeError):
    """A distributed operation failed."""


class DistBackendError(DistError):
    """The communication backend (NCCL, MPI, gloo) reported an error; its message is included."""


class DistNetworkError(DistError):
    """A network operation of the job failed (a peer unreachable, a connection dropped)."""


class DistStoreError(DistError):
    """The store did not answer in time (a rank that never joined, a key never set)."""


class QueueEmptyError(DistStoreError):
    """`Store.queue_pop(key, block=False)` found the queue empty."""
