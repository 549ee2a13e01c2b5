"""Streams and events, PyTorch-style: `Stream`, `Event`, the current stream per device and thread.

Stream 0 is the legacy default stream of each device (as in PyTorch): work on it waits for other
blocking streams. `Stream()` makes a non-blocking stream by default.
"""

import threading

from . import driver, sync_debug
from .device import activate, device_index, get_context
from .graphs import check_not_capturing


class _ThreadState(threading.local):
    """This thread's current streams by device, None until one is set (a class default:
    reading it never misses, and a missed thread-local attribute costs half a microsecond)."""

    streams = None


_local = _ThreadState()
_streams_set = False  # whether any thread has set a current stream: until then all are default


class Stream:
    """A CUDA stream on a device; `cuda_stream` is the raw handle (an int)."""

    def __init__(self, device=None, priority=0, non_blocking=True, _handle=None):
        self.device_index = device_index(device)
        ctx = get_context(self.device_index)
        ctx.make_current()
        self._owned = _handle is None
        self.priority = priority
        self.cuda_stream = driver.stream_create(non_blocking, priority) if _handle is None \
            else _handle

    @property
    def device(self):
        from ....device import device
        return device("cuda", self.device_index)

    def synchronize(self):
        check_not_capturing("Stream.synchronize()", self.cuda_stream)
        sync_debug.warn_or_error_on_sync()
        driver.stream_synchronize(self.cuda_stream)

    def retain_handle(self):
        """Never destroy this stream: the caching allocator holds its handle (`record_stream`)
        and records an event on it whenever a block used there is freed, however late; as
        PyTorch's pooled streams, it lives until the process ends."""
        self._owned = False

    def query(self):
        check_not_capturing("Stream.query()", self.cuda_stream)
        return driver.stream_query(self.cuda_stream)

    def wait_event(self, event):
        driver.stream_wait_event(self.cuda_stream, event.cuda_event)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and other.cuda_stream == self.cuda_stream \
            and other.device_index == self.device_index

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<genesis.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"

    def __del__(self):
        if getattr(self, "_owned", False):
            try:
                driver.stream_destroy(self.cuda_stream)
            except Exception:  # interpreter shutdown
                pass


class Event:
    """A CUDA event: record on a stream, wait, query, time (`enable_timing=True`)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        get_context().make_current()
        self.enable_timing = enable_timing
        self.cuda_event = driver.event_create(enable_timing, blocking)

    def record(self, stream=None):
        stream = stream or current_stream()
        driver.event_record(self.cuda_event, stream.cuda_stream)

    def wait(self, stream=None):
        (stream or current_stream()).wait_event(self)

    def query(self):
        check_not_capturing("Event.query()")
        return driver.event_query(self.cuda_event)

    def synchronize(self):
        check_not_capturing("Event.synchronize()")
        driver.event_synchronize(self.cuda_event)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded, timing enabled)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        return driver.event_elapsed_ms(self.cuda_event, end_event.cuda_event)

    def __del__(self):
        try:
            driver.event_destroy(self.cuda_event)
        except Exception:  # interpreter shutdown
            pass


def synchronize(device=None):
    """Wait for all work on `device` (the current one by default) to finish."""
    check_not_capturing("genesis.cuda.synchronize()")
    activate(device_index(device))
    driver.context_synchronize()


_default_streams = {}


def default_stream(device=None):
    index = device_index(device)
    if index not in _default_streams:
        _default_streams[index] = Stream(index, _handle=0)
    return _default_streams[index]


def current_stream(device=None):
    index = device_index(device)
    streams = _local.streams
    if streams and index in streams:
        return streams[index]
    return default_stream(index)


def current_stream_handle(index):
    """The raw handle of the current stream on device `index` (the launch path's fast lookup:
    no thread-local read until some thread sets a stream)."""
    if not _streams_set:
        return 0
    streams = _local.streams
    if streams and index in streams:
        return streams[index].cuda_stream
    return 0


def set_stream(stream):
    global _streams_set
    _streams_set = True  # before this thread's own streams change, so no reader misses them
    if _local.streams is None:
        _local.streams = {}
    _local.streams[stream.device_index] = stream


class stream_context:
    """`with genesis.cuda.stream(s):` makes `s` current on its device; None is a no-op."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        self._prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self._prev)
        return False
