"""The caching allocator's logic against a simulated driver (no GPU needed)."""

import concurrent.futures
import io
import pathlib
import sys
import threading

import numpy as np
import pytest

from cuda_sim import SimDriver, SimDriverError, check_invariants
from genesis.backends.cuda.runtime.memory import (CachingAllocator, OutOfMemoryError, round_size,
                                                  segment_sizes)
from genesis.backends.cuda.runtime.memory_config import MemoryConfig, parse_size
from genesis.backends.cuda.runtime.memory_stats import LARGE_POOL, METRICS, SMALL_POOL, Stat

MiB = 1 << 20


@pytest.fixture
def sim():
    return SimDriver(total=256 * MiB)


@pytest.fixture
def make(sim):
    """make(**config) -> an allocator over `sim` with those MemoryConfig settings."""
    made = []

    def factory(**config):
        allocator = CachingAllocator(sim, config=MemoryConfig(**config))
        made.append(allocator)
        return allocator
    yield factory
    for allocator in made:
        allocator.close()


def states(allocator):
    """{address: state} of every block."""
    return {b["address"]: b["state"] for s in allocator.memory_snapshot() for b in s["blocks"]}


@pytest.mark.parametrize("nbytes, expected", [
    (1, 512), (512, 512), (513, 1024), (MiB - 1, MiB), (MiB, MiB), (MiB + 1, MiB + 512),
    (5 * MiB, 5 * MiB)])
def test_round_size(nbytes, expected):
    assert round_size(nbytes) == expected


@pytest.mark.parametrize("size, pool, expected", [
    (512, SMALL_POOL, (2 * MiB, 512)), (MiB, SMALL_POOL, (2 * MiB, MiB)),
    (MiB + 512, LARGE_POOL, (20 * MiB, 2 * MiB)), (19 * MiB + 512, LARGE_POOL, (20 * MiB,)),
    (10 * MiB, LARGE_POOL, (20 * MiB, 10 * MiB)), (10 * MiB + 512, LARGE_POOL, (12 * MiB,)),
    (20 * MiB + 512, LARGE_POOL, (22 * MiB,))])
def test_segment_sizes(size, pool, expected):
    assert segment_sizes(size, pool, 20 * MiB) == expected


def test_zero_bytes(make, sim):
    a = make()
    block = a.malloc(0, stream=3)
    assert (block.ptr, block.size, block.stream) == (0, 0, 3)
    a.record_stream(block, 5)
    a.free(block)
    assert batch_sizes(a.allocate_batch([0])) == [0]
    assert a.memory_allocated() == a.memory_reserved() == sim.alloc_calls == 0
    with pytest.raises(ValueError, match="negative"):
        a.malloc(-1)


def batch_sizes(blocks):
    return [b.size for b in blocks]


def test_split_small_blocks_share_a_segment(make, sim):
    a = make()
    x, y = a.malloc(1000), a.malloc(3000)
    assert (x.size, y.size) == (1024, 3072)
    assert y.ptr == x.ptr + x.size and y.segment is x.segment
    assert sim.alloc_calls == 1 and a.memory_reserved() == 2 * MiB
    assert a.memory_allocated() == 4096
    check_invariants(a, sim, [x, y])


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (0, 2, 1), (1, 0, 2)])
def test_coalescing_restores_one_block(make, sim, order):
    a = make(cache_size=(0, None), segment_size=12 * MiB)
    blocks = [a.malloc(4 * MiB) for _ in range(3)]
    assert len({b.segment for b in blocks}) == 1
    for i in order:
        a.free(blocks[i])
        check_invariants(a, sim, [b for j, b in enumerate(blocks) if j not in order[:order.index(i) + 1]])
    assert list(states(a).values()) == ["free"]
    whole = a.malloc(12 * MiB)
    assert whole.ptr == blocks[0].ptr and sim.alloc_calls == 1


