"""Graph-private memory pools of the caching allocator.

A CUDA graph replays its kernels on the addresses it was captured with, so the memory that a
capture allocates must stay reserved for the graph and never be handed to eager code. While a
stream is captured, the device allocator routes its allocations to a private pool: a child
CachingAllocator that shares the device allocator's lock, statistics and cap but owns its own
segments. Blocks freed during the capture are reused by later allocations of the same capture
(the graph runs them in captured order), and by later captures that share the pool
(`graph_pool_handle()`, as in PyTorch). Eager allocations never see pool memory.

The same pools serve torch.cuda.MemPool: inside `use_mem_pool` one thread's allocations, on any
stream, go to the pool (`begin_allocate_thread_to_pool`), with none of a capture's restrictions;
a pool made with `use_on_oom` also serves what the device's memory cannot, before an OOM error.

A pool lives while a graph uses it (`release_pool` when the graph is reset) and while any of its
blocks are allocated (a graph's outputs); after that, `empty_cache()` returns its segments to the
driver. During a capture nothing waits for the device: no event is queried (the driver forbids
it), frees of blocks used on several streams are deferred until no capture is under way, and no
segment is freed.
"""

import threading

from .graphs import CaptureError
from .memory_blocks import PENDING


class GraphPoolsMixin:
    """The private pools of a CachingAllocator (the device's; pools have none of their own)."""

    def _init_pools(self, parent):
        self._root = self if parent is None else parent
        self.pool_id = (0, 0) if parent is None else None
        self.use_count = 0
        self._graph_pools = {}  # pool id -> private pool (a child allocator)
        self._capture_pools = {}  # stream captured now -> the pool its allocations go to
        self._capture_roots = {}  # stream captured now -> the stream whose capture it joined
        self._strict_streams = set()  # captured streams whose capture forbids other allocations
        self._wait_for_capture = []  # blocks freed during capture with events still to record
        self._thread_pools = {}  # thread id -> the pools it allocates from (use_mem_pool), nested
        self._routed = False  # whether a capture or a thread sends allocations to a pool
        self.use_on_oom = False  # a pool's: serves the device's requests that would fail

    def _incref_pool(self, pool_id):
        """Pool `pool_id`, made on first use, with one more user (under the lock)."""
        pool = self._graph_pools.get(pool_id)
        if pool is None:
            pool = self._graph_pools[pool_id] = type(self)(self._driver, self.device,
                                                           self._config, parent=self)
            pool.pool_id = pool_id
        pool.use_count += 1
        return pool

    def retain_pool(self, pool_id, use_on_oom=False):
        """One more user (a MemPool) of pool `pool_id`; `use_on_oom`: the pool's free memory
        serves any request of the device that would otherwise raise OutOfMemoryError."""
        with self._lock:
            self._incref_pool(pool_id).use_on_oom = use_on_oom

    def begin_allocate_to_pool(self, pool_id, stream, strict=True):
        """Send `stream`'s allocations to pool `pool_id` (made on first use) until
        `end_allocate_to_pool(stream)`. `strict`: meanwhile, an allocation on a stream that is not
        being captured raises (in "global" and "thread_local" capture it would break the graph)."""
        with self._lock:
            pool = self._incref_pool(pool_id)
            self._capture_pools[stream] = pool
            self._capture_roots[stream] = stream
            self._routed = True
            if strict:
                self._strict_streams.add(stream)

    def begin_allocate_thread_to_pool(self, pool_id):
        """Send this thread's allocations, on every stream, to pool `pool_id` (one more user of
        it) until `end_allocate_thread_to_pool`; the innermost of nested ones wins."""
        with self._lock:
            pool = self._incref_pool(pool_id)
            self._thread_pools.setdefault(threading.get_ident(), []).append(pool)
            self._routed = True

    def end_allocate_thread_to_pool(self, pool_id):
        """Stop sending this thread's allocations to pool `pool_id` (then `release_pool`)."""
        with self._lock:
            thread = threading.get_ident()
            pools = self._thread_pools[thread]
            pools.pop(max(i for i, pool in enumerate(pools) if pool.pool_id == pool_id))
            if not pools:
                del self._thread_pools[thread]
            self._routed = bool(self._capture_pools or self._thread_pools)

    def end_allocate_to_pool(self, stream):
        """Stop routing `stream` (and the streams that joined its capture) to its pool."""
        with self._lock:
            for joined in [s for s, root in self._capture_roots.items() if root == stream]:
                del self._capture_pools[joined], self._capture_roots[joined]
            self._strict_streams.discard(stream)
            self._routed = bool(self._capture_pools or self._thread_pools)
            if not self._capture_pools:
                waiting, self._wait_for_capture = self._wait_for_capture, []
                for block in waiting:
                    block.segment.owner._defer(block)

    def release_pool(self, pool_id):
        """One user of pool `pool_id` (a graph) is gone; free its memory once none is left."""
        with self._lock:
            pool = self._graph_pools.get(pool_id)
            if pool is None:
                return
            pool.use_count -= 1
            if pool.use_count <= 0 and not self._capture_pools:
                self._release_unused_pools()

    def _release_unused_pools(self):
        """Return the free segments of pools no graph uses; forget the pools left empty."""
        for pool_id, pool in list(self._graph_pools.items()):
            if pool.use_count > 0:
                continue
            pool._flush_all_caches()
            pool._release_free_segments()
            if not pool._segments:
                del self._graph_pools[pool_id]

    def _routed_pool(self, stream):
        """The pool an allocation on `stream` goes to, or None for the device's own memory: this
        thread's MemPool, else a capture's pool. A stream that joined a capture (it waited on an
        event of a captured stream) shares its pool; an uncaptured stream is refused while a
        strict capture is under way."""
        if self._thread_pools:
            pools = self._thread_pools.get(threading.get_ident())
            if pools:
                return pools[-1]
            if not self._capture_pools:
                return None
        pool = self._capture_pools.get(stream)
        if pool is not None:
            return pool
        capturing, capture_id = self._driver.stream_capture_info(stream)
        if capturing:
            with self._lock:
                for root in set(self._capture_roots.values()):
                    if self._driver.stream_capture_info(root)[1] == capture_id:
                        self._capture_roots[stream] = root
                        pool = self._capture_pools[stream] = self._capture_pools[root]
                        return pool
        if self._strict_streams:
            roots = ", ".join(f"{s:#x}" for s in sorted(self._strict_streams))
            raise CaptureError(
                f"allocation of memory on stream {stream:#x}, outside the graph's private pool, "
                f"while stream {roots} of cuda:{self.device} is being captured: run the captured "
                "work on the capturing stream (genesis.cuda.graph makes it current), or capture "
                "with capture_error_mode='relaxed'")
        return None

    def _take_from_oom_pools(self, size, kind, stream):
        """A block of `size` bytes from the free memory of a pool made with use_on_oom, or
        None: the last resort before OutOfMemoryError."""
        for pool in self._graph_pools.values():
            if pool.use_on_oom:
                pool._flush_all_caches()
                block = pool._pool.take(size, kind, stream)
                if block is not None:
                    return block
        return None

    def _defer_or_wait_for_capture(self, block):
        """free() of a block used on several streams: record its events now, or after every
        capture has ended (an event recorded during a capture cannot be queried)."""
        if self._root._capture_pools:
            block.state = PENDING
            self._root._wait_for_capture.append(block)
        else:
            self._defer(block)

    def graph_pools(self):
        """{pool id: (graphs using it, reserved bytes)} of the live private pools."""
        with self._lock:
            return {pool_id: (pool.use_count, sum(s.size for s in pool._segments.values()))
                    for pool_id, pool in self._graph_pools.items()}

    def _all_segments(self):
        """The device's segments and those of its pools."""
        segments = list(self._segments.values())
        for pool in self._graph_pools.values():
            segments += pool._segments.values()
        return segments
