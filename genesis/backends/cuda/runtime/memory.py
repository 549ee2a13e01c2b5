"""Segment-block caching allocator for device memory: pure Python over a driver object.

Memory comes from the driver in segments: 2 MiB ones for requests up to 1 MiB (the small pool),
GENESIS_CUDA_SEGMENT_SIZE ones above (the large pool), or one of its own, rounded to 2 MiB, for a
request larger than half that (as torch's 20 MB segments serve requests under 10 MB: a big block
in a shared segment would strand its remainder). A request is rounded to 512 B, served by best
fit from a (size, address)-sorted index of free blocks (memory_blocks.GlobalPool), and the block
is split; a freed block coalesces with its free neighbours. In front of that global pool sits a
stream-local cache of recently freed blocks by exact size (bounded by GENESIS_CUDA_CACHE_SIZE,
least recently freed out first), so the usual malloc/free of a repeated size is a few dict and
list operations. When the small pool has no fit, the stream's cached small blocks are merged into
it before a new segment is requested. With varying sizes most small blocks go this way, and
holding them back until then keeps the small pool less fragmented than returning each at once
(the benchmark's varying trace: 4 MiB of small segments, not 6), so the flush merges neighbouring
cached blocks itself and releases each run as one block. Of large blocks the cache keeps one per
stream, the last freed, and hands it out only to the next large request if that has the same
size: any other large request or free first returns it to the pool. Keeping more, or keeping it
past a miss, changes which free space later requests get (reused old positions instead of best
fit in the coalesced pool) and cost memory: a transformer step's peak reserved memory was 7-14%
higher. While reserved memory is within a segment of the cap nothing is cached (there, every
merge counts: 10x fewer OOMs in the benchmark's memory-pressure traces).

Stream safety follows torch's caching allocator. A free block carries the stream that last used
it and is reused only on that stream, whose ordering makes reuse safe. A block also used on other
streams (`record_stream`) gets an event recorded on every stream that used it when freed; once
all have completed (polled on each allocation), it is free for any stream. Entirely free segments
go back to the driver on `empty_cache()` or when a request cannot be met otherwise; after that,
OutOfMemoryError.

The driver object provides mem_alloc(nbytes) -> ptr, mem_free(ptr), mem_get_info() -> (free,
total), event_create(), event_record(event, stream), event_query(event) -> bool (completed),
event_synchronize(event), event_destroy(event), stream_capture_info(stream) -> (capturing,
capture id), and the attribute DriverOutOfMemory: the exception type mem_alloc raises when the
device is full. Streams are hashable handles (ints). CUDA graphs allocate from private pools
(memory_pools.py).
Freed or merged Block objects belong to the allocator again: callers drop them after free().
"""

import collections
import concurrent.futures
import dataclasses
import sys
import threading

from .memory_blocks import (ALLOCATED, CACHED, LARGE_POOL, MERGED, MIN_BLOCK, PENDING, SMALL_POOL,
                            SMALL_SEGMENT, SMALL_SIZE, Block, GlobalPool, Segment, link_after)
from .memory_config import LARGE_ROUND, MemoryConfig, parse_option, parse_size
from .graphs import CaptureError
from .memory_pools import GraphPoolsMixin
from .memory_report import ReportingMixin, synchronized
from .memory_stats import (BLOCK_POOL_SHIFT, FIELD_BITS, ONE_BLOCK, MemoryEvent, MemoryStats,
                           format_bytes)

_UNBOUNDED = sys.maxsize
_ROUND_UP, _ROUND_MASK = MIN_BLOCK - 1, -MIN_BLOCK  # round_size(n) = (n + _ROUND_UP) & _ROUND_MASK


class OutOfMemoryError(RuntimeError):
    """No memory for a request, even after the allocator returned its unused cache to the driver."""


def round_size(nbytes):
    """Bytes a request occupies: the next multiple of 512."""
    return (nbytes + _ROUND_UP) & _ROUND_MASK


def segment_sizes(size, pool, segment_size):
    """Segment sizes to try for a block of `size` bytes: the pool's usual one, then the smallest."""
    if pool == SMALL_POOL:
        return (SMALL_SEGMENT, size) if size < SMALL_SEGMENT else (SMALL_SEGMENT,)
    exact = (size + LARGE_ROUND - 1) // LARGE_ROUND * LARGE_ROUND
    return (segment_size, exact) if exact <= segment_size // 2 else (exact,)


