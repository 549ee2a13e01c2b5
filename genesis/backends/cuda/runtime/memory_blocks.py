"""The caching allocator's structures: segments, blocks, and the global pool of free blocks.

The pool keeps the free blocks of each (pool, stream tag) sorted by (size, address), so best fit
is a bisection. A free block's tag is the one stream that may reuse it
without an event, or None for any stream; neighbours merge when one tag allows the other.
"""

from bisect import bisect_left, insort

SMALL_POOL, LARGE_POOL = 1, 2
SMALL_SIZE = 1 << 20  # requests up to this many bytes use the small pool
SMALL_SEGMENT = 2 << 20  # segment size of the small pool
MIN_BLOCK = 512  # small sizes round to this; a small-pool split leaves at least this much

FREE, ALLOCATED, CACHED, PENDING, MERGED = range(5)
STATE_NAMES = ("free", "allocated", "cached", "pending_events", "merged")


class Block:
    """A byte range of a segment.

    state: ALLOCATED (handed out), CACHED (in the stream-local cache), PENDING (freed, waiting
    for events on the streams that used it), FREE (in the best-fit index), MERGED (absorbed by
    a neighbour; a stale handle). `stream` is the stream of the current allocation; for a free
    block, the only stream that may reuse it without an event, or None for any stream.
    """

    __slots__ = ("ptr", "size", "requested_size", "stream", "segment", "prev", "next", "state",
                 "stream_uses", "event_count", "trace", "stat_delta")

    def __init__(self, ptr, size, stream, segment, prev=None, next=None):
        self.ptr = ptr
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.segment = segment
        self.prev = prev
        self.next = next
        self.state = FREE
        self.stream_uses = None
        self.event_count = 0
        self.trace = None
        self.stat_delta = 0  # what this allocation added to the block statistics (Stat.delta)

    def __repr__(self):
        return (f"Block(ptr={self.ptr:#x}, size={self.size}, requested={self.requested_size}, "
                f"stream={self.stream}, state={STATE_NAMES[self.state]})")


class Segment:
    """One driver allocation, covered exactly by a linked list of blocks starting at `head`;
    `owner` is the allocator (a device's, or one of its graph pools) that hands them out."""

    __slots__ = ("ptr", "size", "pool", "stream", "head", "owner")

    def __init__(self, ptr, size, pool, stream, owner=None):
        self.ptr = ptr
        self.size = size
        self.pool = pool
        self.stream = stream
        self.head = Block(ptr, size, stream, self)
        self.owner = owner

    def blocks(self):
        block = self.head
        while block is not None:
            yield block
            block = block.next

    def is_free(self):
        """True when no block is in use (free blocks may differ in stream, hence not merged)."""
        return all(block.state == FREE for block in self.blocks())

    def __repr__(self):
        return f"Segment(ptr={self.ptr:#x}, size={self.size}, pool={self.pool})"


def link_after(block, size):
    """Cut `block` to `size` bytes; the rest becomes a new block right after it (returned)."""
    rest = Block(block.ptr + size, block.size - size, block.stream, block.segment, block, block.next)
    if block.next is not None:
        block.next.prev = rest
    block.next = rest
    block.size = size
    return rest


def _absorb(low, high):
    """Merge `high` into its lower neighbour `low`."""
    low.size += high.size
    low.next = high.next
    if high.next is not None:
        high.next.prev = low
    high.state = MERGED
    return low


class GlobalPool:
    """The free blocks of every segment, by (pool, stream tag): best fit and coalescing.

    Each (pool, tag) holds a list of (size, address, block) kept sorted, so the best fit for a
    size is one bisection (lowest address among equal sizes).
    """

    __slots__ = ("indexes",)

    def __init__(self):
        self.indexes = {}  # (pool, stream or None) -> sorted [(size, ptr, block)]

    def add(self, block):
        key = (block.segment.pool, block.stream)
        entries = self.indexes.get(key)
        if entries is None:
            entries = self.indexes[key] = []
        insort(entries, (block.size, block.ptr, block))

    def remove(self, block):
        entries = self.indexes[(block.segment.pool, block.stream)]
        i = bisect_left(entries, (block.size, block.ptr))
        if i == len(entries) or entries[i][2] is not block:
            raise RuntimeError(f"caching allocator: {block!r} is not in its free index")
        del entries[i]

    def take(self, size, pool, stream):
        """Remove and return the best-fitting block for `stream` (its own or shared), or None;
        between equal sizes, the stream's own."""
        indexes = self.indexes
        probe = (size,)
        own = indexes.get((pool, stream))
        i = bisect_left(own, probe) if own else 0
        best = own[i] if own and i < len(own) else None
        shared = indexes.get((pool, None)) if stream is not None else None
        if shared:
            j = bisect_left(shared, probe)
            if j < len(shared) and (best is None or shared[j][0] < best[0]):
                return shared.pop(j)[2]
        if best is None:
            return None
        del own[i]
        return best[2]

    def split(self, block, size):
        """Mark a taken block in use; its tail beyond `size` goes back to the pool if big enough
        (small pool: 512 B or more; large pool: more than 1 MiB, as torch)."""
        block.state = ALLOCATED
        if block.size - size >= (MIN_BLOCK if block.segment.pool == SMALL_POOL else SMALL_SIZE + 1):
            self.add(link_after(block, size))

    def release(self, block):
        """Add `block`, merged with the free neighbours it may share a stream with."""
        tag = block.stream
        prev, nxt = block.prev, block.next
        if prev is not None and prev.state == FREE and (
                tag is None or prev.stream is None or prev.stream == tag):
            self.remove(prev)
            if tag is None:
                tag = prev.stream
            block = _absorb(prev, block)
        if nxt is not None and nxt.state == FREE and (
                tag is None or nxt.stream is None or nxt.stream == tag):
            self.remove(nxt)
            if tag is None:
                tag = nxt.stream
            block = _absorb(block, nxt)
        block.stream = tag
        block.state = FREE
        self.add(block)

    def discard(self, segment):
        """Forget the blocks of a segment that is going back to the driver (all free)."""
        for block in segment.blocks():
            self.remove(block)

    def blocks(self):
        return (entry[2] for entries in self.indexes.values() for entry in entries)

    def largest(self):
        return max((entries[-1][0] for entries in self.indexes.values() if entries), default=0)
