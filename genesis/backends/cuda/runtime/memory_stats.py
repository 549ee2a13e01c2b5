"""Statistics of the caching allocator: counters, memory_stats() keys, the summary table.

Each quantity is tracked as torch's caching allocator does: current, peak, allocated (summed
increases) and freed (summed decreases), for all blocks and per pool ("small_pool" for requests
up to 1 MiB, "large_pool" above), giving keys such as "allocated_bytes.all.current".
"""

import collections

from .memory_blocks import LARGE_POOL, SMALL_POOL

SCOPES = ("all", "small_pool", "large_pool")  # a Stat's lists are indexed by scope, pools 1, 2
METRICS = ("current", "peak", "allocated", "freed")

MemoryEvent = collections.namedtuple(
    "MemoryEvent", "kind nbytes stream allocated reserved device")
MemoryEvent.__doc__ = """What set_memory_callback's function receives.

kind: "oom" (an allocation is about to raise OutOfMemoryError), "alloc_retry" (caches were
flushed to satisfy a request), "large_alloc" (an allocation at or above the callback threshold),
"segment_alloc" / "segment_free" (device memory obtained from or returned to the driver).
nbytes: the request (oom, alloc_retry, large_alloc) or the segment size. allocated, reserved:
the allocator's bytes after the event. device: the allocator's device index."""


class Stat:
    """current / peak / allocated / freed of some quantities that change together, per pool.

    Lists are indexed [scope][quantity]. Only the pools' current and allocated figures and the
    peaks are counted; "all" is the pools' sum, and freed is allocated - current (+ current at
    the last reset of the accumulated figures).
    """

    __slots__ = ("names", "current", "peak", "allocated", "_freed_base")

    def __init__(self, names):
        self.names = names
        self.current, self.peak, self.allocated, self._freed_base = (
            [[0] * len(names) for _ in SCOPES] for _ in range(4))

    def increase(self, pool, deltas):
        """Add `deltas` (one per quantity) to `pool`'s figures and raise the peaks."""
        current, other = self.current[pool], self.current[3 - pool]
        allocated, peak, total_peak = self.allocated[pool], self.peak[pool], self.peak[0]
        for q, n in enumerate(deltas):
            current[q] += n
            allocated[q] += n
            peak[q] = max(peak[q], current[q])
            total_peak[q] = max(total_peak[q], current[q] + other[q])

    def decrease(self, pool, deltas):
        current = self.current[pool]
        for q, n in enumerate(deltas):
            current[q] -= n

    def now(self, q=0):
        """The current figure of quantity `q` over all pools."""
        return self.current[SMALL_POOL][q] + self.current[LARGE_POOL][q]

    def value(self, metric, scope, q):
        if metric == "peak":
            return self.peak[scope][q]
        if scope == 0:
            return self.value(metric, SMALL_POOL, q) + self.value(metric, LARGE_POOL, q)
        if metric == "freed":
            return (self.allocated[scope][q] - self.current[scope][q]
                    + self._freed_base[scope][q])
        return getattr(self, metric)[scope][q]

    def set_current(self, pool, values):
        """`pool`'s current figures recounted; a rise counts as allocated, a drop as freed."""
        for q, n in enumerate(values):
            self.allocated[pool][q] += max(n - self.current[pool][q], 0)
            self.current[pool][q] = n
            self.peak[pool][q] = max(self.peak[pool][q], n)
            self.peak[0][q] = max(self.peak[0][q], self.now(q))

    def reset_peak(self):
        for pool in (SMALL_POOL, LARGE_POOL):
            self.peak[pool][:] = self.current[pool]
        self.peak[0][:] = [self.now(q) for q in range(len(self.names))]

    def reset_accumulated(self):
        for pool in (SMALL_POOL, LARGE_POOL):
            self.allocated[pool][:] = [0] * len(self.names)
            self._freed_base[pool][:] = self.current[pool]

    def items(self):
        for q, name in enumerate(self.names):
            for i, scope in enumerate(SCOPES):
                for metric in METRICS:
                    yield f"{name}.{scope}.{metric}", self.value(metric, i, q)