def _groups_up_to(sizes, limit):
    """Consecutive runs of `sizes` (each at most `limit`) whose sums stay within `limit`."""
    groups = []
    for size in sizes:
        if groups and sum(groups[-1]) + size <= limit:
            groups[-1].append(size)
        else:
            groups.append([size])
    return groups


class CachingAllocator(ReportingMixin, GraphPoolsMixin):
    """The device memory manager of one GPU; thread-safe.

    A graph's private pool (memory_pools.py) is a CachingAllocator too, made with `parent`: it
    shares the device allocator's lock, statistics and cap, and owns its own segments."""

    def __init__(self, driver, device=0, config=None, parent=None):
        self._driver = driver
        self.device = device
        self._lock = threading.Lock() if parent is None else parent._lock
        self._segments = {}  # base address -> Segment
        self._pool = GlobalPool()
        self._small_cache = {}  # stream -> {size: [blocks]}: the stream-local level
        self._large_cache = {}  # stream -> its last freed large block (see the docstring)
        self._lru = {}  # the cached blocks (oldest first) -> their size in the caches
        self._cached_bytes = 0
        self._pending = {}  # stream -> deque of (event, block), in record order
        self._idle_events = []
        self._stats = MemoryStats() if parent is None else parent._stats
        self._block_stats = self._stats.blocks
        self._stats_on = True
        self._notices = []
        self._callback = None
        self._notify_threshold = _UNBOUNDED
        self._executor = None
        self._total = driver.mem_get_info()[1] if parent is None else parent._total
        self._init_pools(parent)
        self._apply(MemoryConfig.from_env() if config is None else config)

    @property
    def config(self):
        return self._config

    def _apply(self, config):
        self._config = config
        self._cap = int(config.memory_fraction * self._total)
        self._update_pressure()
        blocks, nbytes = config.cache_size
        self._max_cached_blocks = _UNBOUNDED if blocks is None else blocks
        self._max_cached_bytes = _UNBOUNDED if nbytes is None else nbytes
        self._debug = config.debug
        if config.enable_stats and not self._stats_on:
            self._recount()
        self._stats_on = config.enable_stats
        self._shrink_cache()
        if not config.caching:  # what the caches and free segments hold goes back at once
            self._flush_all_caches()
            if not self._root._capture_pools:
                self._release_free_segments()

    # Allocation and free: the hot path.

    def malloc(self, nbytes, stream=0):
        """A block of at least `nbytes` bytes for use on `stream` (ptr 0 when nbytes is 0)."""
        if nbytes <= 0:
            return self._empty_block(nbytes, stream)
        if self._routed:
            pool = self._routed_pool(stream)
            if pool is not None:
                return pool.malloc(nbytes, stream)
        size = (nbytes + _ROUND_UP) & _ROUND_MASK  # round_size, inlined
        lock = self._lock
        lock.acquire()  # not `with`: acquire/release cost half as much
        try:
            by_size = self._small_cache.get(stream) if size <= SMALL_SIZE else None
            blocks = by_size.get(size) if by_size else None
            if blocks:
                block = blocks.pop()
            elif size > SMALL_SIZE and self._lru.get(self._large_cache.get(stream)) == size:
                block = self._large_cache.pop(stream)
            else:
                block = None
            if block is None:
                if self._pending and not self._root._capture_pools:
                    self._process_events()
                if size > SMALL_SIZE:
                    block = self._take(size, nbytes, stream)
                else:  # _take's small case, inlined
                    block = self._pool.take(size, SMALL_POOL, stream)
                    if block is None:
                        block = self._take_on_miss(size, nbytes, stream)
                    else:
                        self._stats.pool_hits += 1
                block.stream = stream
                block.requested_size = nbytes  # _label, inlined
                change = block.size | nbytes << FIELD_BITS | ONE_BLOCK
                block.stat_delta = change = change | change << BLOCK_POOL_SHIFT[block.segment.pool]
            else:
                del self._lru[block]
                self._cached_bytes -= block.size
                self._stats.stream_cache_hits += 1
                if block.requested_size != nbytes:  # else its figures are those of last time
                    self._label(block, nbytes)
                block.state = ALLOCATED
                change = block.stat_delta
            if self._debug:
                block.trace = self._capture_trace()
            if self._stats_on:  # self._block_stats.add(change), inlined
                stats = self._block_stats
                current = stats.current = stats.current + change
                stats.allocated += change
                guard = stats.guard
                if (stats.peak - current) & guard != guard:
                    stats.raise_peak()
            if nbytes >= self._notify_threshold:
                self._notify("large_alloc", nbytes, stream)
        finally:
            lock.release()
            if self._notices:
                self._dispatch_notices()
        return block

    @staticmethod
    def _label(block, nbytes):
        """Record the request a block serves and what it adds to the block statistics."""
        block.requested_size = nbytes
        change = block.size | nbytes << FIELD_BITS | ONE_BLOCK  # Stat.delta, inlined
        block.stat_delta = change | change << BLOCK_POOL_SHIFT[block.segment.pool]

    def _hand_out(self, block, nbytes, stream, trace):
        """malloc's bookkeeping, for allocate_batch."""
        block.state = ALLOCATED
        block.stream = stream
        block.trace = trace
        self._label(block, nbytes)
        if self._stats_on:
            self._block_stats.add(block.stat_delta)
        if nbytes >= self._notify_threshold:
            self._notify("large_alloc", nbytes, stream)

    @staticmethod
    def _empty_block(nbytes, stream):
        if nbytes < 0:
            raise ValueError(f"malloc: negative size {nbytes}")
        block = Block(0, 0, stream, None)
        block.state = ALLOCATED
        return block

    def free(self, block):
        """Give `block` back; it is reusable on its stream now, elsewhere once its events complete."""
        segment = block.segment
        if segment is None:
            return
        if segment.owner is not self:
            return segment.owner.free(block)
        lock = self._lock
        lock.acquire()
        try:
            if block.state != ALLOCATED:
                raise RuntimeError(f"free: {block!r} is not allocated (freed twice, or a stale "
                                   "handle)")
            if self._stats_on:
                self._block_stats.current -= block.stat_delta
            block.trace = None
            if block.stream_uses:
                self._defer_or_wait_for_capture(block)
            elif self._near_cap:
                self._pool.release(block)
                if not self._config.caching:
                    self._release_if_unused(segment)
            elif block.size <= SMALL_SIZE and len(self._lru) < self._max_cached_blocks:
                size = block.size  # _cache_block's usual case, inlined
                by_size = self._small_cache.get(block.stream)
                if by_size is None:
                    by_size = self._small_cache[block.stream] = {}
                blocks = by_size.get(size)
                if blocks is None:
                    by_size[size] = [block]
                else:
                    blocks.append(block)
                block.state = CACHED
                self._lru[block] = size
                self._cached_bytes += size
                if self._cached_bytes > self._max_cached_bytes:
                    self._shrink_cache()
            elif block.size <= SMALL_SIZE:
                self._cache_block(block, block.size)  # the cache is full: the oldest leaves
            else:  # it serves the next request of its own rounded size
                self._cache_block(block, (block.requested_size + _ROUND_UP) & _ROUND_MASK)
        finally:
            lock.release()

    def record_stream(self, block, stream):
        """Mark `block` as used on `stream` too (torch's Tensor.record_stream)."""
        if block.segment is None:
            return
        if block.segment.owner is not self:
            return block.segment.owner.record_stream(block, stream)
        with self._lock:
            if block.state != ALLOCATED:
                raise RuntimeError(f"record_stream: {block!r} is not allocated")
            if stream != block.stream:
                if block.stream_uses is None:
                    block.stream_uses = set()
                block.stream_uses.add(stream)

    # The stream-local cache (level 1).

    def _cache_block(self, block, size):
        """Keep a freed block for the next request of `size` (rounded) bytes on its stream."""
        if size > SMALL_SIZE:
            cached = self._large_cache.get(block.stream)
            if cached is not None:  # _flush_large's work, the dict entry replaced below
                self._uncache(cached)
            self._large_cache[block.stream] = block
        elif block.size > SMALL_SIZE:  # a batch's last piece, with a large slack: no cache fits
            self._pool.release(block)
            return
        else:
            by_size = self._small_cache.get(block.stream)
            if by_size is None:
                by_size = self._small_cache[block.stream] = {}
            blocks = by_size.get(size)
            if blocks is None:
                blocks = by_size[size] = []
            blocks.append(block)
        block.state = CACHED
        lru = self._lru
        lru[block] = size
        self._cached_bytes += block.size
        if len(lru) > self._max_cached_blocks or self._cached_bytes > self._max_cached_bytes:
            self._shrink_cache()

    def _shrink_cache(self):
        """Move the oldest cached blocks to the global pool until the cache is within bounds."""
        lru = self._lru
        while lru and (len(lru) > self._max_cached_blocks
                       or self._cached_bytes > self._max_cached_bytes):
            block = next(iter(lru))
            size = lru.pop(block)
            if size > SMALL_SIZE:
                del self._large_cache[block.stream]
            else:
                self._small_cache[block.stream][size].remove(block)
            self._cached_bytes -= block.size
            self._pool.release(block)

    def _flush_cache(self, stream):
        """Move `stream`'s cached small blocks to the global pool. Neighbours among them merge
        here, each run of them going to the pool as one block: as releasing them one by one
        would leave them, for a fraction of the work (a stream caches every small block it
        frees, and with varying sizes most are flushed, often next to each other)."""
        by_size = self._small_cache.pop(stream, None)
        if not by_size:
            return
        lru, runs, flushed = self._lru, [], 0
        for blocks in by_size.values():
            for block in blocks:
                del lru[block]
                flushed += block.size
                prev = block.prev
                if not (prev is not None and prev.state == CACHED and prev.stream == stream
                        and prev.size <= SMALL_SIZE):
                    runs.append(block)  # the first of its run: the next ones of it are too
        self._cached_bytes -= flushed
        spare = self._pool.spare
        for block in runs:
            nxt = block.next
            while (nxt is not None and nxt.state == CACHED and nxt.stream == stream
                   and nxt.size <= SMALL_SIZE):  # not a large cached block of a carved region
                block.size += nxt.size
                nxt.state = MERGED
                spare.append(nxt)
                nxt = nxt.next
            block.next = nxt
            if nxt is not None:
                nxt.prev = block
            self._pool.release(block)

    def _flush_large(self, stream):
        """Move `stream`'s cached large block to the global pool."""
        self._uncache(self._large_cache.pop(stream))

    def _uncache(self, block):
        """Move one cached `block`, out of the caches' books, to the global pool."""
        del self._lru[block]
        self._cached_bytes -= block.size
        self._pool.release(block)

    def _flush_all_caches(self):
        for stream in list(self._small_cache):
            self._flush_cache(stream)
        for stream in list(self._large_cache):
            self._flush_large(stream)

    # Level 2: the global pool, new segments, reclaiming.

    def _take(self, size, nbytes, stream):
        """A block of `size` bytes (split off the best fit) usable on `stream`, from the pool or
        a new segment.

        A large request first returns the stream's cached large block to the pool, so the pool
        holds them coalesced (as if never cached) for the best fit and before any new segment;
        a small one does so only when the small pool has no fit."""
        if size <= SMALL_SIZE:
            block = self._pool.take(size, SMALL_POOL, stream)
        else:
            cached = self._large_cache.pop(stream, None)
            if cached is not None:  # _flush_large's work, on the entry already popped
                self._uncache(cached)
            block = self._pool.take(size, LARGE_POOL, stream)
        if block is None:
            return self._take_on_miss(size, nbytes, stream)
        self._stats.pool_hits += 1
        return block

    def _take_on_miss(self, size, nbytes, stream):
        """_take when the pool has no fit: the stream's cached small blocks, else a new segment,
        else whatever reclaiming frees."""
        pool = SMALL_POOL if size <= SMALL_SIZE else LARGE_POOL
        if pool == SMALL_POOL and self._small_cache.get(stream):
            self._flush_cache(stream)
            block = self._pool.take(size, pool, stream)
            if block is not None:
                self._stats.pool_hits += 1
                return block
        if self._new_segment(size, pool, stream, smallest=False):
            block = self._pool.take(size, pool, stream)
        else:
            block = self._reclaim(size, nbytes, pool, stream)
        self._stats.cache_misses += 1  # (not counted when it raised OutOfMemoryError)
        return block

    def _new_segment(self, size, pool, stream, smallest=True):
        """Add a new segment of the pool's usual size (or, with `smallest`, of the smallest size
        that holds `size`) to the pool as one free block; False when the cap or the driver
        refuses."""
        sizes = segment_sizes(size, pool, self._config.segment_size)
        for seg_size in sizes if smallest else sizes[:1]:
            if self._stats.reserved() + seg_size > self._cap:
                continue
            try:
                ptr = self._driver.mem_alloc(seg_size)
            except self._driver.DriverOutOfMemory:
                continue
            segment = self._segments[ptr] = Segment(ptr, seg_size, pool, stream, self)
            self._pool.add(segment.head)
            self._stats.on_segment(pool, seg_size, True)
            self._update_pressure()
            self._notify("segment_alloc", seg_size, stream)
            return True
        return False

    def _reclaim(self, size, nbytes, pool, stream):
        """Wait for pending frees, flush the caches, return free segments, retry; else OOM."""
        self._stats.num_alloc_retries += 1
        self._notify("alloc_retry", nbytes, stream)
        capturing = bool(self._root._capture_pools)  # no event waits or frees during capture
        if not capturing:
            self._synchronize_events()
        self._flush_all_caches()
        block = self._pool.take(size, pool, stream)
        if block is None:
            if not capturing:
                self._release_free_segments()
            if self._new_segment(size, pool, stream):
                block = self._pool.take(size, pool, stream)
        if block is None:
            block = self._take_from_oom_pools(size, pool, stream)
        if block is None:
            self._stats.num_ooms += 1
            error = OutOfMemoryError(self._oom_message(nbytes))
            self._notify("oom", nbytes, stream)
            raise error
        return block

    def _oom_message(self, nbytes):
        free, total = self._driver.mem_get_info()
        self._recount_if_stale()
        stats = self._stats
        return (f"CUDA out of memory on device {self.device}. Tried to allocate "
                f"{format_bytes(nbytes)}. Allocated: {format_bytes(stats.allocated())}, "
                f"reserved: {format_bytes(stats.reserved())}, free (driver): "
                f"{format_bytes(free)} of {format_bytes(total)}, cap: {format_bytes(self._cap)} "
                f"(memory fraction {self._config.memory_fraction:g}). Free tensors, or raise the "
                "cap with set_memory_fraction / GENESIS_CUDA_MEMORY_FRACTION.")

    def _update_pressure(self):
        """Near the cap (another segment of the usual size would not fit), or caching off: a
        freed block goes straight to the pool."""
        self._near_cap = (not self._config.caching
                          or self._stats.reserved() + self._config.segment_size > self._cap)

    def _release_free_segments(self):
        for segment in [s for s in self._segments.values() if s.is_free()]:
            self._release_segment(segment)

    def _release_if_unused(self, segment):
        """With caching off: give `segment` back once it is all free (never during a capture)."""
        if segment.is_free() and not self._root._capture_pools:
            self._release_segment(segment)

    def _release_segment(self, segment):
        """Give entirely free `segment` back to the driver."""
        self._pool.discard(segment)
        self._driver.mem_free(segment.ptr)
        del self._segments[segment.ptr]
        self._stats.on_segment(segment.pool, segment.size, False)
        self._update_pressure()
        self._notify("segment_free", segment.size, segment.stream)

    # Cross-stream frees: events.

    def _defer(self, block):
        streams = block.stream_uses | {block.stream}
        block.stream_uses = None
        block.state = PENDING
        block.event_count = len(streams)
        for stream in streams:
            event = self._idle_events.pop() if self._idle_events else self._driver.event_create()
            self._driver.event_record(event, stream)
            self._pending.setdefault(stream, collections.deque()).append((event, block))

    def _process_events(self):
        """Release the blocks whose events have all completed (each stream's queue in order)."""
        for stream in list(self._pending):
            queue = self._pending[stream]
            while queue and self._driver.event_query(queue[0][0]):
                event, block = queue.popleft()
                self._idle_events.append(event)
                block.event_count -= 1
                if block.event_count == 0:
                    block.stream = None
                    self._pool.release(block)
            if not queue:
                del self._pending[stream]

    def _synchronize_events(self):
        for queue in self._pending.values():
            for event, _ in queue:
                self._driver.event_synchronize(event)
        self._process_events()

    # Bulk operations.

    @synchronized
    def empty_cache(self):
        """Return every entirely free segment to the driver (after pending frees complete)."""
        if self._capture_pools:
            raise CaptureError("empty_cache is not permitted while a CUDA graph is being "
                               "captured")
        self._synchronize_events()
        self._flush_all_caches()
        self._release_free_segments()
        self._release_unused_pools()

    @synchronized
    def warmup_cache(self, sizes, counts, stream=0):
        """Reserve `counts[i]` blocks of `sizes[i]` bytes ahead of use: small ones fill the
        stream-local cache, large ones wait in the global pool."""
        self._warmup(list(zip(sizes, counts, strict=True)), stream)

    def _warmup(self, pairs, stream):
        if not self._config.enable_warmup:
            return
        if any(nbytes < 0 or count < 0 for nbytes, count in pairs):
            raise ValueError(f"warmup_cache: negative size or count in {pairs}")
        sizes = [round_size(nbytes) for nbytes, count in pairs if nbytes for _ in range(count)]
        small = [n for n in sizes if n <= SMALL_SIZE]
        large = sum(n for n in sizes if n > SMALL_SIZE)
        groups = _groups_up_to(small, SMALL_SIZE) + ([[large]] if large else [])
        pieces = []
        try:
            for group in groups:
                pieces += self._carve(group, stream)
        finally:  # only now: a cached block would be flushed by the next carve
            for block, size in zip(pieces, [n for group in groups for n in group]):
                if size > SMALL_SIZE or self._near_cap:
                    self._pool.release(block)  # all the large sizes together: one block
                else:
                    self._cache_block(block, size)

    @synchronized
    def allocate_batch(self, sizes, stream=0):
        """Blocks for many sizes at once, carved from one contiguous region."""
        sizes = list(sizes)
        if any(n < 0 for n in sizes):
            raise ValueError(f"allocate_batch: negative size in {sizes}")
        nonzero = [n for n in sizes if n > 0]
        pieces = iter(self._carve([round_size(n) for n in nonzero], stream) if nonzero else ())
        trace = self._capture_trace() if self._debug else None
        blocks = []
        for n in sizes:
            block = next(pieces) if n else self._empty_block(0, stream)
            if n:
                self._hand_out(block, n, stream, trace)
            blocks.append(block)
        self._stats.pool_hits += max(len(nonzero) - 1, 0)
        return blocks

    def _carve(self, sizes, stream):
        """Consecutive blocks of the given (rounded) sizes from one block; the last takes the slack."""
        if self._pending and not self._root._capture_pools:
            self._process_events()
        total = sum(sizes)
        block = self._take(round_size(total), total, stream)
        pieces = []
        for size in sizes[:-1]:
            pieces.append(block)
            block = link_after(block, size)
        pieces.append(block)
        for piece in pieces:
            piece.stream = stream
            piece.state = ALLOCATED
            piece.requested_size = 0  # unlabelled: its stat_delta is stale (see malloc)
        return pieces

    def allocate_async(self, nbytes, stream=0):
        """A concurrent.futures.Future of malloc(nbytes, stream), run on the allocator's threads."""
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self._config.async_workers, thread_name_prefix=f"genesis-cuda{self.device}-alloc")
        return self._executor.submit(self.malloc, nbytes, stream)

    def close(self):
        """Stop the async threads and destroy the idle events."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        with self._lock:
            while self._idle_events:
                self._driver.event_destroy(self._idle_events.pop())

    # Configuration.

    @synchronized
    def configure(self, options):
        """configure_memory_manager({...}): the MemoryConfig options, plus warmup_sizes pairs."""
        options = dict(options)
        warmup = [(parse_size(n), int(c)) for n, c in options.pop("warmup_sizes", ())]
        self._apply(self._config.updated(options))
        self._warmup(warmup, 0)

    @synchronized
    def set_memory_fraction(self, fraction):
        """Cap reserved memory at `fraction` of the device's total memory (a hard limit)."""
        value = parse_option("memory_fraction", fraction, f"set_memory_fraction({fraction!r})")
        self._apply(dataclasses.replace(self._config, memory_fraction=value))

    def enable_memory_debugging(self, enabled=True):
        """Record a bounded stack trace of every allocation, for dump_allocation_trace()."""
        self.configure({"debug": enabled})

    def set_memory_callback(self, fn, threshold=None):
        """Call fn(MemoryEvent) on OOM, retries, segment changes, and allocations >= threshold.

        The function runs after the allocator's lock is released, in the allocating thread, so it
        may query statistics; fn=None removes it. `threshold` is bytes or a size like "1GB".
        """
        limit = _UNBOUNDED if threshold is None else parse_size(threshold)
        with self._lock:
            self._callback = fn
            self._notify_threshold = _UNBOUNDED if fn is None else limit

    def _notify(self, kind, nbytes, stream):
        if self._callback is not None:
            stats = self._stats
            self._notices.append(MemoryEvent(kind, nbytes, stream, stats.allocated(),
                                             stats.reserved(), self.device))

    def _dispatch_notices(self):
        with self._lock:
            notices, self._notices = self._notices, []
            callback = self._callback
        for event in notices if callback is not None else ():
            callback(event)
