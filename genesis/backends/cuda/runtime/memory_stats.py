"""Statistics of the caching allocator: counters, memory_stats() keys, the summary table.

Each quantity is tracked as torch's caching allocator does: current, peak, allocated (summed
increases) and freed (summed decreases), for all blocks and per pool ("small_pool" for requests
up to 1 MiB, "large_pool" above), giving keys such as "allocated_bytes.all.current".
"""

import collections

from .memory_blocks import LARGE_POOL, SMALL_POOL  # noqa: F401 (the pool indexes, re-exported)

SCOPES = ("all", "small_pool", "large_pool")  # scope 0, then the pools (SMALL_POOL, LARGE_POOL)
METRICS = ("current", "peak", "allocated", "freed")

MemoryEvent = collections.namedtuple(
    "MemoryEvent", "kind nbytes stream allocated reserved device")
MemoryEvent.__doc__ = """What set_memory_callback's function receives.

kind: "oom" (an allocation is about to raise OutOfMemoryError), "alloc_retry" (caches were
flushed to satisfy a request), "large_alloc" (an allocation at or above the callback threshold),
"segment_alloc" / "segment_free" (device memory obtained from or returned to the driver).
nbytes: the request (oom, alloc_retry, large_alloc) or the segment size. allocated, reserved:
the allocator's bytes after the event. device: the allocator's device index."""


FIELD_BITS = 96  # bits per packed figure: no current value or running sum comes near 2**95
FIELD = (1 << FIELD_BITS) - 1


class Stat:
    """current / peak / allocated / freed of some quantities that change together, per pool.

    Each of current, peak and allocated (summed increases) is one int packing a FIELD_BITS-wide
    field per (scope, quantity), field scope * len(names) + q, so that the allocator's hot path
    changes a pool's quantities and their "all" sums with one addition (`delta`) and finds out
    whether any peak was passed with one subtraction (`passed_peak`): `peak` keeps the top bit of
    every field set (`guard`, never reached by a figure), and where current <= peak the field of
    peak - current keeps it. freed is allocated - current (+ current at the last reset of the
    accumulated figures).
    """

    __slots__ = ("names", "current", "peak", "allocated", "_freed_base", "guard", "_shifts")

    def __init__(self, names):
        self.names = names
        fields = len(SCOPES) * len(names)
        self.guard = sum(1 << (FIELD_BITS * (i + 1) - 1) for i in range(fields))
        self._shifts = [FIELD_BITS * len(names) * pool for pool in range(len(SCOPES))]
        self.current = self.allocated = self._freed_base = 0
        self.peak = self.guard

    def delta(self, pool, values):
        """The packed change of `values` (one per quantity, >= 0) in `pool` and in "all"."""
        change = 0
        for q, n in enumerate(values):
            change |= n << (FIELD_BITS * q)
        return change | change << self._shifts[pool]

    def passed_peak(self):
        """True when some current field is above its peak."""
        return (self.peak - self.current) & self.guard != self.guard

    def raise_peak(self):
        """Set every peak field below its current one to the current one."""
        guard = self.guard
        below = ((self.peak - self.current) & guard) ^ guard
        mask = (below >> (FIELD_BITS - 1)) * FIELD
        self.peak = (self.peak & ~mask) | (self.current & mask) | guard

    def add(self, change):
        """Apply a packed increase (`delta`), raising the peaks it passes."""
        self.current += change
        self.allocated += change
        if self.passed_peak():
            self.raise_peak()

    def increase(self, pool, values):
        self.add(self.delta(pool, values))

    def decrease(self, pool, values):
        self.current -= self.delta(pool, values)

    def _field(self, packed, scope, q):
        return packed >> (FIELD_BITS * (scope * len(self.names) + q)) & FIELD

    def now(self, q=0):
        """The current figure of quantity `q` over all pools."""
        return self._field(self.current, 0, q)

    def value(self, metric, scope, q):
        if metric == "freed":
            field = self._field
            return (field(self.allocated, scope, q) - field(self.current, scope, q)
                    + field(self._freed_base, scope, q))
        if metric == "peak":
            return self._field(self.peak, scope, q) & FIELD >> 1  # without the guard bit
        return self._field(getattr(self, metric), scope, q)

    def set_current(self, pool, values):
        """`pool`'s current figures recounted; a rise counts as allocated, a drop as freed."""
        old = self.current
        rises = [max(n - self._field(old, pool, q), 0) for q, n in enumerate(values)]
        drops = [max(self._field(old, pool, q) - n, 0) for q, n in enumerate(values)]
        self.current = old + self.delta(pool, rises) - self.delta(pool, drops)
        self.allocated += self.delta(pool, rises)
        self.raise_peak()

    def reset_peak(self):
        self.peak = self.current | self.guard

    def reset_accumulated(self):
        self.allocated = 0
        self._freed_base = self.current

    def items(self):
        for q, name in enumerate(self.names):
            for i, scope in enumerate(SCOPES):
                for metric in METRICS:
                    yield f"{name}.{scope}.{metric}", self.value(metric, i, q)


BLOCK_QUANTITIES = ("allocated_bytes", "requested_bytes", "allocation")
# Stat.delta(pool, (size, requested, 1)) of the block figures, as the allocator inlines it:
# e = size | requested << FIELD_BITS | ONE_BLOCK; e | e << BLOCK_POOL_SHIFT[pool].
ONE_BLOCK = 1 << (2 * FIELD_BITS)
BLOCK_POOL_SHIFT = tuple(FIELD_BITS * len(BLOCK_QUANTITIES) * scope for scope in range(len(SCOPES)))


class MemoryStats:
    """All counters of one allocator; the allocator updates them under its lock (the blocks'
    figures inline, through Stat.delta, Stat.passed_peak and Stat.raise_peak)."""

    COUNTERS = ("stream_cache_hits", "pool_hits", "cache_misses", "num_alloc_retries", "num_ooms")
    __slots__ = ("blocks", "segments") + COUNTERS

    def __init__(self):
        self.blocks = Stat(BLOCK_QUANTITIES)
        self.segments = Stat(("reserved_bytes", "segment"))
        self.reset_accumulated()

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
    if stats.get("graph_pools"):
        cells.append(f"Graph pools: {stats['graph_pools']}")
        cells.append(f"Graph pool reserved: {format_bytes(stats['graph_pool_reserved'])}")
    for i in range(0, len(cells), 3):
        lines.append("| " + "  ".join(c.ljust(24) for c in cells[i:i + 3]).ljust(width - 4) + " |")
    lines.append(heavy)
    return "\n".join(lines)
