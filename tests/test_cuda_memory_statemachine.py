"""Random allocate / free / record_stream / event / empty_cache sequences on the caching allocator.

After every step: no two live blocks overlap, every segment is tiled exactly by its blocks, free
blocks are coalesced and indexed, and the statistics add up (check_invariants).
"""

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cuda_sim import SimDriver, check_invariants
from genesis.backends.cuda.runtime.memory import (CachingAllocator, OutOfMemoryError, round_size,
                                                  segment_sizes)
from genesis.backends.cuda.runtime.memory_config import MemoryConfig
from genesis.backends.cuda.runtime.memory_stats import LARGE_POOL, SMALL_POOL

MiB = 1 << 20
STREAMS = st.sampled_from([0, 1, 2])
SIZES = st.one_of(st.integers(0, 4096), st.integers(1, 3 * MiB), st.integers(3 * MiB, 20 * MiB))


class AllocatorMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.sim = SimDriver(total=64 * MiB)
        self.allocator = CachingAllocator(self.sim, config=MemoryConfig(
            segment_size=8 * MiB, cache_size=(4, 16 * MiB), memory_fraction=0.75))
        self.live = []

    def _oom_is_legitimate(self, nbytes):
        """Even the smallest segment that could hold the request would pass the cap."""
        size = round_size(nbytes)
        pool = SMALL_POOL if size <= MiB else LARGE_POOL
        smallest = segment_sizes(size, pool, self.allocator.config.segment_size)[-1]
        cap = self.allocator.memory_stats()["memory_cap"]
        assert self.allocator.memory_reserved() + smallest > cap

    @rule(nbytes=SIZES, stream=STREAMS)
    def malloc(self, nbytes, stream):
        try:
            block = self.allocator.malloc(nbytes, stream)
        except OutOfMemoryError:
            self._oom_is_legitimate(nbytes)
            return
        assert block.size >= nbytes and block.stream == stream
        self.live.append(block)

    @rule(sizes=st.lists(st.integers(0, 2 * MiB), max_size=5), stream=STREAMS)
    def allocate_batch(self, sizes, stream):
        try:
            blocks = self.allocator.allocate_batch(sizes, stream)
        except OutOfMemoryError:
            self._oom_is_legitimate(sum(round_size(n) for n in sizes if n))
            return
        assert [b.requested_size for b in blocks] == sizes
        self.live.extend(blocks)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data):
        self.allocator.free(self.live.pop(data.draw(st.integers(0, len(self.live) - 1))))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), stream=STREAMS)
    def record_stream(self, data, stream):
        self.allocator.record_stream(data.draw(st.sampled_from(self.live)), stream)

    @rule(stream=st.one_of(st.none(), STREAMS))
    def complete_events(self, stream):
        self.sim.complete(stream)

    @rule()
    def empty_cache(self):
        self.allocator.empty_cache()
        assert not any(s["allocated_size"] == 0 for s in self.allocator.memory_snapshot())
        assert self.sim.pending_events() == 0

    @rule(nbytes=st.integers(1, 2 * MiB), count=st.integers(0, 6), stream=STREAMS)
    def warmup(self, nbytes, count, stream):
        try:
            self.allocator.warmup_cache([nbytes], [count], stream)
        except OutOfMemoryError:
            self._oom_is_legitimate(round_size(nbytes) * count)

    @rule(enabled=st.booleans())
    def toggle_stats(self, enabled):
        self.allocator.configure({"enable_stats": enabled})

    @invariant()
    def consistent(self):
        check_invariants(self.allocator, self.sim, self.live)

    def teardown(self):
        for block in self.live:
            self.allocator.free(block)
        self.allocator.empty_cache()
        assert self.sim.used == 0 and self.allocator.memory_allocated() == 0
        self.allocator.close()


AllocatorMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40,
                                              deadline=None)
TestAllocatorMachine = AllocatorMachine.TestCase
