"""Page-locked (pinned) host memory: the staging area of asynchronous host-device copies.

The GPU's copy engines read and write pinned memory directly, so a copy from it can run while
the host goes on. `PinnedBuffer` owns one allocation and exposes it to numpy; `staging` hands out
buffers from a small cache and takes each back only after an event says the copy that used it has
finished, so a buffer is never overwritten while the GPU still reads it. `stats` counts them as
torch.cuda.host_memory_stats does: buffers allocated, and those handed out (not idle in the cache).
"""

import threading
import time

import numpy as np

from . import driver


class _Count:
    """One statistic: current, peak, and the totals added (allocated) and removed (freed)."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def change(self, n):
        self.current += n
        if n >= 0:
            self.allocated += n
            self.peak = max(self.peak, self.current)
        else:
            self.freed -= n

    def as_dict(self):
        return {"current": self.current, "peak": self.peak, "allocated": self.allocated,
                "freed": self.freed}


class _Duration:
    """Microseconds spent in one kind of driver call: total, max, min, count."""

    __slots__ = ("total", "max", "min", "count")

    def __init__(self):
        self.total = self.max = self.min = self.count = 0

    def add(self, us):
        self.min = us if not self.count else min(self.min, us)
        self.max = max(self.max, us)
        self.total += us
        self.count += 1

    def as_dict(self):
        return {"total": self.total, "max": self.max, "min": self.min, "count": self.count,
                "avg": self.total // self.count if self.count else 0}


class HostMemoryStats:
    """The pinned buffers' statistics, with torch.cuda.host_memory_stats's names."""

    def __init__(self):
        self._lock = threading.Lock()
        self.allocations, self.allocated_bytes = _Count(), _Count()
        self.active_requests, self.active_bytes = _Count(), _Count()
        self.reset_accumulated()

    def allocated(self, nbytes, us):
        with self._lock:
            self.allocations.change(1)
            self.allocated_bytes.change(nbytes)
            self.num_host_alloc += 1
            self.host_alloc_time.add(us)

    def freed(self, nbytes, us):
        with self._lock:
            self.allocations.change(-1)
            self.allocated_bytes.change(-nbytes)
            self.num_host_free += 1
            self.host_free_time.add(us)

    def activity(self, nbytes, active):
        """A buffer handed out (`active`) or back idle in the staging cache."""
        sign = 1 if active else -1
        with self._lock:
            self.active_requests.change(sign)
            self.active_bytes.change(sign * nbytes)

    def _counts(self):
        return (self.allocations, self.allocated_bytes, self.active_requests, self.active_bytes)

    def reset_accumulated(self):
        """Zero the totals (allocated, freed), the call counts and the call times."""
        with self._lock:
            self.num_host_alloc = self.num_host_free = 0
            self.host_alloc_time, self.host_free_time = _Duration(), _Duration()
            for count in self._counts():
                count.allocated = count.freed = 0

    def reset_peak(self):
        with self._lock:
            for count in self._counts():
                count.peak = count.current

    def as_nested_dict(self):
        with self._lock:
            names = ("allocations", "allocated_bytes", "active_requests", "active_bytes")
            out = {name: count.as_dict() for name, count in zip(names, self._counts())}
            out.update(num_host_alloc=self.num_host_alloc, num_host_free=self.num_host_free,
                       host_alloc_time=self.host_alloc_time.as_dict(),
                       host_free_time=self.host_free_time.as_dict())
            return out


stats = HostMemoryStats()


def _microseconds_since(start):
    return int((time.perf_counter() - start) * 1e6)


class PinnedBuffer:
    """`nbytes` of pinned host memory; `np.asarray(buf)` views it, keeping the buffer alive.
    It counts as handed out (`active`) from the start."""

    def __init__(self, nbytes):
        self.nbytes = nbytes
        start = time.perf_counter()
        self.ptr = driver.host_alloc_pinned(max(nbytes, 1))
        stats.allocated(max(nbytes, 1), _microseconds_since(start))
        self.active = True
        stats.activity(nbytes, True)
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (self.ptr, False), "version": 3}

    def set_active(self, active):
        if active != self.active:
            self.active = active
            stats.activity(self.nbytes, active)

    def view(self, shape, dtype):
        """A numpy array of `shape` and `dtype` over the start of this buffer."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        return np.asarray(self)[:count * dtype.itemsize].view(dtype).reshape(shape)

    def __del__(self):
        try:
            self.set_active(False)
            start = time.perf_counter()
            driver.host_free_pinned(self.ptr)
            stats.freed(max(self.nbytes, 1), _microseconds_since(start))
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
                    buf.set_active(True)
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
                buf.set_active(False)
                if len(self._free) < self._max:
                    self._free.append(buf)
            else:
                still_busy.append((event, buf))
        self._busy = still_busy


def _round_up(nbytes, quantum=1 << 20):
    return -(-max(nbytes, 1) // quantum) * quantum


staging = _StagingCache()
