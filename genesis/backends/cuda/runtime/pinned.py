"""Page-locked (pinned) host memory: the staging area of asynchronous host-device copies.

The GPU's copy engines read and write pinned memory directly, so a copy from it can run while
the host goes on. `PinnedBuffer` owns one allocation and exposes it to numpy; `staging` hands out
buffers from a small cache and takes each back only after an event says the copy that used it has
finished, so a buffer is never overwritten while the GPU still reads it.
"""

import threading

import numpy as np

from . import driver


class PinnedBuffer:
    """`nbytes` of pinned host memory; `np.asarray(buf)` views it, keeping the buffer alive."""

    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.ptr = driver.host_alloc_pinned(max(nbytes, 1))
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (self.ptr, False), "version": 3}

    def view(self, shape, dtype):
        """A numpy array of `shape` and `dtype` over the start of this buffer."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        return np.asarray(self)[:count * dtype.itemsize].view(dtype).reshape(shape)

    def __del__(self):
        try:
            driver.host_free_pinned(self.ptr)
        except Exception:  # interpreter shutdown
            pass


class _StagingCache:
    """Pinned buffers reused for async uploads; each in use until its event completes."""

    def __init__(self, max_cached=16):
        self._free = []
        self._busy = []
        self._max = max_cached
        self._lock = threading.Lock()

    def acquire(self, nbytes):
        with self._lock:
            self._reclaim()
            for i, buf in enumerate(self._free):
                if buf.nbytes >= nbytes:
                    return self._free.pop(i)
        return PinnedBuffer(_round_up(nbytes))

    def release_after(self, buf, stream):
        """Give `buf` back once the work queued on `stream` so far has finished."""
        event = driver.event_create()
        driver.event_record(event, stream)
        with self._lock:
            self._busy.append((event, buf))

    def _reclaim(self):
        still_busy = []
        for event, buf in self._busy:
            if driver.event_query(event):
                driver.event_destroy(event)
                if len(self._free) < self._max:
                    self._free.append(buf)
            else:
                still_busy.append((event, buf))
        self._busy = still_busy


def _round_up(nbytes, quantum=1 << 20):
    return -(-max(nbytes, 1) // quantum) * quantum


staging = _StagingCache()
