"""Statistics of the caching allocator: counters, memory_stats() keys, the summary table.

Each quantity is tracked as torch's caching allocator does: current, peak, allocated (summed
increases) and freed (summed decreases), for all blocks and per pool ("small_pool" for requests
up to 1 MiB, "large_pool" above), giving keys such as "allocated_bytes.all.current".
"""

import collections

SCOPES = ("all", "small_pool", "large_pool")
SMALL_POOL, LARGE_POOL = 1, 2  # indices into a Stat's lists; 0 is "all"
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
    """current / peak / allocated / freed of one quantity, for all blocks and per pool.

    Only the per-pool current and allocated figures and the peaks are counted (the hot path
    stays short); "all" is their sum and freed is allocated - current (+ current at the last
    reset of the accumulated figures).
    """

    __slots__ = ("current", "peak", "allocated", "_freed_base")

    def __init__(self):
        self.current = [0, 0, 0]  # index 0 unused: "all" is derived
        self.peak = [0, 0, 0]
        self.allocated = [0, 0, 0]
        self._freed_base = [0, 0, 0]

    def increase(self, pool, n):
        current = self.current
        current[pool] += n
        self.allocated[pool] += n
        peak = self.peak
        if current[pool] > peak[pool]:
            peak[pool] = current[pool]
        if current[1] + current[2] > peak[0]:
            peak[0] = current[1] + current[2]

    def decrease(self, pool, n):
        self.current[pool] -= n

    def now(self):
        """The current figure over all pools."""
        return self.current[1] + self.current[2]

    def value(self, metric, scope):
        if metric == "peak":
            return self.peak[scope]
        if scope == 0:
            return self.value(metric, 1) + self.value(metric, 2)
        if metric == "freed":
            return self.allocated[scope] - self.current[scope] + self._freed_base[scope]
        return getattr(self, metric)[scope]

    def set_current(self, values):
        """Current figures recounted from the blocks (small, large); the change counts as
        allocated or freed."""
        for pool, n in zip((1, 2), values):
            self.allocated[pool] += max(n - self.current[pool], 0)
            self.current[pool] = n
            self.peak[pool] = max(self.peak[pool], n)
        self.peak[0] = max(self.peak[0], sum(values))

    def reset_peak(self):
        self.peak[1:] = self.current[1:]
        self.peak[0] = self.current[1] + self.current[2]

    def reset_accumulated(self):
        self.allocated[:] = [0, 0, 0]
        self._freed_base[:] = self.current

    def items(self, name):
        for i, scope in enumerate(SCOPES):
            for metric in METRICS:
                yield f"{name}.{scope}.{metric}", self.value(metric, i)


class MemoryStats:
    """All counters of one allocator; the allocator updates them under its lock."""

    FAMILIES = ("allocated_bytes", "requested_bytes", "allocation", "reserved_bytes", "segment")
    COUNTERS = ("stream_cache_hits", "pool_hits", "cache_misses", "num_alloc_retries", "num_ooms")
    __slots__ = FAMILIES + COUNTERS

    def __init__(self):
        for family in self.FAMILIES:
            setattr(self, family, Stat())
        self.reset_accumulated()

    def on_malloc(self, pool, size, requested):
        self.allocated_bytes.increase(pool, size)
        self.requested_bytes.increase(pool, requested)
        self.allocation.increase(pool, 1)

    def on_free(self, pool, size, requested):
        self.allocated_bytes.decrease(pool, size)
        self.requested_bytes.decrease(pool, requested)
        self.allocation.decrease(pool, 1)

    def on_segment(self, pool, size, added):
        """A segment obtained from (added) or returned to the driver."""
        change = Stat.increase if added else Stat.decrease
        change(self.reserved_bytes, pool, size)
        change(self.segment, pool, 1)

    def reset_peak(self):
        for family in self.FAMILIES:
            getattr(self, family).reset_peak()

    def reset_accumulated(self):
        for family in self.FAMILIES:
            getattr(self, family).reset_accumulated()
        for counter in self.COUNTERS:
            setattr(self, counter, 0)

    def as_dict(self):
        """The torch-named keys and the counters (the allocator adds the derived figures)."""
        out = {}
        for family in self.FAMILIES:
            out.update(getattr(self, family).items(family))
        out["num_alloc_retries"] = self.num_alloc_retries
        out["num_ooms"] = self.num_ooms
        out["num_device_alloc"] = self.segment.value("allocated", 0)
        out["num_device_free"] = self.segment.value("freed", 0)
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
