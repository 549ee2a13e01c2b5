"""torch.cuda's memory names beyond the allocator statistics of genesis.cuda: MemPool and
use_mem_pool (a thread's allocations routed to a private pool), raw allocations from the caching
allocator for other libraries, switching its caching off, the statistics as nested dicts, and
the pinned host memory's statistics."""

import collections
import contextlib

from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import graphs as _graphs
from ..backends.cuda.runtime import pinned as _pinned
from ..backends.cuda.runtime import stream as _streams


def _allocator(device=None):
    return _devices.get_context(_devices.device_index(device)).allocator


def _initialized():
    return bool(_devices.initialized_contexts())


class MemPool:
    """A private pool of the caching allocator on the device current when it is made: the
    allocations made inside `with use_mem_pool(pool):` come from it, and its memory serves
    nothing else. A CUDA graph can capture into it: `graph(g, pool=pool.id)`.

    Args:
        allocator: a pluggable allocator in PyTorch; Genesis has none, so only None.
        use_on_oom (bool): requests outside the pool that would run out of memory may take the
            pool's free memory.
        no_split (bool): not supported: the pool splits blocks as the device's memory does.
    """

    def __init__(self, allocator=None, use_on_oom=False, no_split=False):
        if allocator is not None:
            raise NotImplementedError("genesis: MemPool takes no allocator (Genesis has no "
                                      "pluggable allocators); leave allocator=None")
        if no_split:
            raise NotImplementedError("genesis: MemPool(no_split=True) is not supported; its "
                                      "pool splits blocks as the device's memory does")
        self._id = _graphs.new_pool_id()
        self._allocator = _allocator()
        self._allocator.retain_pool(self._id, use_on_oom)

    @property
    def id(self):
        """The pool's id, a tuple of two ints (graph_pool_handle's form)."""
        return self._id

    @property
    def allocator(self):
        return None

    def use_count(self):
        """How many hold the pool: the MemPool itself, each use_mem_pool under way, graphs."""
        return self._allocator.graph_pools().get(self._id, (0, 0))[0]

    def snapshot(self, include_traces=True):
        """memory_snapshot()'s segments of this pool (Genesis's snapshot has no traces)."""
        return [s for s in self._allocator.memory_snapshot() if s["segment_pool_id"] == self._id]

    def __del__(self):
        try:
            self._allocator.release_pool(self._id)
        except Exception:  # never made (no CUDA), or interpreter shutdown
            pass


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    """Inside the block, this thread's allocations on `device` (the current one by default), on
    every stream, come from MemPool `pool`; other threads' do not (a backward pass run by
    another thread neither)."""
    allocator = _allocator(device)
    allocator.begin_allocate_thread_to_pool(pool.id)
    try:
        yield
    finally:
        allocator.end_allocate_thread_to_pool(pool.id)
        allocator.release_pool(pool.id)


_raw_blocks = {}  # address -> (allocator, block) of caching_allocator_alloc's allocations


def caching_allocator_alloc(size, device=None, stream=None):
    """`size` bytes from the caching allocator, for use on `stream` (a Stream or a handle; the
    device's current stream by default), to hand to another library.

    Returns:
        The address (an int; 0 for size 0); give it back with `caching_allocator_delete`.
    """
    index = _devices.device_index(device)
    if stream is None:
        stream = _streams.current_stream(index)
    if isinstance(stream, _streams.Stream):
        stream = stream.cuda_stream
    if not isinstance(stream, int):
        raise TypeError("Invalid type for stream argument, must be `torch.cuda.Stream` or `int` "
                        "representing a pointer to an existing stream")
    allocator = _allocator(index)
    block = allocator.malloc(size, stream)
    if block.ptr:
        _raw_blocks[block.ptr] = (allocator, block)
    return block.ptr


def caching_allocator_delete(mem_ptr):
    """Give back memory from `caching_allocator_alloc` (its device and stream are known)."""
    if not mem_ptr:
        return
    entry = _raw_blocks.pop(mem_ptr, None)
    if entry is None:
        raise RuntimeError(f"invalid device pointer: {mem_ptr:#x}")
    allocator, block = entry
    allocator.free(block)


def caching_allocator_enable(value=True):
    """Switch the caching allocator's caching on or off on every initialised device (a no-op
    before CUDA is initialised, as PyTorch's). Off, freed memory goes back to the driver as soon
    as the segment holding it is all free: for tools that watch device allocations."""
    for ctx in _devices.initialized_contexts():
        ctx.allocator.configure({"caching": value})


def _caching_enabled():
    return all(ctx.allocator.config.caching for ctx in _devices.initialized_contexts())


@contextlib.contextmanager
def caching_allocator_disabled():
    """`with caching_allocator_disabled():` runs the block with caching off (see
    caching_allocator_enable), then restores it."""
    previous = _caching_enabled()
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(previous)


def get_allocator_backend():
    """The allocator in use: "native", Genesis's own caching allocator (PyTorch's name for its
    own; Genesis has no cudaMallocAsync backend)."""
    return "native"


def _nested(flat):
    """{"a.b.c": v} as {"a": {"b": {"c": v}}}."""
    nested = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def _flat(nested, prefix=""):
    """{"a": {"b": v}} as [("a.b", v)]."""
    items = []
    for key, value in nested.items():
        name = prefix + key
        items += _flat(value, name + ".") if isinstance(value, dict) else [(name, value)]
    return items


def memory_stats_as_nested_dict(device=None):
    """memory_stats() nested at its dots ({"allocated_bytes": {"all": {"current": ...}}}); {}
    before CUDA is initialised."""
    if not _initialized():
        return {}
    return _nested(_allocator(device).memory_stats())


def host_memory_stats_as_nested_dict():
    """The pinned host memory's statistics, nested; {} before CUDA is initialised."""
    if not _initialized():
        return {}
    return _pinned.stats.as_nested_dict()


def host_memory_stats():
    """The pinned host memory's statistics, by sorted dotted key: "allocations",
    "allocated_bytes" (buffers held), "active_requests", "active_bytes" (those in use, not idle
    in the staging cache), each .current/.peak/.allocated/.freed; "num_host_alloc",
    "num_host_free", and "host_alloc_time"/"host_free_time" in microseconds
    (.total/.max/.min/.count/.avg)."""
    return collections.OrderedDict(sorted(_flat(host_memory_stats_as_nested_dict())))


def reset_accumulated_host_memory_stats():
    """Zero the host statistics' totals (allocated, freed), call counts and call times."""
    _pinned.stats.reset_accumulated()


def reset_peak_host_memory_stats():
    """Set the host statistics' peaks to their current values."""
    _pinned.stats.reset_peak()
