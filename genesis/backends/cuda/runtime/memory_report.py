"""The caching allocator's reporting side: statistics, summary, snapshot, allocation traces.

`ReportingMixin` is part of CachingAllocator (memory.py); it reads the allocator's structures
under its lock. memory_stats() holds torch.cuda.memory_stats keys ("allocated_bytes.all.current"
and the rest, see memory_stats.py) and summary figures: allocated, cached (reserved minus
allocated), reserved, free (the driver's free device memory), total, memory_cap, peak_allocated,
peak_reserved, segments, active_blocks, total_allocations, total_freed, cache_hits (served
without the driver), cache_misses (a new segment was needed), stream_cache_hits,
stream_cached_blocks/bytes, cache_hit_rate, fragmentation (= fragmentation_ratio: 1 - the largest
free block over all free bytes) and efficiency_score (allocated over reserved bytes).
"""

import functools
import os
import sys
import traceback

from .memory_blocks import ALLOCATED, LARGE_POOL, SMALL_POOL, STATE_NAMES
from .memory_stats import format_bytes, format_summary

_ALLOCATOR_FILES = {os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
                    for name in ("memory.py", "memory_report.py")}


def synchronized(method):
    """Run under the allocator's lock; deliver the callback events it queued once unlocked."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            with self._lock:
                return method(self, *args, **kwargs)
        finally:
            if self._notices:
                self._dispatch_notices()
    return wrapper


class ReportingMixin:
    """Statistics and debugging views of a CachingAllocator."""

    def _recount(self):
        """Set the current block figures from the blocks themselves (statistics were off)."""
        fresh = {SMALL_POOL: [0, 0, 0], LARGE_POOL: [0, 0, 0]}
        for segment in self._all_segments():
            counts = fresh[segment.pool]
            for block in segment.blocks():
                if block.state == ALLOCATED:
                    counts[0] += block.size
                    counts[1] += block.requested_size
                    counts[2] += 1
        for pool, values in fresh.items():
            self._stats.blocks.set_current(pool, values)

    def _recount_if_stale(self):
        if not self._stats_on:
            self._recount()

    @synchronized
    def memory_allocated(self):
        self._recount_if_stale()
        return self._stats.allocated()

    @synchronized
    def memory_reserved(self):
        return self._stats.reserved()

    @synchronized
    def max_memory_allocated(self):
        self._recount_if_stale()
        return self._stats.blocks.value("peak", 0, 0)

    @synchronized
    def max_memory_reserved(self):
        return self._stats.segments.value("peak", 0, 0)

    @synchronized
    def reset_peak_memory_stats(self):
        self._recount_if_stale()
        self._stats.reset_peak()

    @synchronized
    def reset_accumulated_memory_stats(self):
        self._stats.reset_accumulated()

    @synchronized
    def memory_stats(self):
        """torch.cuda.memory_stats keys plus the summary figures (see module docstring)."""
        self._recount_if_stale()
        out = self._stats.as_dict()
        allocated, reserved = out["allocated_bytes.all.current"], out["reserved_bytes.all.current"]
        inactive = self._cached_bytes + sum(b.size for b in self._pool.blocks())
        largest = max(self._pool.largest(), max((b.size for b in self._lru), default=0))
        hits = self._stats.stream_cache_hits + self._stats.pool_hits
        lookups = hits + self._stats.cache_misses
        out.update(
            allocated=allocated, reserved=reserved, cached=reserved - allocated,
            free=self._driver.mem_get_info()[0], total=self._total, memory_cap=self._cap,
            peak_allocated=out["allocated_bytes.all.peak"],
            peak_reserved=out["reserved_bytes.all.peak"],
            segments=len(self._segments), active_blocks=out["allocation.all.current"],
            total_allocations=out["allocation.all.allocated"],
            total_freed=out["allocation.all.freed"], cache_hits=hits,
            cache_misses=self._stats.cache_misses,
            stream_cache_hits=self._stats.stream_cache_hits,
            stream_cached_blocks=len(self._lru), stream_cached_bytes=self._cached_bytes,
            cache_hit_rate=hits / lookups if lookups else 0.0,
            fragmentation=1.0 - largest / inactive if inactive else 0.0,
            efficiency_score=allocated / reserved if reserved else 1.0,
            graph_pools=len(self._graph_pools),
            graph_pool_reserved=sum(s.size for p in self._graph_pools.values()
                                    for s in p._segments.values()))
        out["fragmentation_ratio"] = out["fragmentation"]
        return out

    def memory_summary(self):
        """A readable table of memory_stats(), like torch.cuda.memory_summary()."""
        return format_summary(self.memory_stats(), f"Genesis CUDA memory summary, device {self.device}")

    @synchronized
    def memory_snapshot(self):
        """Every segment with its blocks (addresses, sizes, states), as torch.cuda.memory_snapshot."""
        return [{"device": self.device, "address": s.ptr, "total_size": s.size, "stream": s.stream,
                 "segment_type": "small" if s.pool == SMALL_POOL else "large",
                 "segment_pool_id": s.owner.pool_id,
                 "allocated_size": sum(b.size for b in s.blocks() if b.state == ALLOCATED),
                 "blocks": [{"address": b.ptr, "size": b.size, "requested_size": b.requested_size,
                             "state": STATE_NAMES[b.state], "stream": b.stream}
                            for b in s.blocks()]}
                for s in sorted(self._all_segments(), key=lambda s: s.ptr)]

    def _capture_trace(self):
        """The caller's stack (innermost frames outside the allocator), at most debug_max_frames."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _ALLOCATOR_FILES:
            frame = frame.f_back
        return traceback.extract_stack(frame, limit=self._config.debug_max_frames)

    def dump_allocation_trace(self, file=None):
        """List the live blocks, largest first, with their allocation stacks (leak hunting)."""
        with self._lock:
            live = sorted((b for s in self._all_segments() for b in s.blocks()
                           if b.state == ALLOCATED), key=lambda b: (-b.size, b.ptr))
        lines = [f"{len(live)} live blocks on device {self.device}, "
                 f"{format_bytes(sum(b.size for b in live))} allocated"]
        for b in live:
            lines.append(f"{b.ptr:#x}  {format_bytes(b.size)} (requested {b.requested_size} B) "
                         f"on stream {b.stream}")
            if b.trace is None:
                lines.append("    (no stack: allocated while debug mode was off)")
            else:
                lines.extend("  " + entry.rstrip("\n").replace("\n", "\n  ")
                             for entry in traceback.format_list(b.trace))
        text = "\n".join(lines)
        print(text, file=sys.stdout if file is None else file)
        return text
