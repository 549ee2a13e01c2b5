"""CUDA graphs: record the work given to a stream once, then replay it with one launch.

While a stream is being captured, the kernels launched on it are recorded into a graph instead
of running. Replaying the instantiated graph runs them all again, on the same memory, for the
cost of one launch. So captured code must not depend on the host between its kernels: a host
copy, a synchronization, a kernel compilation or an allocation from the shared pool during
capture would either fail inside the driver (and invalidate the capture) or be baked into the
graph wrongly. `check_not_capturing` turns each of them into a clear error first.

Memory allocated on a capturing stream comes from the graph's private pool of the caching
allocator (memory.CachingAllocator.begin_allocate_to_pool): the addresses the graph was
recorded with stay reserved for it, and are reused on every replay.
"""

import itertools
import threading

from . import driver


class CaptureError(RuntimeError):
    """An operation that cannot be part of a CUDA graph was attempted while capturing."""


_active = {}  # capturing stream handle -> Capture, for every capture under way in the process
_pool_ids = itertools.count(1)


def new_pool_id():
    """A fresh private-pool id, as `graph_pool_handle()` returns: (0, n)."""
    return (0, next(_pool_ids))


class Capture:
    """One capture under way: its stream, device, private pool, mode and thread."""

    __slots__ = ("stream", "device", "pool", "mode", "thread", "keepalive", "scratch")

    def __init__(self, stream, device, pool, mode):
        self.stream, self.device, self.pool, self.mode = stream, device, pool, mode
        self.thread = threading.get_ident()
        self.keepalive = []  # buffers that the recorded kernels use and nothing else owns
        self.scratch = None  # the largest scratch handed out so far (see `scratch`)


def active_capture(stream):
    """The capture under way on `stream` (a handle), or None."""
    return _active.get(stream) if _active else None


def check_not_capturing(op, stream=None):
    """Raise CaptureError when `op` would break a capture under way: any capture in "global"
    mode, one of this thread in "thread_local" mode, or one on `stream` itself."""
    if not _active:
        return
    me = threading.get_ident()
    for capture in list(_active.values()):
        if (capture.stream == stream or capture.mode == "global"
                or (capture.mode == "thread_local" and capture.thread == me)):
            raise CaptureError(
                f"{op} is not permitted while a CUDA graph is being captured (stream "
                f"{capture.stream:#x} on cuda:{capture.device}, mode {capture.mode!r}): a replay "
                "runs the recorded device work only. Move it out of the captured region.")


def keep_alive(stream, buffer):
    """Hold `buffer` for as long as the graph being captured on `stream` lives."""
    _active[stream].keepalive.append(buffer)


def scratch(nbytes, device, stream):
    """A uint8 CUDAArray of at least `nbytes` from the pool of the graph captured on `stream`,
    which holds it as long as it lives: scratch that a graph's kernels use must never be
    regrown or handed to eager code, as the shared per-stream workspaces are. The capture's
    launches share one buffer, as eager launches share their stream's workspace (a replay runs
    them one after another); one too small is kept for the launches recorded on it and a
    larger one made."""
    import numpy as np
    from .array import CUDAArray
    capture = _active[stream]
    buffer = capture.scratch
    if buffer is None or buffer.storage.nbytes < nbytes:
        buffer = capture.scratch = CUDAArray.empty((max(nbytes, 1),), np.uint8, device, stream)
        keep_alive(stream, buffer)
    return buffer


def upload(ptr, host, stream):
    """Copy the contiguous numpy array `host` to device address `ptr`, enqueued on `stream`.
    During a capture the copy goes through pinned memory that the graph keeps: a copy from
    pageable memory cannot be captured, and every replay copies the same bytes again."""
    if active_capture(stream) is None:
        driver.memcpy_htod(ptr, host.ctypes.data, host.nbytes, stream)
        return
    from .pinned import PinnedBuffer
    with driver.relaxed_capture():
        buffer = PinnedBuffer(host.nbytes)
    buffer.view(host.shape, host.dtype)[...] = host
    driver.memcpy_htod(ptr, buffer.ptr, host.nbytes, stream)
    keep_alive(stream, buffer)


class Graph:
    """A captured and instantiated CUDA graph (the runtime side of genesis.cuda.CUDAGraph).

    `begin(stream, device, allocator, pool, mode)` starts capturing `stream`, routing its
    allocations to the private `pool`; `end()` instantiates what was recorded; `launch(stream)`
    replays it; `destroy()` frees the graph and releases the pool (its memory returns to the
    driver on empty_cache() once nothing else uses it).
    """

    def __init__(self):
        self.graph = self.exec = None
        self.capture = None
        self.keepalive = []
        self._allocator = self._pool = None

    def begin(self, stream, device, allocator, pool, mode="global"):
        if self.exec is not None or self.capture is not None:
            raise RuntimeError("CUDAGraph: capture_begin on a graph already captured; call "
                               "reset() first")
        if mode not in driver.CAPTURE_MODES:
            raise ValueError(f"capture_error_mode must be one of {driver.CAPTURE_MODES}, got "
                             f"{mode!r}")
        if stream == 0:
            raise RuntimeError("CUDAGraph: cannot capture the legacy default stream; capture on "
                               "a side stream (genesis.cuda.graph does)")
        if stream in _active:
            raise RuntimeError(f"CUDAGraph: stream {stream:#x} is already being captured")
        allocator.begin_allocate_to_pool(pool, stream, strict=mode != "relaxed")
        self._allocator, self._pool = allocator, pool
        capture = Capture(stream, device, pool, mode)
        try:
            driver.stream_begin_capture(stream, mode)
        except BaseException:
            allocator.end_allocate_to_pool(stream)
            allocator.release_pool(pool)
            self._allocator = self._pool = None
            raise
        self.capture = _active[stream] = capture

    def end(self, failed=False):
        """Stop capturing; instantiate the graph unless the captured region `failed` (then the
        recording is discarded, the pool released, and the stream left usable)."""
        capture, self.capture = self.capture, None
        if capture is None:
            raise RuntimeError("CUDAGraph: capture_end without capture_begin")
        del _active[capture.stream]
        self._allocator.end_allocate_to_pool(capture.stream)
        try:
            graph = driver.stream_end_capture(capture.stream)
        except driver.CudaError:
            self._release_pool()
            if failed:
                return
            raise
        if failed:
            driver.graph_destroy(graph)
            self._release_pool()
            return
        self.graph = graph
        self.keepalive = capture.keepalive
        self.exec = driver.graph_instantiate(graph)

    def launch(self, stream):
        if self.exec is None:
            raise RuntimeError("CUDAGraph: replay() before a successful capture")
        driver.graph_launch(self.exec, stream)

    def debug_dump(self, path):
        driver.graph_debug_dot_print(self.graph, path)

    def destroy(self):
        if self.capture is not None:
            self.end(failed=True)
        if self.exec is not None:
            driver.graph_exec_destroy(self.exec)
            driver.graph_destroy(self.graph)
            self.exec = self.graph = None
            self.keepalive = []
            self._release_pool()

    def _release_pool(self):
        if self._allocator is not None:
            self._allocator.release_pool(self._pool)
            self._allocator = self._pool = None
