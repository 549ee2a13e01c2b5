"""genesis.cuda's torch.cuda names on the simulated CUDA device (benchmarks/simulated_cuda.py),
run by test_cuda_api_sim.py in a process of its own (the simulation replaces the driver layer).

Nothing is computed there: the checks look at what the host decides (devices, dtypes, pools,
statistics, warnings), never at values. Each `check_*` function runs in file order (the first
before CUDA is initialised); the script prints "ok NAME" or "FAIL NAME" with the traceback for
each, then "all checks passed" when none failed.
"""

import gc
import pathlib
import sys
import threading
import traceback
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

import simulated_cuda  # noqa: E402

simulated_cuda.install()

import genesis  # noqa: E402

cuda = genesis.cuda
SYNC = "called a synchronizing CUDA operation"
LEGACY = {"FloatTensor": genesis.float32, "DoubleTensor": genesis.float64,
          "HalfTensor": genesis.float16, "BFloat16Tensor": genesis.bfloat16,
          "LongTensor": genesis.int64, "IntTensor": genesis.int32, "ShortTensor": genesis.int16,
          "CharTensor": genesis.int8, "ByteTensor": genesis.uint8, "BoolTensor": genesis.bool}


def _raises(error, text, fn, *args):
    try:
        fn(*args)
    except error as e:
        assert text in str(e), str(e)
        return
    raise AssertionError(f"{fn} did not raise {error.__name__}")


def check_statistics_before_initialisation():
    """As PyTorch's: the nested and host statistics are empty until CUDA is initialised, and
    switching caching is a no-op then."""
    assert not cuda.is_initialized()
    assert cuda.memory_stats_as_nested_dict() == {}
    assert cuda.host_memory_stats_as_nested_dict() == {} and cuda.host_memory_stats() == {}
    cuda.caching_allocator_enable(False)
    assert not cuda.is_initialized()


def check_legacy_typed_tensors():
    """The old-script idiom `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`:
    constructing, isinstance and .type() as in PyTorch."""
    Tensor = cuda.FloatTensor if cuda.is_available() else genesis.FloatTensor
    x = Tensor(8, 3).fill_(1.0)
    assert x.device.type == "cuda" and x.dtype is genesis.float32 and tuple(x.shape) == (8, 3)
    assert isinstance(x, cuda.FloatTensor) and not isinstance(x, genesis.FloatTensor)
    assert not isinstance(x, cuda.DoubleTensor) and x.type() == "torch.cuda.FloatTensor"
    assert x.type(cuda.FloatTensor) is x
    assert x.type(cuda.DoubleTensor).dtype is genesis.float64
    assert x.type(genesis.FloatTensor).device.type == "cpu"
    assert x.type("torch.cuda.LongTensor").type() == "torch.cuda.LongTensor"
    moved = genesis.zeros(2, 2).type(cuda.HalfTensor)
    assert moved.device.type == "cuda" and moved.dtype is genesis.float16
    for name, dtype in LEGACY.items():
        t = getattr(cuda, name)(2, 5)
        assert t.dtype is dtype and t.device.type == "cuda" and t.type() == f"torch.cuda.{name}"
        assert isinstance(t, getattr(cuda, name)) and tuple(getattr(cuda, name)().shape) == (0,)
    assert cuda.LongTensor([1, 2, 3]).dtype is genesis.int64
    assert cuda.FloatTensor(genesis.Size([4, 1])).shape == (4, 1)