def test_best_fit_picks_the_smallest_hole(make, sim):
    a = make(cache_size=(0, None), segment_size=64 * MiB)
    sizes = [6, 2, 4, 2, 8, 2, 4, 2]
    blocks = [a.malloc(n * MiB) for n in sizes]
    holes = {n: b for n, b in zip(sizes, blocks) if n != 2}
    for b in holes.values():
        a.free(b)
    assert a.malloc(3 * MiB).ptr == holes[4].ptr  # the first of the two 4 MiB holes
    assert a.malloc(5 * MiB).ptr == holes[6].ptr
    assert a.malloc(7 * MiB).ptr == holes[8].ptr
    assert sim.alloc_calls == 1
    check_invariants(a, sim)


def test_every_request_gets_the_best_fit(make, sim, rng):
    """Random allocations and frees with the stream cache off: each request gets the smallest
    free block of its pool that holds it (the lowest address among equal sizes), split to the
    request unless the rest is below the pool's split minimum; the free-block indexes stay
    sorted as split tails and merged blocks take over entries (check_invariants)."""
    a = make(cache_size=(0, None), segment_size=8 * MiB)
    live = []
    for _ in range(300):
        if live and rng.random() < 0.45:
            a.free(live.pop(int(rng.integers(len(live)))))
            check_invariants(a, sim, live)
            continue
        nbytes = int(rng.integers(1, 3 * MiB) if rng.random() < 0.5 else rng.integers(1, 8192))
        size = round_size(nbytes)
        kind, split_min = ("small", 512) if size <= MiB else ("large", MiB + 1)
        free = sorted((b["size"], b["address"]) for s in a.memory_snapshot()
                      if s["segment_type"] == kind for b in s["blocks"] if b["state"] == "free")
        fits = [(n, ptr) for n, ptr in free if n >= size]
        block = a.malloc(nbytes)
        if fits:
            assert block.ptr == fits[0][1]
        assert size <= block.size < size + split_min
        live.append(block)
        check_invariants(a, sim, live)


def test_split_tails_and_merged_blocks_move_in_the_index(make, sim):
    a = make(cache_size=(0, None), segment_size=64 * MiB)
    blocks = [a.malloc(n * MiB) for n in (3, 2, 8, 2, 2, 2, 3, 2)]
    for i in (0, 2, 4, 6):
        a.free(blocks[i])  # free: 3, 8, 2 and 3 MiB, and the segment's tail
    x = a.malloc(6 * MiB)  # best fit: the 8 MiB hole; its 2 MiB tail sorts below the 3s
    assert x.ptr == blocks[2].ptr
    check_invariants(a, sim, [x] + [blocks[i] for i in (1, 3, 5, 7)])
    a.free(blocks[5])  # 2 + 2 + 3 MiB merge: the 2 MiB entry grows past both 3 MiB ones
    check_invariants(a, sim, [x] + [blocks[i] for i in (1, 3, 7)])
    assert a.malloc(7 * MiB).ptr == blocks[4].ptr


