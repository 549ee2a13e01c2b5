"""Graph-private memory pools of the caching allocator, over the simulated driver: what a capture
allocates stays out of eager hands, is reused within the capture and by captures that share the
pool, and goes back to the driver once no graph or block uses it; nothing waits for the device
during a capture (the simulated driver refuses it, as the real one does)."""

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cuda_sim import SimDriver, check_invariants
from genesis.backends.cuda.runtime.graphs import CaptureError
from genesis.backends.cuda.runtime.memory import CachingAllocator
from genesis.backends.cuda.runtime.memory_config import MemoryConfig

MiB = 1 << 20
CAPTURE, SIDE, OTHER = 7, 9, 11  # stream handles


def _allocator(total=256 * MiB):
    sim = SimDriver(total=total)
    return sim, CachingAllocator(sim, config=MemoryConfig(segment_size=8 * MiB))


def _begin(allocator, sim, pool, stream=CAPTURE, strict=True):
    allocator.begin_allocate_to_pool(pool, stream, strict)
    sim.begin_capture(stream)


def _end(allocator, sim, stream=CAPTURE):
    sim.end_capture(stream)
    allocator.end_allocate_to_pool(stream)


def test_capture_allocates_from_the_pool_and_reuses_its_frees():
    sim, allocator = _allocator()
    eager = allocator.malloc(4096, CAPTURE)
    _begin(allocator, sim, (0, 1))
    a = allocator.malloc(4096, CAPTURE)
    assert a.segment.owner is not allocator and a.segment.owner.pool_id == (0, 1)
    allocator.free(a)
    b = allocator.malloc(4096, CAPTURE)
    assert b.ptr == a.ptr  # freed within the capture: reused in captured order
    _end(allocator, sim)
    allocator.free(eager)
    c = allocator.malloc(4096, CAPTURE)
    assert c.segment.owner is allocator and c.ptr == eager.ptr
    check_invariants(allocator, sim, [b, c])


def test_eager_allocations_never_get_pool_memory():
    sim, allocator = _allocator()
    _begin(allocator, sim, (0, 1))
    blocks = [allocator.malloc(n, CAPTURE) for n in (512, 3 * MiB, 40 * MiB)]
    _end(allocator, sim)
    for block in blocks:
        allocator.free(block)
    pool_spans = [(s.ptr, s.ptr + s.size) for s in allocator._graph_pools[(0, 1)]._segments.values()]
    for n in (512, 3 * MiB, 40 * MiB):
        block = allocator.malloc(n, CAPTURE)
        assert not any(lo <= block.ptr < hi for lo, hi in pool_spans)
    check_invariants(allocator, sim)


