"""A simulated CUDA driver for testing the caching allocator without a GPU.

Device memory is a fake address space of a fixed capacity; events complete only when a test says
so (or at once with auto_complete=True), in record order per stream as on a real device. Streams
can be put in graph capture (begin_capture, join_capture, end_capture); as in "global" capture
mode, querying or waiting for an event or freeing memory meanwhile is an error. Misuse (double
free, unknown pointer, using a destroyed event, a call the driver forbids during capture) raises
SimDriverError.
"""

import itertools
import threading

from genesis.backends.cuda.runtime import memory_blocks as mb


class SimDriverError(RuntimeError):
    """The allocator used the simulated driver wrongly."""


class SimOutOfMemory(RuntimeError):
    """mem_alloc found no room (CUDA_ERROR_OUT_OF_MEMORY)."""


class _Event:
    __slots__ = ("stream", "seq", "done")

    def __init__(self):
        self.stream = None
        self.seq = 0
        self.done = True  # an event never recorded counts as complete, as in CUDA


class SimDriver:
    """The allocator's driver interface over a fake device of `total` bytes."""

    DriverOutOfMemory = SimOutOfMemory
    BASE = 0x7F00_0000_0000
    ALIGN = 512

    def __init__(self, total=1 << 30, auto_complete=False):
        self.total = total
        self.auto_complete = auto_complete
        self.live = {}  # ptr -> size
        self.used = 0
        self.alloc_calls = self.free_calls = 0
        self._next = self.BASE
        self._events = {}
        self._event_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self.captures = {}  # capturing stream -> capture id
        self._capture_ids = itertools.count(1)

    def begin_capture(self, stream):
        self.captures[stream] = next(self._capture_ids)

    def join_capture(self, stream, captured):
        """`stream` waited on an event of the `captured` stream: it joins that capture."""
        self.captures[stream] = self.captures[captured]

    def end_capture(self, stream):
        capture_id = self.captures.pop(stream)
        for other in [s for s, c in self.captures.items() if c == capture_id]:
            del self.captures[other]

    def stream_capture_info(self, stream):
        capture_id = self.captures.get(stream)
        return capture_id is not None, capture_id or 0

    def _forbidden_during_capture(self, call):
        if self.captures:
            raise SimDriverError(f"{call} during stream capture (the driver forbids it)")

    def mem_alloc(self, nbytes):
        with self._lock:
            if nbytes <= 0:
                raise SimDriverError(f"mem_alloc({nbytes})")
            if self.used + nbytes > self.total:
                raise SimOutOfMemory(f"mem_alloc({nbytes}): {self.total - self.used} bytes free")
            ptr = self._next
            self._next += -(-nbytes // self.ALIGN) * self.ALIGN + self.ALIGN  # a gap between
            self.live[ptr] = nbytes
            self.used += nbytes
            self.alloc_calls += 1
            return ptr

    def mem_free(self, ptr):
        self._forbidden_during_capture("mem_free")
        with self._lock:
            if ptr not in self.live:
                raise SimDriverError(f"mem_free({ptr:#x}): not allocated (double free?)")
            self.used -= self.live.pop(ptr)
            self.free_calls += 1

    def mem_get_info(self):
        return self.total - self.used, self.total

    def _event(self, event):
        if event not in self._events:
            raise SimDriverError(f"event {event} does not exist (destroyed?)")
        return self._events[event]

    def event_create(self):
        with self._lock:
            event = next(self._event_ids)
            self._events[event] = _Event()
            return event

    def event_record(self, event, stream):
        with self._lock:
            state = self._event(event)
            state.stream, state.seq, state.done = stream, next(self._seq), self.auto_complete

    def event_query(self, event):
        self._forbidden_during_capture("event_query")
        with self._lock:
            return self._event(event).done

    def event_synchronize(self, event):
        """The host waits: the event's stream runs up to and including it."""
        self._forbidden_during_capture("event_synchronize")
        with self._lock:
            state = self._event(event)
            self._complete(lambda e: e.stream == state.stream and e.seq <= state.seq)

    def event_destroy(self, event):
        with self._lock:
            self._event(event)
            del self._events[event]

    def complete(self, stream=None):
        """Let the work recorded on `stream` (every stream when None) finish."""
        with self._lock:
            self._complete(lambda e: stream is None or e.stream == stream)

    def _complete(self, selected):
        for state in self._events.values():
            if selected(state):
                state.done = True

    def pending_events(self):
        return sum(not e.done for e in self._events.values())


def check_invariants(allocator, driver, live=None):
    """Assert the allocator's structures are consistent, its graph pools' too; `live`: the
    blocks the test holds."""
    allocators = [allocator] + list(allocator._graph_pools.values())
    segments = {p: s for a in allocators for p, s in a._segments.items()}
    assert {p: s.size for p, s in segments.items()} == driver.live, "segments != driver memory"
    allocated = []
    for a in allocators:
        assert all(s.owner is a for s in a._segments.values())
        allocated += _check_structure(a)
    if live is not None:
        assert sorted(map(id, allocated)) == sorted(map(id, (b for b in live if b.size)))
    spans = sorted((b.ptr, b.ptr + b.size) for b in allocated)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])), "overlap"
    stats = allocator.memory_stats()
    assert stats["allocated_bytes.all.current"] == sum(b.size for b in allocated)
    assert stats["requested_bytes.all.current"] == sum(b.requested_size for b in allocated)
    assert stats["allocation.all.current"] == stats["active_blocks"] == len(allocated)
    assert stats["reserved_bytes.all.current"] == sum(s.size for s in segments.values()) \
        == driver.used
    assert stats["segment.all.current"] == len(segments)
    assert stats["segments"] == len(allocator._segments)
    for family in ("allocated_bytes", "requested_bytes", "allocation", "reserved_bytes"):
        for scope in ("all", "small_pool", "large_pool"):
            key = f"{family}.{scope}."
            assert stats[key + "peak"] >= stats[key + "current"] >= 0
            assert stats[key + "allocated"] - stats[key + "freed"] == stats[key + "current"]
    assert stats["reserved"] <= stats["memory_cap"]
    assert stats["cached"] == stats["reserved"] - stats["allocated"]
    assert 0.0 <= stats["fragmentation"] <= 1.0