def check_sync_debug_mode_warns_at_implicit_synchronizations():
    """.item(), .cpu(), .tolist(), an upload, nonzero and Stream.synchronize() warn, attributed
    to the caller's line; explicit device and event synchronizations and non-blocking copies
    do not; "default" is quiet again."""
    x = genesis.ones(4, device="cuda")
    implicit = [lambda: x.sum().item(), lambda: x.cpu(), lambda: x.tolist(),
                lambda: genesis.tensor([1.0, 2.0], device="cuda"), lambda: x.nonzero(),
                lambda: cuda.current_stream().synchronize()]
    explicit = [cuda.synchronize, lambda: cuda.Event().synchronize(),
                lambda: x.to("cpu", non_blocking=True)]
    cuda.set_sync_debug_mode("warn")
    assert cuda.get_sync_debug_mode() == 1
    for fn in implicit:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        assert [str(w.message) for w in caught] == [SYNC], (fn, caught)
        assert caught[0].category is UserWarning and caught[0].filename == __file__
    for fn in explicit:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn()
    cuda.set_sync_debug_mode(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.cpu()


def check_sync_debug_mode_error_raises():
    x = genesis.ones(4, device="cuda")
    cuda.set_sync_debug_mode("error")
    try:
        assert cuda.get_sync_debug_mode() == 2
        for fn in (lambda: x.sum().item(), lambda: x.cpu(), lambda: x.nonzero()):
            _raises(RuntimeError, SYNC, fn)
        cuda.synchronize()
    finally:
        cuda.set_sync_debug_mode("default")
    x.cpu()


def _owner(t):
    return t._data.storage.block.segment.owner


def check_mem_pool_routes_this_threads_allocations():
    """Inside use_mem_pool this thread's allocations, on any stream, come from the pool; another
    thread's do not; a block freed in the pool is reused there; the pool's use count follows
    its users and its memory goes back once it is released and empty."""
    pool = cuda.MemPool()
    assert isinstance(pool.id, tuple) and len(pool.id) == 2 and pool.use_count() == 1
    assert pool.allocator is None
    other = []
    with cuda.use_mem_pool(pool):
        assert pool.use_count() == 2
        a = genesis.empty(1000, device="cuda")
        with cuda.stream(cuda.Stream()):
            b = genesis.empty(5 << 20, dtype=genesis.uint8, device="cuda")
        worker = threading.Thread(target=lambda: other.append(genesis.empty(10, device="cuda")))
        worker.start()
        worker.join()
        ptr = a.data_ptr()
        del a
        c = genesis.empty(1000, device="cuda")
    assert pool.use_count() == 1
    assert _owner(b).pool_id == _owner(c).pool_id == pool.id and c.data_ptr() == ptr
    assert _owner(other[0]).pool_id == (0, 0)
    outside = genesis.empty(1000, device="cuda")
    assert _owner(outside).pool_id == (0, 0)
    segments = pool.snapshot()
    assert segments and all(s["segment_pool_id"] == pool.id for s in segments)
    assert cuda.memory_stats()["graph_pools"] == 1
    del b, c, pool, outside, other
    gc.collect()
    cuda.empty_cache()
    assert cuda.memory_stats()["graph_pools"] == 0


def check_mem_pool_arguments_as_torch():
    _raises(NotImplementedError, "no allocator", cuda.MemPool, object())
    _raises(NotImplementedError, "no_split", lambda: cuda.MemPool(no_split=True))
    first, second = cuda.MemPool(), cuda.MemPool(use_on_oom=True)
    assert first.id != second.id


def check_raw_allocations():
    """caching_allocator_alloc/delete: addresses from the caching allocator, counted in its
    statistics, on the given or current stream; torch's errors for a bad stream or address."""
    cuda.empty_cache()
    before = cuda.memory_allocated()
    ptr = cuda.caching_allocator_alloc(4096)
    assert ptr and cuda.memory_allocated() == before + 4096
    side = cuda.Stream()
    on_side = cuda.caching_allocator_alloc(1 << 20, stream=side)
    on_handle = cuda.caching_allocator_alloc(512, 0, side.cuda_stream)
    assert cuda.caching_allocator_alloc(0) == 0
    cuda.caching_allocator_delete(0)
    for p in (ptr, on_side, on_handle):
        cuda.caching_allocator_delete(p)
    assert cuda.memory_allocated() == before
    _raises(RuntimeError, f"invalid device pointer: {ptr:#x}", cuda.caching_allocator_delete, ptr)
    _raises(TypeError, "Invalid type for stream argument", cuda.caching_allocator_alloc, 8, 0,
            "s")


def check_caching_allocator_disabled():
    """With caching off, freed memory goes back to the driver once its segment is free;
    turning it on again restores caching."""
    cuda.empty_cache()
    keep = genesis.empty(1000, device="cuda")
    with cuda.caching_allocator_disabled():
        assert cuda.memory.get_allocator_backend() == "native"
        t = genesis.empty(30 << 20, dtype=genesis.uint8, device="cuda")
        reserved = cuda.memory_reserved()
        del t
        assert cuda.memory_reserved() < reserved
    t = genesis.empty(30 << 20, dtype=genesis.uint8, device="cuda")
    reserved = cuda.memory_reserved()
    del t
    assert cuda.memory_reserved() == reserved  # cached again
    del keep


def check_stream_context_and_external_streams():
    """stream() is a StreamContext: it makes a stream current and restores the previous one;
    an external handle wraps into a stream that genesis uses as its own."""
    default = cuda.current_stream()
    external = cuda.ExternalStream(0xABC0)
    assert isinstance(external, cuda.ExternalStream) and external.cuda_stream == 0xABC0
    context = cuda.stream(external)
    assert isinstance(context, cuda.StreamContext)
    with context:
        assert cuda.current_stream() == external
        genesis.ones(3, device="cuda").sum()
    assert cuda.current_stream() == default
    with cuda.StreamContext(None):
        assert cuda.current_stream() == default
    wrapped = cuda.get_stream_from_external(0xABD0, 0)
    assert wrapped.cuda_stream == 0xABD0 and wrapped.device_index == 0
    cuda.set_stream(None)
    cuda.set_stream(wrapped)
    assert cuda.current_stream() == wrapped
    cuda.set_stream(default)


def check_host_memory_statistics():
    """Pinned buffers count as host allocations; those handed out as active, until they are
    freed or idle in the staging cache."""
    x = genesis.ones(1024, device="cuda")
    cuda.reset_accumulated_host_memory_stats()
    before = cuda.host_memory_stats()
    host = x.to("cpu", non_blocking=True)
    during = cuda.host_memory_stats()
    assert during["allocations.current"] == before["allocations.current"] + 1
    assert during["active_bytes.current"] == before["active_bytes.current"] + 4096
    assert during["num_host_alloc"] == 1 and during["host_alloc_time.count"] == 1
    del host
    gc.collect()
    after = cuda.host_memory_stats()
    assert after["allocations.current"] == before["allocations.current"]
    assert after["num_host_free"] == 1 and after["allocated_bytes.freed"] == 4096
    assert after["allocations.peak"] >= during["allocations.current"]
    genesis.ones(256).to("cuda", non_blocking=True)  # through a staging buffer, kept cached
    genesis.ones(256).to("cuda", non_blocking=True)  # reclaims it (its copy is done), reuses it
    staged = cuda.host_memory_stats()
    assert staged["num_host_alloc"] == 2 and staged["active_requests.current"] >= 1
    nested = cuda.host_memory_stats_as_nested_dict()
    assert nested["allocations"]["current"] == staged["allocations.current"]
    cuda.reset_peak_host_memory_stats()
    assert cuda.host_memory_stats()["allocations.peak"] == staged["allocations.current"]
    cuda.reset_accumulated_host_memory_stats()
    assert cuda.host_memory_stats()["num_host_alloc"] == 0


def check_nested_memory_statistics():
    x = genesis.ones(1000, device="cuda")
    flat, nested = cuda.memory_stats(), cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"]
    assert nested["num_alloc_retries"] == flat["num_alloc_retries"]
    del x


def check_device_queries():
    """The simulated H200: sm_90 is the architecture kernels are built for; one default
    generator per device, the ones genesis.cuda seeds; a device is not its own peer."""
    assert cuda.get_arch_list() == ["sm_90"]
    assert cuda.get_gencode_flags() == "-gencode compute=compute_90,code=sm_90"
    (generator,) = cuda.default_generators
    cuda.manual_seed(1234)
    assert generator.initial_seed() == 1234
    assert cuda.has_half and not cuda.has_magma
    cuda.ipc_collect()
    assert not cuda.can_device_access_peer(0, 0)
    _raises(AssertionError, "Invalid peer device id", cuda.can_device_access_peer, 0, 1)
    _raises(AssertionError, "Invalid device id", cuda.can_device_access_peer, 3, 0)


def main():
    failed = 0
    for name, check in [(n, f) for n, f in globals().items() if n.startswith("check_")]:
        try:
            check()
            print(f"ok {name}", flush=True)
        except Exception:  # noqa: BLE001  (reported, and the next check runs)
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}END {name}", flush=True)
    if not failed:
        print("all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