def test_a_shared_pool_serves_the_next_capture():
    sim, allocator = _allocator()
    _begin(allocator, sim, (0, 5))
    first = allocator.malloc(MiB // 2, CAPTURE)
    allocator.free(first)
    _end(allocator, sim)
    _begin(allocator, sim, (0, 5))
    second = allocator.malloc(MiB // 2, CAPTURE)
    _end(allocator, sim)
    assert second.ptr == first.ptr
    assert allocator.graph_pools()[(0, 5)][0] == 2


def test_pool_memory_returns_after_release_and_empty_cache():
    sim, allocator = _allocator()
    _begin(allocator, sim, (0, 1))
    output = allocator.malloc(5 * MiB, CAPTURE)
    scratch = allocator.malloc(MiB, CAPTURE)
    allocator.free(scratch)
    _end(allocator, sim)
    assert allocator.memory_stats()["graph_pool_reserved"] > 0
    allocator.release_pool((0, 1))
    allocator.empty_cache()
    assert allocator.memory_reserved() == output.segment.size  # the output keeps its segment
    allocator.free(output)
    allocator.empty_cache()
    assert allocator.memory_reserved() == 0 and sim.live == {} and not allocator.graph_pools()
    check_invariants(allocator, sim)


def test_a_stream_that_joins_the_capture_shares_its_pool():
    sim, allocator = _allocator()
    _begin(allocator, sim, (0, 1))
    sim.join_capture(SIDE, CAPTURE)
    block = allocator.malloc(4096, SIDE)
    assert block.segment.owner.pool_id == (0, 1)
    _end(allocator, sim)
    assert SIDE not in allocator._capture_pools


def test_strict_capture_refuses_allocations_outside_the_pool():
    sim, allocator = _allocator()
    _begin(allocator, sim, (0, 1))
    with pytest.raises(CaptureError, match="outside the graph's private pool"):
        allocator.malloc(4096, OTHER)
    with pytest.raises(CaptureError, match="empty_cache"):
        allocator.empty_cache()
    _end(allocator, sim)
    _begin(allocator, sim, (0, 2), strict=False)
    relaxed = allocator.malloc(4096, OTHER)
    assert relaxed.segment.owner is allocator
    _end(allocator, sim)


def test_no_event_is_queried_or_memory_freed_during_capture():
    sim, allocator = _allocator(total=64 * MiB)
    shared = allocator.malloc(4096, 0)
    allocator.record_stream(shared, OTHER)
    pending = allocator.malloc(4096, 0)
    allocator.record_stream(pending, OTHER)
    allocator.free(pending)  # an event is now pending: the next malloc would query it
    _begin(allocator, sim, (0, 1))
    allocator.free(shared)  # its events wait for the end of the capture
    assert sim.pending_events() == 2  # the first free: one event on each of its streams
    big = allocator.malloc(20 * MiB, CAPTURE)
    allocator.free(big)
    _end(allocator, sim)
    assert sim.pending_events() == 4
    sim.complete()
    allocator.malloc(4096, 0)
    check_invariants(allocator, sim)


STREAMS = st.sampled_from([0, CAPTURE, SIDE])
SIZES = st.one_of(st.integers(1, 4096), st.integers(1, 3 * MiB), st.integers(3 * MiB, 12 * MiB))


class PoolMachine(RuleBasedStateMachine):
    """Captures begin and end, eager and captured blocks come and go, pools are released and
    the cache emptied: blocks never overlap, pools hold only captured blocks, and the structures
    and statistics stay consistent."""

    def __init__(self):
        super().__init__()
        self.sim, self.allocator = _allocator(total=192 * MiB)
        self.live = []  # (block, captured)
        self.capturing = None
        self.pools_in_use = {}

    @rule(nbytes=SIZES, stream=STREAMS)
    def malloc(self, nbytes, stream):
        if self.capturing is not None and stream != CAPTURE:
            with pytest.raises(CaptureError):
                self.allocator.malloc(nbytes, stream)
            return
        block = self.allocator.malloc(nbytes, stream)
        captured = self.capturing is not None
        assert (block.segment.owner is not self.allocator) == captured
        self.live.append((block, captured))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data):
        block, _ = self.live.pop(data.draw(st.integers(0, len(self.live) - 1)))
        self.allocator.free(block)

    @precondition(lambda self: self.capturing is None)
    @rule(pool=st.sampled_from([(0, 1), (0, 2), (0, 3)]))
    def begin_capture(self, pool):
        _begin(self.allocator, self.sim, pool)
        self.capturing = pool

    @precondition(lambda self: self.capturing is not None)
    @rule()
    def end_capture(self):
        _end(self.allocator, self.sim)
        self.pools_in_use[self.capturing] = self.pools_in_use.get(self.capturing, 0) + 1
        self.capturing = None

    @precondition(lambda self: self.capturing is None and self.pools_in_use)
    @rule(data=st.data())
    def release(self, data):
        pool = data.draw(st.sampled_from(sorted(self.pools_in_use)))
        self.allocator.release_pool(pool)
        self.pools_in_use[pool] -= 1
        if not self.pools_in_use[pool]:
            del self.pools_in_use[pool]

    @precondition(lambda self: self.capturing is None)
    @rule()
    def empty_cache(self):
        self.sim.complete()
        self.allocator.empty_cache()
        for pool_id in self.allocator.graph_pools():
            assert pool_id in self.pools_in_use or any(
                captured and block.segment.owner.pool_id == pool_id
                for block, captured in self.live)

    @invariant()
    def consistent(self):
        check_invariants(self.allocator, self.sim, [block for block, _ in self.live])


PoolMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
test_pool_machine = PoolMachine.TestCase