def _check_structure(allocator):
    """Check one allocator's (the device's or a graph pool's) blocks, index and caches;
    returns its allocated blocks."""
    blocks = [b for s in allocator._segments.values() for b in _segment_blocks(s)]
    by_state = {state: [b for b in blocks if b.state == state]
                for state in (mb.FREE, mb.ALLOCATED, mb.CACHED, mb.PENDING)}
    assert len(blocks) == sum(map(len, by_state.values())), "a merged block is still linked"
    indexes = allocator._pool.indexes()
    indexed = [(key, e[2]) for key, entries in indexes for e in entries]
    assert sorted(b.ptr for _, b in indexed) == sorted(b.ptr for b in by_state[mb.FREE])
    for (pool, tag), b in indexed:
        assert b.state == mb.FREE and b.segment.pool == pool and b.stream == tag
    assert all(_ordered(entries) for _, entries in indexes)
    small = allocator._small_cache
    cached = [b for by_size in small.values() for bs in by_size.values() for b in bs]
    cached += list(allocator._large_cache.values())
    assert sorted(map(id, cached)) == sorted(map(id, by_state[mb.CACHED])) \
        == sorted(map(id, allocator._lru))
    for stream, by_size in small.items():
        assert all(b.stream == stream and b.size == size == allocator._lru[b] <= mb.SMALL_SIZE
                   for size, bs in by_size.items() for b in bs)
    for stream, b in allocator._large_cache.items():
        size = allocator._lru[b]  # the rounded request it serves
        assert b.stream == stream and mb.SMALL_SIZE < size <= b.size <= size + mb.SMALL_SIZE
    assert allocator._cached_bytes == sum(b.size for b in cached)
    waiting = [b for queue in allocator._pending.values() for _, b in queue]
    waiting_for_capture = allocator._root._wait_for_capture
    assert all(b.event_count == waiting.count(b) for b in by_state[mb.PENDING]
               if b not in waiting_for_capture)
    assert sorted(map(id, set(waiting) | {b for b in waiting_for_capture
                                          if b.segment.owner is allocator})) \
        == sorted(map(id, by_state[mb.PENDING]))
    return by_state[mb.ALLOCATED]


def _segment_blocks(segment):
    """The blocks of a segment, checking that they tile it exactly."""
    blocks = list(segment.blocks())
    assert blocks[0].ptr == segment.ptr and blocks[0].prev is None
    for a, b in zip(blocks, blocks[1:]):
        assert a.ptr + a.size == b.ptr and b.prev is a, "gap or overlap inside a segment"
        assert not (a.state == b.state == mb.FREE and (a.stream is None or b.stream is None
                                                 or a.stream == b.stream)), "not coalesced"
    assert sum(b.size for b in blocks) == segment.size
    assert all(b.segment is segment and b.size > 0 for b in blocks)
    return blocks


def _ordered(entries):
    keys = [(size, ptr) for size, ptr, _ in entries]
    return keys == sorted(keys) and all(size == b.size and ptr == b.ptr for size, ptr, b in entries)
