"""The data structures of the caching allocator: segments, blocks, and the best-fit index."""

import bisect

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
                 "stream_uses", "event_count", "trace")

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

    def __repr__(self):
        return (f"Block(ptr={self.ptr:#x}, size={self.size}, requested={self.requested_size}, "
                f"stream={self.stream}, state={STATE_NAMES[self.state]})")


class Segment:
    """One driver allocation, covered exactly by a linked list of blocks starting at `head`."""

    __slots__ = ("ptr", "size", "pool", "stream", "head")

    def __init__(self, ptr, size, pool, stream):
        self.ptr = ptr
        self.size = size
        self.pool = pool
        self.stream = stream
        self.head = Block(ptr, size, stream, self)

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


class FreeIndex:
    """Free blocks of one pool and stream tag sorted by (size, address): bisect finds best fit."""

    __slots__ = ("entries",)

    def __init__(self):
        self.entries = []

    def __len__(self):
        return len(self.entries)

    def add(self, block):
        bisect.insort(self.entries, (block.size, block.ptr, block))

    def remove(self, block):
        i = bisect.bisect_left(self.entries, (block.size, block.ptr))
        if i == len(self.entries) or self.entries[i][2] is not block:
            raise RuntimeError(f"caching allocator: {block!r} is not in its free index")
        del self.entries[i]

    def best_fit(self, size):
        """The smallest block of at least `size` bytes (lowest address among equals), or None."""
        i = bisect.bisect_left(self.entries, (size,))
        return self.entries[i][2] if i < len(self.entries) else None

    def largest(self):
        return self.entries[-1][2].size if self.entries else 0
