"""share_memory_ and is_shared: a CPU tensor's storage moved into shared memory in place, for
every tensor over it, so that processes given it through genesis.multiprocessing write the same
memory (torch.Tensor.share_memory_)."""

import gc
import sys

from .. import dtypes
from ..dispatch import kernel
from ..tensor import Tensor


def _storage_refs(t):
    return sys.getrefcount(t._storage)


def _holders(t):
    """The live tensors whose storage is `t`'s, `t` among them. Tensors keep no list of their
    views: when the storage has no more references than that of a new tensor, `t` is alone;
    otherwise the garbage collector finds them, those referring to the storage directly and
    those whose attributes went into a __dict__."""
    alone = Tensor._make(kernel("empty", "cpu")((1,), dtypes.float32), t.device)
    if _storage_refs(t) <= _storage_refs(alone):
        return [t]
    storage = t._storage
    found = gc.get_referrers(storage)
    dicts = [r for r in found if type(r) is dict]
    if dicts:
        found += gc.get_referrers(*dicts)
    return [r for r in found if isinstance(r, Tensor) and r._storage is storage]


class SharingMethods:
    """Tensor methods of this family."""

    def share_memory_(self):
        """Move this CPU tensor's storage into shared memory under the current sharing strategy,
        in place for every tensor over it; a no-op when it is there already and for CUDA tensors.
        Returns self."""
        if self.device.type != "cpu" or self.is_shared():
            return self
        holders = _holders(self)
        shared = kernel("share_storage", "cpu")(self._storage)
        as_strided = kernel("as_strided", "cpu")
        for t in holders:
            t._data = as_strided(shared, t._data.shape, t.stride(), t._offset)
            t._storage = shared
        return self

    def is_shared(self):
        """Whether the storage is in shared memory (always so for CUDA tensors, as in PyTorch)."""
        return self.device.type == "cuda" or kernel("is_shared", "cpu")(self._storage)
