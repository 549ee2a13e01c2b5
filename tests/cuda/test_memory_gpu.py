"""The caching allocator on a real GPU: statistics, the memory-fraction cap, OOM and recovery."""

import pytest

import genesis
from helpers import skip_no_cuda

pytestmark = skip_no_cuda

MB = 1 << 20


def test_statistics_follow_tensors():
    genesis.cuda.empty_cache()
    before = genesis.cuda.memory_allocated()
    x = genesis.empty(3 * MB, dtype=genesis.uint8, device="cuda")
    assert genesis.cuda.memory_allocated() - before >= 3 * MB
    assert genesis.cuda.memory_reserved() >= genesis.cuda.memory_allocated()
    assert genesis.cuda.max_memory_allocated() >= genesis.cuda.memory_allocated()
    stats = genesis.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == genesis.cuda.memory_allocated()
    del x
    assert genesis.cuda.memory_allocated() == before
    assert "allocated" in genesis.cuda.memory_summary().lower()


def test_cached_block_is_reused():
    x = genesis.empty(MB, dtype=genesis.uint8, device="cuda")
    ptr = x.data_ptr()
    del x
    y = genesis.empty(MB, dtype=genesis.uint8, device="cuda")
    assert y.data_ptr() == ptr


def test_oom_under_memory_fraction_then_recovery():
    total = genesis.cuda.get_device_properties().total_memory
    genesis.cuda.empty_cache()
    genesis.cuda.set_memory_fraction(0.05)
    try:
        chunk = int(total * 0.01)
        held = []
        with pytest.raises(genesis.cuda.OutOfMemoryError) as info:
            for _ in range(20):
                held.append(genesis.empty(chunk, dtype=genesis.uint8, device="cuda"))
        assert isinstance(info.value, RuntimeError)
        message = str(info.value)
        for word in ("tried to allocate", "allocated", "reserved", "free", "cap"):
            assert word in message.lower(), message
        held.clear()
        again = genesis.empty(chunk, dtype=genesis.uint8, device="cuda")
        assert again.numel() == chunk
    finally:
        genesis.cuda.set_memory_fraction(1.0)


def test_record_stream_keeps_memory_until_the_stream_is_done():
    s = genesis.cuda.Stream()
    x = genesis.empty(MB, dtype=genesis.uint8, device="cuda")
    with genesis.cuda.stream(s):
        y = x.to(genesis.float32)
    x.record_stream(s)
    del x
    s.synchronize()
    assert y.shape == (MB,)
