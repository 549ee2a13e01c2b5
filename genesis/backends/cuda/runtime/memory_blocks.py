"""The caching allocator's structures: segments, blocks, and the global pool of free blocks.

The pool keeps the free blocks of each (pool, stream tag) sorted by (size, address), so best fit
is a bisection; a split's tail, and a block merged with a free neighbour, take over the entry of
the block they come from where the order allows, so that most allocations and frees move no
entries. A free block's tag is the one stream that may reuse it without an event, or None for
any stream; neighbours merge when one tag allows the other.
"""

from bisect import bisect_left

SMALL_POOL, LARGE_POOL = 1, 2
SMALL_SIZE = 1 << 20  # requests up to this many bytes use the small pool
SMALL_SEGMENT = 2 << 20  # segment size of the small pool
MIN_BLOCK = 512  # sizes round to this
# The smallest remainder a split leaves, by pool: 512 B in the small pool, more than 1 MiB in the
# large one (as torch: a smaller tail stays with the block, which is handed out whole).
SPLIT_MIN = (None, MIN_BLOCK, SMALL_SIZE + 1)

FREE, ALLOCATED, CACHED, PENDING, MERGED = range(5)
STATE_NAMES = ("free", "allocated", "cached", "pending_events", "merged")


class Block:
    """A byte range of a segment.

    state: ALLOCATED (handed out), CACHED (in the stream-local cache), PENDING (freed, waiting
    for events on the streams that used it), FREE (in the best-fit index), MERGED (absorbed by
    a neighbour; a stale handle, until a split reuses the object). `stream` is the stream of the
    current allocation; for a free block, the only stream that may reuse it without an event, or
    None for any stream.
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


KEY_SHIFT = 64  # a free block's index key: size << KEY_SHIFT | address
ADDRESS_MASK = (1 << KEY_SHIFT) - 1


class FreeIndex:
    """The free blocks of one (pool, stream tag), sorted by (size, address), so the best fit for
    a size is one bisection (lowest address among equal sizes). `keys` holds each block's
    size << KEY_SHIFT | address (ints compare several times faster than tuples) and `blocks` the
    blocks, in the same order."""

    __slots__ = ("keys", "blocks")

    def __init__(self):
        self.keys = []
        self.blocks = []

    def insert(self, block):
        key = block.size << KEY_SHIFT | block.ptr
        i = bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.blocks.insert(i, block)

    def remove(self, block):
        self.remove_key(block.size << KEY_SHIFT | block.ptr)

    def remove_key(self, key):
        i = self.position(key)
        del self.keys[i], self.blocks[i]

    def replace(self, old_key, block):
        """Put `block`, whose key is larger, in place of the entry at `old_key` (moved up only
        if the new key passes the next one)."""
        keys, blocks = self.keys, self.blocks
        i = bisect_left(keys, old_key)  # position, inlined
        if i == len(keys) or keys[i] != old_key:
            self.position(old_key)  # raises
        key = block.size << KEY_SHIFT | block.ptr
        if i + 1 < len(keys) and keys[i + 1] < key:
            del keys[i], blocks[i]
            i = bisect_left(keys, key, i)
            keys.insert(i, key)
            blocks.insert(i, block)
        else:
            keys[i] = key
            blocks[i] = block

    def position(self, key):
        """Where `key` is; RuntimeError if no block has it (the pool is corrupt)."""
        keys = self.keys
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            raise RuntimeError(f"caching allocator: no free block of {key >> KEY_SHIFT} B at "
                               f"{key & ADDRESS_MASK:#x} in its index")
        return i

    def entries(self):
        """[(size, address, block)] in index order."""
        return [(key >> KEY_SHIFT, block.ptr, block) for key, block in zip(self.keys, self.blocks)]


class GlobalPool:
    """The free blocks of every segment, by pool and stream tag: best fit, splitting, coalescing.

    Each (pool, tag) has a FreeIndex; they hang off one dict per pool, `by_pool[pool]`
    (tag -> FreeIndex), so the hot path finds them without building a key.
    """

    __slots__ = ("by_pool", "spare")

    def __init__(self):
        self.by_pool = (None, {}, {})  # [SMALL_POOL], [LARGE_POOL]: tag -> FreeIndex
        self.spare = []  # MERGED blocks, reused as split tails (a new Block costs 4x as much)

    def indexes(self):
        """((pool, tag), [(size, ptr, block)] in index order) of every (pool, tag) that had free
        blocks."""
        return [((pool, tag), index.entries()) for pool in (SMALL_POOL, LARGE_POOL)
                for tag, index in self.by_pool[pool].items()]

    def add(self, block):
        by_tag = self.by_pool[block.segment.pool]
        index = by_tag.get(block.stream)
        if index is None:
            index = by_tag[block.stream] = FreeIndex()
        index.insert(block)

    def remove(self, block):
        self.by_pool[block.segment.pool][block.stream].remove(block)

    def take(self, size, pool, stream):
        """Remove the best-fitting block for `stream` (its own or shared; between equal sizes,
        the stream's own), split it to `size` bytes and return it in use; None if none fits."""
        by_tag = self.by_pool[pool]
        probe = size << KEY_SHIFT
        index = by_tag.get(stream)
        keys = index.keys if index is not None else ()
        i = bisect_left(keys, probe)
        shared = by_tag.get(None)
        if shared is not None and shared is not index and shared.keys:
            j = bisect_left(shared.keys, probe)
            if j < len(shared.keys) and (
                    i == len(keys) or shared.keys[j] >> KEY_SHIFT < keys[i] >> KEY_SHIFT):
                index, keys, i = shared, shared.keys, j
        if i == len(keys):
            return None
        blocks = index.blocks
        block = blocks[i]
        block.state = ALLOCATED
        rest = block.size - size
        if rest < SPLIT_MIN[pool]:
            del keys[i], blocks[i]
            return block
        nxt = block.next  # link_after, inlined, on a merged Block where there is one
        spare = self.spare
        if spare:
            tail = spare.pop()
            tail.ptr, tail.size, tail.stream = block.ptr + size, rest, block.stream
            tail.segment, tail.prev, tail.next = block.segment, block, nxt
            tail.state, tail.requested_size = FREE, 0
        else:
            tail = Block(block.ptr + size, rest, block.stream, block.segment, block, nxt)
        if nxt is not None:
            nxt.prev = tail
        block.next = tail
        block.size = size
        key = rest << KEY_SHIFT | tail.ptr  # the tail keeps the block's tag
        if i and keys[i - 1] > key:  # it sorts lower than the block did
            del keys[i], blocks[i]
            i = bisect_left(keys, key, 0, i)
            keys.insert(i, key)
            blocks.insert(i, tail)
        else:  # in the block's place: when the tail is the larger part, always
            keys[i] = key
            blocks[i] = tail
        return block

    def release(self, block):
        """Add `block`, merged with the free neighbours it may share a stream with (a merged
        neighbour's Block is left MERGED, a stale handle). The result takes over the index entry
        of the neighbour it merged first, where that has its tag."""
        tag = block.stream
        by_tag = self.by_pool[block.segment.pool]
        prev, nxt = block.prev, block.next
        index = None  # the index of the first merged neighbour, its tag and its key then
        if prev is not None and prev.state == FREE and (
                tag is None or prev.stream is None or prev.stream == tag):
            if tag is None:
                tag = prev.stream
            index, old_tag = by_tag[prev.stream], prev.stream
            old_key = prev.size << KEY_SHIFT | prev.ptr
            prev.size += block.size
            prev.next = nxt
            if nxt is not None:
                nxt.prev = prev
            block.state = MERGED
            self.spare.append(block)
            block = prev
        if nxt is not None and nxt.state == FREE and (
                tag is None or nxt.stream is None or nxt.stream == tag):
            if tag is None:
                tag = nxt.stream
            if index is None:
                index, old_tag = by_tag[nxt.stream], nxt.stream
                old_key = nxt.size << KEY_SHIFT | nxt.ptr
            else:
                by_tag[nxt.stream].remove(nxt)
            block.size += nxt.size
            after = block.next = nxt.next
            if after is not None:
                after.prev = block
            nxt.state = MERGED
            self.spare.append(nxt)
        block.stream = tag
        block.state = FREE
        if index is not None:
            if old_tag == tag:
                index.replace(old_key, block)
                return
            index.remove_key(old_key)
        index = by_tag.get(tag)
        if index is None:
            index = by_tag[tag] = FreeIndex()
        index.insert(block)

    def discard(self, segment):
        """Forget the blocks of a segment that is going back to the driver (all free)."""
        for block in segment.blocks():
            self.remove(block)
        self.spare.clear()  # (some may hold the segment)

    def blocks(self):
        return (block for by_tag in self.by_pool[1:] for index in by_tag.values()
                for block in index.blocks)

    def largest(self):
        return max((index.keys[-1] >> KEY_SHIFT for by_tag in self.by_pool[1:]
                    for index in by_tag.values() if index.keys), default=0)
