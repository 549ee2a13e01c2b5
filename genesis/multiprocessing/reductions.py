"""How genesis.multiprocessing sends a tensor (torch.multiprocessing.reductions): a CPU tensor
moves into shared memory, if it is not there, and travels as a handle on that memory, so the
receiver writes the sender's values; other devices' tensors travel by value.

The reducer is registered with multiprocessing's ForkingPickler, which pickles Process
arguments under spawn and forkserver, Queue and Pipe messages and Pool tasks. Plain pickle
still copies values. A Parameter pickles as Parameter(its data, requires_grad), so its data
goes the same way; gradients are not sent, as in PyTorch.
"""

from multiprocessing.reduction import ForkingPickler

from ..backends.cpu import shared
from ..device import device as Device
from ..dispatch import kernel
from ..tensor import Tensor


def reduce_tensor(t):
    """(rebuild, args) for `t`: a handle on its shared storage and its geometry."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)
    t.share_memory_()
    return rebuild_tensor, (shared.handle(t._storage), t.dtype, tuple(t.shape), t.stride(),
                            t._offset, t.requires_grad)


def rebuild_tensor(handle, dtype, shape, strides, offset, requires_grad):
    """The received tensor, over this process's mapping of the sender's memory."""
    storage = shared.storage_from(handle)
    data = kernel("as_strided", "cpu")(storage, shape, strides, offset)
    return Tensor._make(data, Device("cpu"), dtype, storage, offset, requires_grad)


def init_reductions():
    ForkingPickler.register(Tensor, reduce_tensor)