class MemoryStats:
    """All counters of one allocator; the allocator updates them under its lock."""

    COUNTERS = ("stream_cache_hits", "pool_hits", "cache_misses", "num_alloc_retries", "num_ooms")
    __slots__ = ("blocks", "segments") + COUNTERS

    def __init__(self):
        self.blocks = Stat(("allocated_bytes", "requested_bytes", "allocation"))
        self.segments = Stat(("reserved_bytes", "segment"))
        self.reset_accumulated()

    def on_malloc(self, pool, size, requested):
        """The hot path: Stat.increase(pool, (size, requested, 1)) unrolled."""
        blocks = self.blocks
        current, other = blocks.current[pool], blocks.current[3 - pool]
        current[0] += size
        current[1] += requested
        current[2] += 1
        allocated = blocks.allocated[pool]
        allocated[0] += size
        allocated[1] += requested
        allocated[2] += 1
        peak = blocks.peak[pool]
        if current[0] > peak[0]:
            peak[0] = current[0]
        if current[1] > peak[1]:
            peak[1] = current[1]
        if current[2] > peak[2]:
            peak[2] = current[2]
        peak = blocks.peak[0]
        if current[0] + other[0] > peak[0]:
            peak[0] = current[0] + other[0]
        if current[1] + other[1] > peak[1]:
            peak[1] = current[1] + other[1]
        if current[2] + other[2] > peak[2]:
            peak[2] = current[2] + other[2]

    def on_free(self, pool, size, requested):
        current = self.blocks.current[pool]
        current[0] -= size
        current[1] -= requested
        current[2] -= 1

    def on_segment(self, pool, size, added):
        """A segment obtained from (added) or returned to the driver."""
        (self.segments.increase if added else self.segments.decrease)(pool, (size, 1))

    def allocated(self):
        return self.blocks.now(0)

    def reserved(self):
        return self.segments.now(0)

    def reset_peak(self):
        self.blocks.reset_peak()
        self.segments.reset_peak()

    def reset_accumulated(self):
        self.blocks.reset_accumulated()
        self.segments.reset_accumulated()
        for counter in self.COUNTERS:
            setattr(self, counter, 0)

    def as_dict(self):
        """The torch-named keys and the counters (the allocator adds the derived figures)."""
        out = dict(self.blocks.items())
        out.update(self.segments.items())
        out["num_alloc_retries"] = self.num_alloc_retries
        out["num_ooms"] = self.num_ooms
        out["num_device_alloc"] = self.segments.value("allocated", 0, 1)
        out["num_device_free"] = self.segments.value("freed", 0, 1)
        return out


def format_bytes(n):
    """Human-readable binary size: '512 B', '1.50 KiB', '3.00 GiB'."""
    if abs(n) < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"


_ROWS = (
    ("Allocated memory", "allocated_bytes", format_bytes),
    ("Requested memory", "requested_bytes", format_bytes),
    ("Reserved memory", "reserved_bytes", format_bytes),
    ("Allocations", "allocation", str),
    ("Segments", "segment", str),
)
_RATIOS = (("Cache hits", "cache_hits"), ("Cache misses", "cache_misses"),
           ("Stream-cache hits", "stream_cache_hits"), ("Alloc retries", "num_alloc_retries"),
           ("OOMs", "num_ooms"))
_PERCENT = (("Cache hit rate", "cache_hit_rate"), ("Fragmentation", "fragmentation"),
            ("Efficiency score", "efficiency_score"))


def format_summary(stats, title):
    """torch.cuda.memory_summary-like table of a memory_stats() dict."""
    row = "| {:<22}| {:>11} | {:>11} | {:>11} | {:>11} |".format
    width = len(row(*[""] * 5))
    rule, heavy = "|" + "-" * (width - 2) + "|", "|" + "=" * (width - 2) + "|"
    lines = [heavy, "| " + title.center(width - 4) + " |", rule,
             row("Metric", *(m.title() if m != "current" else "Cur Usage" for m in METRICS)),
             heavy]
    for label, family, fmt in _ROWS:
        for scope, name in zip(SCOPES, (label, "  from small pool", "  from large pool")):
            lines.append(row(name, *(fmt(stats[f"{family}.{scope}.{m}"]) for m in METRICS)))
        lines.append(rule)
    cells = [f"{label}: {stats[key]}" for label, key in _RATIOS]
    cells += [f"{label}: {stats[key]:.1%}" for label, key in _PERCENT]
    for i in range(0, len(cells), 3):
        lines.append("| " + "  ".join(c.ljust(24) for c in cells[i:i + 3]).ljust(width - 4) + " |")
    lines.append(heavy)
    return "\n".join(lines)