def test_a_cache_flush_merges_neighbouring_cached_blocks(make, sim):
    a = make()
    x = a.malloc(MiB)
    quarters = [a.malloc(MiB // 4) for _ in range(4)]  # the rest of x's 2 MiB segment
    for b in (x, quarters[0], quarters[1], quarters[3]):
        a.free(b)
    assert all(states(a)[b.ptr] == "cached" for b in (x, quarters[0], quarters[3]))
    y = a.malloc(MiB // 2)  # no pool fit: the cache is flushed, x and two quarters merged
    assert y.ptr == x.ptr and sim.alloc_calls == 1
    assert list(states(a).values()) == ["allocated", "free", "allocated", "free"]
    check_invariants(a, sim, [y, quarters[2]])


def test_a_cache_flush_keeps_a_cached_large_neighbour(make, sim):
    a = make()
    small, large = a.allocate_batch([1, MiB + 1])  # one region: neighbours in a large segment
    a.free(small)
    a.free(large)
    assert states(a)[small.ptr] == states(a)[large.ptr] == "cached"
    a.malloc(4096)  # a small-pool miss flushes the small cache, not the large block after it
    assert states(a)[small.ptr] == "free" and states(a)[large.ptr] == "cached"
    check_invariants(a, sim)


def test_pools_are_separate(make, sim):
    a = make(cache_size=(0, None))
    big = a.malloc(4 * MiB)
    a.free(big)
    small = a.malloc(4096)
    assert small.segment is not big.segment and small.segment.size == 2 * MiB
    types = sorted(s["segment_type"] for s in a.memory_snapshot())
    assert types == ["large", "small"]
    stats = a.memory_stats()
    assert stats["allocated_bytes.small_pool.current"] == 4096
    assert stats["allocated_bytes.large_pool.current"] == 0
    assert stats["allocated_bytes.large_pool.peak"] == 4 * MiB
    assert stats["reserved_bytes.small_pool.current"] == 2 * MiB


def test_request_above_half_the_segment_size_gets_its_own_segment(make, sim):
    a = make(segment_size=4 * MiB)
    block = a.malloc(9 * MiB + 1)
    assert block.size == block.segment.size == 10 * MiB
    assert a.malloc(MiB + 1).segment.size == 4 * MiB


def test_segment_shrinks_to_the_request_under_the_cap(make, sim):
    a = make(segment_size=64 * MiB, memory_fraction=0.125)  # cap: 32 MiB
    block = a.malloc(6 * MiB)
    assert block.segment.size == 6 * MiB


def test_stream_cache_returns_the_same_block(make, sim):
    a = make()
    x = a.malloc(4096, stream=1)
    a.free(x)
    assert a.malloc(4096, stream=1) is x
    assert a.memory_stats()["stream_cache_hits"] == 1 and sim.alloc_calls == 1


def test_free_block_not_reused_on_another_stream(make, sim):
    a = make()
    x = a.malloc(4096, stream=1)
    a.free(x)
    y = a.malloc(4096, stream=2)
    assert y.ptr != x.ptr
    check_invariants(a, sim, [y])


def test_record_stream_waits_for_every_stream(make, sim):
    a = make()
    x = a.malloc(4096, stream=1)
    ptr = x.ptr
    a.record_stream(x, 2)
    a.record_stream(x, 1)  # its own stream: nothing to add
    a.free(x)
    assert sim.pending_events() == 2
    held = [a.malloc(4096, stream=s) for s in (1, 3)]
    assert ptr not in {b.ptr for b in held}
    sim.complete(stream=2)
    held.append(a.malloc(4096, stream=3))
    assert ptr not in {b.ptr for b in held}  # stream 1's event is still pending
    check_invariants(a, sim, held)
    sim.complete(stream=1)
    reused = a.malloc(4096, stream=3)
    assert reused.ptr == ptr and reused.stream == 3
    check_invariants(a, sim, held + [reused])


def test_record_stream_on_a_freed_block_raises(make):
    a = make()
    x = a.malloc(100)
    a.free(x)
    with pytest.raises(RuntimeError, match="not allocated"):
        a.record_stream(x, 2)
    with pytest.raises(RuntimeError, match="not allocated"):
        a.free(x)


def test_empty_cache_waits_for_pending_frees(make, sim):
    a = make()
    x = a.malloc(4096, stream=1)
    a.record_stream(x, 2)
    a.free(x)
    a.empty_cache()
    assert a.memory_reserved() == sim.used == 0 and sim.pending_events() == 0
    check_invariants(a, sim, [])


def test_empty_cache_keeps_segments_in_use(make, sim):
    a = make(segment_size=8 * MiB)
    keep = a.malloc(MiB + 1)
    for n in (4096, 3 * MiB, 5 * MiB):
        a.free(a.malloc(n))
    a.empty_cache()
    assert a.memory_reserved() == 8 * MiB and len(sim.live) == 1
    assert sorted(states(a).values()) == ["allocated", "free"]
    check_invariants(a, sim, [keep])


@pytest.mark.parametrize("cache_size, kept", [((2, None), 2), ((None, 8192), 2), ((0, None), 0)])
def test_cache_bound_evicts_the_oldest(make, sim, cache_size, kept):
    a = make(cache_size=cache_size)
    blocks = [a.malloc(4096) for _ in range(4)]
    for b in blocks:
        a.free(b)
    stats = a.memory_stats()
    assert stats["stream_cached_blocks"] == kept
    cached = [b.ptr for b in blocks if states(a).get(b.ptr) == "cached"]
    assert cached == [b.ptr for b in blocks[4 - kept:]]
    check_invariants(a, sim, [])


def test_pool_miss_flushes_the_stream_cache(make, sim):
    a = make()
    blocks = [a.malloc(MiB // 2) for _ in range(4)]
    for b in blocks:
        a.free(b)
    assert states(a)[blocks[0].ptr] == "cached"
    big = a.malloc(MiB)
    assert sim.alloc_calls == 1 and big.ptr == blocks[0].ptr
    check_invariants(a, sim, [big])


def test_near_the_cap_small_blocks_skip_the_stream_cache(make, sim):
    a = make(segment_size=4 * MiB, memory_fraction=6 / 256)
    x = a.malloc(4096)
    a.free(x)
    assert states(a)[x.ptr] == "cached"  # 2 MiB reserved: a 4 MiB segment still fits
    y = a.malloc(MiB + 1)
    z = a.malloc(4096)
    a.free(z)
    assert states(a)[z.ptr] == "free" and a.memory_reserved() == 6 * MiB
    a.free(y)
    a.empty_cache()
    w = a.malloc(4096)
    a.free(w)
    assert states(a)[w.ptr] == "cached"


def test_one_large_block_per_stream_is_cached(make, sim):
    a = make()
    x, y, z = a.malloc(4 * MiB), a.malloc(4 * MiB), a.malloc(4 * MiB, stream=1)
    a.free(x)
    assert states(a)[x.ptr] == "cached"
    assert a.malloc(4 * MiB).ptr == x.ptr  # the same size again: no pool work
    a.free(y)
    a.free(z)  # another stream's large block does not push y out
    assert states(a)[y.ptr] == states(a)[z.ptr] == "cached"
    a.free(x)  # the next large free does: y goes to the pool, coalesced with its neighbours
    assert states(a)[y.ptr] == "free" and states(a)[x.ptr] == "cached"
    check_invariants(a, sim, [])


def test_a_large_miss_returns_the_cached_large_block_first(make, sim):
    a = make()
    x, y = a.malloc(4 * MiB), a.malloc(4 * MiB)
    a.free(x)
    a.free(y)  # x to the pool, y cached
    big = a.malloc(16 * MiB)  # fits only once y is back and coalesced: no new segment
    assert big.ptr == x.ptr and sim.alloc_calls == 1
    check_invariants(a, sim, [big])


def test_large_blocks_skip_the_stream_cache_near_the_cap(make, sim):
    a = make(segment_size=4 * MiB)
    a.set_memory_fraction(1 / 32)  # 8 MiB of 256: one more usual segment would not fit
    x, y = a.malloc(3 * MiB), a.malloc(3 * MiB)
    a.free(x)
    assert states(a)[x.ptr] == "free"
    check_invariants(a, sim, [y])


def test_cap_is_a_hard_limit(make, sim):
    a = make(segment_size=4 * MiB)
    a.set_memory_fraction(1 / 16)  # 16 MiB of 256
    held = [a.malloc(4 * MiB) for _ in range(4)]
    with pytest.raises(OutOfMemoryError) as info:
        a.malloc(3 * MiB)
    message = str(info.value)
    for text in ("Tried to allocate 3.00 MiB", "Allocated: 16.00 MiB", "reserved: 16.00 MiB",
                 "free (driver): 240.00 MiB of 256.00 MiB", "cap: 16.00 MiB",
                 "memory fraction 0.0625"):
        assert text in message
    assert isinstance(info.value, RuntimeError)
    assert a.memory_reserved() == 16 * MiB
    a.free(held.pop())
    held.append(a.malloc(3 * MiB))
    stats = a.memory_stats()
    assert (stats["num_ooms"], stats["num_alloc_retries"]) == (1, 1)
    check_invariants(a, sim, held)


def test_oom_releases_cached_segments_then_retries(make, sim):
    a = make(segment_size=2 * MiB, memory_fraction=10 / 256)  # cap: 10 MiB
    smalls = [a.malloc(MiB) for _ in range(4)]  # two 2 MiB small segments
    larges = [a.malloc(2 * MiB) for _ in range(3)]  # three 2 MiB large segments
    for b in smalls + larges:
        a.free(b)
    assert a.memory_reserved() == 10 * MiB
    block = a.malloc(8 * MiB)
    assert a.memory_reserved() == 8 * MiB and block.segment.size == 8 * MiB
    assert a.memory_stats()["num_alloc_retries"] == 1
    check_invariants(a, sim, [block])


def test_driver_oom_then_recovery(sim):
    small = SimDriver(total=16 * MiB)
    a = CachingAllocator(small, config=MemoryConfig(segment_size=8 * MiB))
    held = [a.malloc(6 * MiB), a.malloc(6 * MiB)]
    with pytest.raises(OutOfMemoryError, match="free \\(driver\\): 4.00 MiB of 16.00 MiB"):
        a.malloc(6 * MiB)
    a.free(held.pop())
    held.append(a.malloc(6 * MiB))
    check_invariants(a, small, held)


def test_statistics_add_up(make, sim, rng):
    a = make(segment_size=8 * MiB)
    sizes = rng.integers(1, 6 * MiB, size=40)
    blocks = [a.malloc(int(n), stream=int(rng.integers(0, 3))) for n in sizes]
    peak = a.memory_allocated()
    for b in blocks[::2]:
        a.free(b)
    live = blocks[1::2]
    stats = a.memory_stats()
    assert stats["allocated"] == a.memory_allocated() == sum(b.size for b in live)
    assert stats["reserved"] == a.memory_reserved() == sim.used
    assert stats["peak_allocated"] == a.max_memory_allocated() == peak
    assert stats["peak_reserved"] == a.max_memory_reserved() == sim.used
    assert stats["total_allocations"] == 40 and stats["total_freed"] == 20
    assert stats["cache_hits"] + stats["cache_misses"] == 40
    assert stats["cache_misses"] == stats["num_device_alloc"] == sim.alloc_calls
    assert stats["cache_hit_rate"] == pytest.approx(stats["cache_hits"] / 40)
    assert stats["efficiency_score"] == pytest.approx(stats["allocated"] / stats["reserved"])
    assert stats["free"] == sim.total - sim.used
    assert stats["requested_bytes.all.current"] == sum(int(n) for n in sizes[1::2])
    check_invariants(a, sim, live)
    a.reset_peak_memory_stats()
    assert a.max_memory_allocated() == a.memory_allocated()
    a.reset_accumulated_memory_stats()
    stats = a.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 0
    assert stats["allocation.all.current"] == 20


def test_statistics_off_still_count_current_usage(make, sim):
    a = make(enable_stats=False)
    x, y = a.malloc(1000), a.malloc(MiB + 1)
    assert a.memory_allocated() == 1024 + MiB + 512
    a.configure({"enable_stats": True})
    a.free(x)
    assert a.memory_allocated() == MiB + 512
    check_invariants(a, sim, [y])


def test_memory_summary_is_a_table(make):
    a = make()
    a.malloc(5 * MiB)
    text = a.memory_summary()
    assert "Allocated memory" in text and "5.00 MiB" in text and "from large pool" in text
    assert "Cache hit rate" in text and "Fragmentation" in text
    assert len({len(line) for line in text.splitlines()}) == 1


def test_varying_sizes_reserve_at_most_1_65x_their_peak(make, sim):
    """The benchmark's varying trace (benchmarks/allocator.py, seed 0): peak reserved over peak
    live bytes stays at its figure before the free-block index was rebuilt (1.643)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import allocator as bench
    rng = np.random.default_rng(0)
    trace = [make_trace(rng) for make_trace, _ in bench.SCENARIOS.values()][-1]  # as drawn there
    a = make()
    target = bench.Target("sim", a.malloc, a.free, OutOfMemoryError, a, a.set_memory_fraction,
                          sim.total, None)
    assert target.replay(trace) == 0 and target.replay(trace) == 0
    assert a.max_memory_reserved() / trace.peak_live <= 1.65
    check_invariants(a, sim)


def test_fragmentation(make, sim):
    a = make(cache_size=(0, None), segment_size=8 * MiB)
    blocks = [a.malloc(2 * MiB) for _ in range(4)]
    a.free(blocks[0])
    a.free(blocks[2])
    assert a.memory_stats()["fragmentation"] == pytest.approx(0.5)
    a.free(blocks[1])
    assert a.memory_stats()["fragmentation"] == 0.0


@pytest.mark.parametrize("text, nbytes", [
    ("1GB", 1 << 30), ("512MB", 512 * MiB), ("1.5GiB", 3 << 29), ("4096", 4096), ("2k", 2048),
    (" 3 mb ", 3 * MiB), ("100B", 100), ("1tb", 1 << 40), (".5M", MiB // 2)])
def test_parse_size(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["", "abc", "-1", "1.5", "1XB", "GB", "1 G B", "1e9"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("var, value, field, expected", [
    ("GENESIS_CUDA_SEGMENT_SIZE", "1GB", "segment_size", 1 << 30),
    ("GENESIS_CUDA_SEGMENT_SIZE", "3MB", "segment_size", 4 * MiB),
    ("GENESIS_CUDA_CACHE_SIZE", "1000", "cache_size", (1000, None)),
    ("GENESIS_CUDA_CACHE_SIZE", "1GB", "cache_size", (None, 1 << 30)),
    ("GENESIS_CUDA_WARMUP_ENABLED", "false", "enable_warmup", False),
    ("GENESIS_CUDA_STATS_ENABLED", "On", "enable_stats", True),
    ("GENESIS_CUDA_MEMORY_FRACTION", "0.8", "memory_fraction", 0.8),
    ("GENESIS_CUDA_MEMORY_DEBUG", "1", "debug", True)])
def test_env_vars(monkeypatch, sim, var, value, field, expected):
    monkeypatch.setenv(var, value)
    assert getattr(CachingAllocator(sim).config, field) == expected


@pytest.mark.parametrize("var, value, forms", [
    ("GENESIS_CUDA_SEGMENT_SIZE", "lots", "512MB"), ("GENESIS_CUDA_SEGMENT_SIZE", "1MB", "2MB"),
    ("GENESIS_CUDA_CACHE_SIZE", "-5", "block count"),
    ("GENESIS_CUDA_WARMUP_ENABLED", "maybe", "true"), ("GENESIS_CUDA_STATS_ENABLED", "", "false"),
    ("GENESIS_CUDA_MEMORY_FRACTION", "1.5", "(0, 1]"), ("GENESIS_CUDA_MEMORY_FRACTION", "0", "0.8"),
    ("GENESIS_CUDA_MEMORY_FRACTION", "most", "(0, 1]"), ("GENESIS_CUDA_MEMORY_DEBUG", "2", "yes")])
def test_bad_env_vars_are_rejected_at_start(monkeypatch, sim, var, value, forms):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError) as info:
        CachingAllocator(sim)
    assert f"{var}={value!r}" in str(info.value) and forms in str(info.value)


@pytest.mark.parametrize("options, match", [
    ({"coalescing_threshold": 0.1}, "unknown option.*coalescing_threshold.*accepted"),
    ({"segment_size": "1MB"}, "segment_size='1MB' is not valid"),
    ({"allocation_strategy": "first_fit"}, "'best_fit'"),
    ({"memory_fraction": -1}, "memory_fraction=-1"),
    ({"cache_size": "many"}, "block count")])
def test_configure_rejects(make, options, match):
    a = make()
    with pytest.raises(ValueError, match=match):
        a.configure(options)


def test_configure_applies(make, sim):
    a = make()
    a.configure({"segment_size": "64MB", "cache_size": 3, "enable_stats": True,
                 "allocation_strategy": "best_fit", "warmup_sizes": [("4KB", 2)]})
    assert a.config.segment_size == 64 * MiB and a.config.cache_size == (3, None)
    assert a.memory_stats()["stream_cached_blocks"] == 2
    assert a.malloc(MiB + 1).segment.size == 64 * MiB
    with pytest.raises(ValueError, match=r"set_memory_fraction\(1.2\)"):
        a.set_memory_fraction(1.2)


def test_warmup_fills_the_stream_cache(make, sim):
    a = make()
    a.warmup_cache([4096, 3 * MiB], counts=[10, 2], stream=7)
    calls = sim.alloc_calls
    blocks = [a.malloc(4096, stream=7) for _ in range(10)] + [a.malloc(3 * MiB, 7)]
    assert sim.alloc_calls == calls == 2  # a small and a large segment
    assert a.memory_stats()["stream_cache_hits"] == 10  # the large ones came from the pool
    ptrs = sorted(b.ptr for b in blocks[:10])
    assert ptrs == list(range(ptrs[0], ptrs[0] + 10 * 4096, 4096))
    check_invariants(a, sim, blocks)


def test_warmup_of_many_small_blocks_uses_small_segments(make, sim):
    a = make()
    a.warmup_cache([64 * 1024], [50])
    stats = a.memory_stats()
    assert stats["stream_cached_blocks"] == 50 and stats["segment.small_pool.current"] == 2
    check_invariants(a, sim, [])


def test_warmup_disabled_does_nothing(make, sim):
    a = make(enable_warmup=False)
    a.warmup_cache([4096], [10])
    assert sim.alloc_calls == 0
    with pytest.raises(ValueError):
        make().warmup_cache([4096], [1, 2])


def test_a_batch_piece_with_a_large_slack_goes_back_to_the_pool(make, sim):
    """The last piece of a batch from the large pool keeps the best fit's slack (up to 1 MiB):
    a small request in a block over 1 MiB fits neither stream cache."""
    a = make(segment_size=8 * MiB, cache_size=(4, 16 * MiB), memory_fraction=0.75)
    big = a.malloc(4 * MiB + 1)
    pieces = a.allocate_batch([111105, 936961])
    assert pieces[1].size > MiB >= pieces[1].requested_size
    a.free(big)
    huge = a.malloc(14 * MiB + 1)
    a.free(pieces[1])
    check_invariants(a, sim, [pieces[0], huge])
    a.free(pieces[0])
    a.free(huge)
    a.empty_cache()
    assert sim.used == 0


def test_allocate_batch_is_contiguous(make, sim, rng):
    a = make()
    sizes = [int(n) for n in rng.integers(1, 3 * MiB, size=6)] + [0, 700]
    blocks = a.allocate_batch(sizes, stream=2)
    real = [b for b in blocks if b.size]
    assert all(b.size >= n and b.requested_size == n for b, n in zip(blocks, sizes) if n)
    assert all(x.ptr + x.size == y.ptr for x, y in zip(real, real[1:]))
    assert blocks[6].ptr == 0 and sim.alloc_calls == 1
    assert a.memory_stats()["total_allocations"] == 7
    check_invariants(a, sim, blocks)
    for b in blocks:
        a.free(b)
    check_invariants(a, sim, [])


def test_allocate_async(make, sim):
    a = make()
    futures = [a.allocate_async(n, stream=1) for n in (100, 4096, 5 * MiB)]
    blocks = [f.result(timeout=10) for f in futures]
    assert [b.size for b in blocks] == [512, 4096, 5 * MiB]
    assert isinstance(futures[0], concurrent.futures.Future)
    check_invariants(a, sim, blocks)


def test_many_threads(make, sim):
    a = make(segment_size=4 * MiB, cache_size=(16, None))
    errors, barrier = [], threading.Barrier(8)

    def work(seed):
        rng = np.random.default_rng(seed)
        held = []
        try:
            barrier.wait()
            for _ in range(300):
                if held and rng.random() < 0.5:
                    a.free(held.pop(int(rng.integers(len(held)))))
                else:
                    held.append(a.malloc(int(rng.integers(1, 3 * MiB)), int(rng.integers(0, 3))))
            for b in held:
                a.free(b)
        except Exception as e:  # re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    check_invariants(a, sim, [])
    assert a.memory_stats()["total_allocations"] == a.memory_stats()["total_freed"]


def allocate_here(allocator):
    return allocator.malloc(12345)


def test_debug_traces(make):
    a = make(debug_max_frames=4)
    untraced = a.malloc(100)
    a.enable_memory_debugging(True)
    leaked = allocate_here(a)
    freed = a.malloc(999)
    a.free(freed)
    out = io.StringIO()
    text = a.dump_allocation_trace(file=out)
    assert out.getvalue() == text + "\n"
    assert text.startswith("2 live blocks")
    assert "in allocate_here" in text and "test_cuda_memory.py" in text
    assert "runtime/memory.py" not in text and "requested 999 B" not in text
    assert "no stack" in text and f"{untraced.ptr:#x}" in text
    assert len(leaked.trace) == 4


def test_callbacks(make, sim):
    a = make(segment_size=4 * MiB, memory_fraction=8 / 256)
    events = []

    def callback(event):
        events.append(event)
        a.memory_stats()  # callbacks run outside the lock

    a.set_memory_callback(callback, threshold="1MB")
    small = a.malloc(4096)
    x = a.malloc(3 * MiB)
    assert [e.kind for e in events] == ["segment_alloc", "segment_alloc", "large_alloc"]
    assert events[-1].nbytes == 3 * MiB and events[-1].allocated == 4096 + 4 * MiB
    a.free(small)
    events.clear()
    with pytest.raises(OutOfMemoryError):
        a.malloc(7 * MiB)
    assert [e.kind for e in events] == ["alloc_retry", "segment_free", "oom"]
    a.free(x)
    a.set_memory_callback(None)
    events.clear()
    a.empty_cache()
    assert events == []


def test_snapshot(make):
    a = make()
    x = a.malloc(1000, stream=4)
    (segment,) = a.memory_snapshot()
    assert segment["segment_type"] == "small" and segment["total_size"] == 2 * MiB
    assert segment["allocated_size"] == 1024
    assert segment["blocks"][0] == {"address": x.ptr, "size": 1024, "requested_size": 1000,
                                    "state": "allocated", "stream": 4}
    assert segment["blocks"][1]["state"] == "free"


def test_close_destroys_events(make, sim):
    a = make()
    x = a.malloc(100)
    a.record_stream(x, 1)
    a.free(x)
    sim.complete()
    a.malloc(100, stream=5)
    a.allocate_async(10).result()
    a.close()
    assert sim._events == {}


def test_sim_driver_catches_misuse():
    sim = SimDriver(total=MiB)
    ptr = sim.mem_alloc(100)
    sim.mem_free(ptr)
    with pytest.raises(SimDriverError):
        sim.mem_free(ptr)
    with pytest.raises(SimDriver.DriverOutOfMemory):
        sim.mem_alloc(2 * MiB)
    event = sim.event_create()
    sim.event_destroy(event)
    with pytest.raises(SimDriverError):
        sim.event_query(event)


def test_packed_stat_matches_a_plain_count(rng):
    """Stat's packed figures against per-field bookkeeping over random changes, recounts and
    resets (a pool's fields and the "all" ones share one int; peaks go through guard bits)."""
    stat = Stat(("bytes", "requested", "count"))
    keys = [(m, s, q) for m in METRICS for s in range(3) for q in range(3)]
    want = dict.fromkeys(keys, 0)
    live = {SMALL_POOL: [], LARGE_POOL: []}

    def settle(pool):
        """The model: `pool`'s current figures become the sums over its live entries."""
        for q in range(3):
            old, new = want[("current", pool, q)], sum(v[q] for v in live[pool])
            for scope in (pool, 0):
                want[("allocated", scope, q)] += max(new - old, 0)
                want[("freed", scope, q)] += max(old - new, 0)
                want[("current", scope, q)] += new - old
                want[("peak", scope, q)] = max(want[("peak", scope, q)],
                                               want[("current", scope, q)])

    for _ in range(300):
        pool, action = int(rng.choice([SMALL_POOL, LARGE_POOL])), rng.random()
        if action < 0.55 or not live[pool]:
            size = int(rng.integers(1, 1 << 40))
            live[pool].append((size, int(rng.integers(1, size + 1)), 1))
            stat.increase(pool, live[pool][-1])
        elif action < 0.9:
            stat.decrease(pool, live[pool].pop(int(rng.integers(len(live[pool])))))
        elif action < 0.95:
            del live[pool][int(rng.integers(len(live[pool]))):]
            stat.set_current(pool, [sum(v[q] for v in live[pool]) for q in range(3)])
        elif action < 0.975:
            stat.reset_peak()
            want.update({("peak", s, q): want[("current", s, q)] for s in range(3)
                         for q in range(3)})
        else:
            stat.reset_accumulated()
            want.update({key: 0 for key in keys if key[0] in ("allocated", "freed")})
        settle(pool)
        assert {key: stat.value(*key) for key in keys} == want

