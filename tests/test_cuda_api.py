"""genesis.cuda's torch.cuda names whose logic needs no device: the sync debug mode's forms and
messages, NVML queries over a stand-in NVML, the CUDA runtime error checks, and the allocator's
MemPool routing, use_on_oom pools and caching switch over the simulated driver. The same names
on a whole simulated device are in test_cuda_api_sim.py, on a real GPU in tests/cuda."""

import sys
import threading
import types
import warnings

import pytest

import genesis
import genesis.cuda as cuda
from cuda_sim import SimDriver, check_invariants
from genesis.backends.cuda.runtime import driver, sync_debug
from genesis.backends.cuda.runtime.memory import CachingAllocator, OutOfMemoryError
from genesis.backends.cuda.runtime.memory_config import MemoryConfig
from genesis.cuda import memory as cuda_memory
from genesis.cuda import nvml as cuda_nvml

MiB = 1 << 20
SYNC = "called a synchronizing CUDA operation"


@pytest.fixture
def quiet_sync_mode():
    yield
    cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("mode, value", [("default", 0), ("warn", 1), ("error", 2), (0, 0),
                                         (1, 1), (2, 2)])
def test_sync_debug_mode_forms(quiet_sync_mode, mode, value):
    cuda.set_sync_debug_mode(mode)
    assert cuda.get_sync_debug_mode() == value


def test_sync_debug_mode_rejects_as_torch(quiet_sync_mode):
    with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected one of "
                                           "`default`, `warn`, `error`"):
        cuda.set_sync_debug_mode("loud")
    with pytest.raises(RuntimeError, match="expected one of 0,1,2"):
        cuda.set_sync_debug_mode(3)
    assert cuda.get_sync_debug_mode() == 0


def test_sync_point_warns_or_raises_with_torchs_message(quiet_sync_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sync_debug.warn_or_error_on_sync()
    cuda.set_sync_debug_mode("warn")
    with pytest.warns(UserWarning, match=f"^{SYNC}$") as caught:
        sync_debug.warn_or_error_on_sync()
    assert caught[0].filename == __file__  # the caller's line, as PyTorch's warnings
    cuda.set_sync_debug_mode("error")
    with pytest.raises(RuntimeError, match=f"^{SYNC}$"):
        sync_debug.warn_or_error_on_sync()


class _FakeNVML(types.SimpleNamespace):
    """cuda.bindings.nvml's calls genesis makes, over fixed readings of two devices."""

    TemperatureSensors = types.SimpleNamespace(TEMPERATURE_GPU=0)
    ClockType = types.SimpleNamespace(CLOCK_SM=1)
    BUS = {"0000:1A:00.0": 100, "0000:3B:00.0": 101}

    def device_get_handle_by_pci_bus_id_v2(self, bus_id):
        return self.BUS[bus_id]

    def device_get_memory_info_v2(self, handle):
        return types.SimpleNamespace(used=handle * MiB)

    def device_get_utilization_rates(self, handle):
        return types.SimpleNamespace(gpu=handle - 60, memory=handle - 90)

    def device_get_temperature_v(self, handle, sensor):
        assert sensor == 0
        return handle - 50

    def device_get_power_usage(self, handle):
        return handle * 1000

    def device_get_clock_info(self, handle, clock):
        assert clock == 1
        return handle * 10

    def device_get_compute_running_processes_v3(self, handle):
        if handle == 100:
            return []
        return [types.SimpleNamespace(pid=4242, used_gpu_memory=1536 * MiB),
                types.SimpleNamespace(pid=7, used_gpu_memory=512 * 1024)]


@pytest.fixture
def fake_nvml(monkeypatch):
    """Two devices whose CUDA indices 0 and 1 sit on the fake NVML's two bus ids."""
    monkeypatch.setattr(cuda_nvml, "_nvml", _FakeNVML)
    bus_ids = list(_FakeNVML.BUS)
    monkeypatch.setattr(driver, "device_pci_bus_id", lambda index: bus_ids[index])
    monkeypatch.setattr(genesis.backends.cuda.runtime.device, "_device_set", False)


@pytest.mark.parametrize("name, device0, device1", [
    ("device_memory_used", 100 * MiB, 101 * MiB), ("utilization", 40, 41),
    ("memory_usage", 10, 11), ("temperature", 50, 51), ("power_draw", 100000, 101000),
    ("clock_rate", 1000, 1010)])
def test_nvml_readings_by_pci_bus_id(fake_nvml, name, device0, device1):
    fn = getattr(cuda, name)
    assert fn() == fn(0) == fn("cuda") == device0
    assert fn(1) == fn("cuda:1") == fn(genesis.device("cuda", 1)) == device1


def test_list_gpu_processes_in_torchs_format(fake_nvml):
    assert cuda.list_gpu_processes() == "GPU:0\nno processes are running"
    assert cuda.list_gpu_processes(1) == (
        "GPU:1\n"
        "process       4242 uses     1536.000 MB GPU memory\n"
        "process          7 uses        0.500 MB GPU memory")


def test_nvml_errors_as_torch(monkeypatch):
    """No NVML module: ModuleNotFoundError; no NVML library or driver: PyTorch's RuntimeError;
    list_gpu_processes says either instead of raising."""
    class NvmlError(Exception):
        pass

    def no_driver():
        raise NvmlError("NVML_ERROR_DRIVER_NOT_LOADED")

    monkeypatch.setattr(cuda_nvml, "_initialised", [])
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml",
                        types.SimpleNamespace(NvmlError=NvmlError, init_v2=no_driver))
    bindings = pytest.importorskip("cuda.bindings")
    monkeypatch.setattr(bindings, "nvml", sys.modules["cuda.bindings.nvml"], raising=False)
    with pytest.raises(RuntimeError, match="^cuda driver can't be loaded, is cuda enabled\\?$"):
        cuda.utilization()
    assert cuda.list_gpu_processes() == "cuda driver can't be loaded, is cuda enabled?"
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml", None)
    monkeypatch.delattr(bindings, "nvml")
    with pytest.raises(ModuleNotFoundError, match="cuda-bindings 13.2 or newer"):
        cuda.temperature()
    assert "module not found" in cuda.list_gpu_processes()


def test_check_error_names_the_runtime_error():
    pytest.importorskip("cuda.bindings.runtime")
    cuda.check_error(0)
    cuda.check_error(cuda.cudaStatus.SUCCESS)
    assert cuda.cudaStatus.ERROR_NOT_READY == 34
    api = cuda.cudart.__globals__["_api"]
    text = api.cudaGetErrorString(35)
    assert text and "unrecognized" not in text
    with pytest.raises(cuda.CudaError, match=rf"^{text} \(35\)$") as raised:
        cuda.check_error(35)
    assert isinstance(raised.value, cuda.AcceleratorError)
    with pytest.raises(cuda.CudaError, match=r"^unrecognized error code \(123456\)$"):
        cuda.check_error(123456)


@pytest.mark.skipif(cuda.is_available(), reason="checks the answer without CUDA")
def test_without_cuda():
    with pytest.raises(driver.CudaUnavailable):
        cuda.cudart()
    with pytest.raises(driver.CudaUnavailable):
        cuda.MemPool()
    assert cuda.get_arch_list() == [] and cuda.get_gencode_flags() == ""
    assert cuda.default_generators == ()
    assert cuda.memory_stats_as_nested_dict() == {} and cuda.host_memory_stats() == {}


def test_error_classes_as_torchs():
    assert issubclass(cuda.AcceleratorError, RuntimeError)
    assert issubclass(cuda.CudaError, cuda.AcceleratorError)
    assert issubclass(cuda.DeferredCudaCallError, Exception)
    assert not issubclass(cuda.DeferredCudaCallError, RuntimeError)


def test_nested_and_flat_statistics_round_trip():
    flat = {"allocated_bytes.all.current": 5, "allocated_bytes.all.peak": 7,
            "segment.large_pool.freed": 1, "num_ooms": 0}
    nested = cuda_memory._nested(flat)
    assert nested == {"allocated_bytes": {"all": {"current": 5, "peak": 7}},
                      "segment": {"large_pool": {"freed": 1}}, "num_ooms": 0}
    assert dict(cuda_memory._flat(nested)) == flat


def _allocator(total=256 * MiB, **config):
    sim = SimDriver(total=total)
    return sim, CachingAllocator(sim, config=MemoryConfig(segment_size=8 * MiB, **config))


def test_thread_routing_sends_every_stream_of_one_thread_to_the_pool():
    sim, allocator = _allocator()
    allocator.retain_pool((0, 101))
    allocator.begin_allocate_thread_to_pool((0, 101))
    mine = [allocator.malloc(n, stream) for n, stream in ((4096, 0), (3 * MiB, 9), (512, 11))]
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(allocator.malloc(4096, 0)))
    thread.start()
    thread.join()
    assert all(b.segment.owner.pool_id == (0, 101) for b in mine)
    assert theirs[0].segment.owner is allocator
    assert allocator.graph_pools()[(0, 101)][0] == 2
    allocator.free(mine[0])
    again = allocator.malloc(4096, 0)
    assert again.ptr == mine[0].ptr  # reused inside the pool
    allocator.end_allocate_thread_to_pool((0, 101))
    allocator.release_pool((0, 101))
    outside = allocator.malloc(4096, 0)
    assert outside.segment.owner is allocator and not allocator._routed
    check_invariants(allocator, sim, mine[1:] + [again, outside] + theirs)
    for block in mine[1:] + [again]:
        allocator.free(block)
    allocator.release_pool((0, 101))
    allocator.empty_cache()
    assert (0, 101) not in allocator.graph_pools()
    check_invariants(allocator, sim, [outside] + theirs)


def test_nested_thread_pools_innermost_wins():
    sim, allocator = _allocator()
    allocator.begin_allocate_thread_to_pool((0, 1))
    allocator.begin_allocate_thread_to_pool((0, 2))
    inner = allocator.malloc(4096, 0)
    allocator.end_allocate_thread_to_pool((0, 2))
    outer = allocator.malloc(4096, 0)
    allocator.end_allocate_thread_to_pool((0, 1))
    assert inner.segment.owner.pool_id == (0, 2) and outer.segment.owner.pool_id == (0, 1)
    assert allocator._thread_pools == {}
    check_invariants(allocator, sim, [inner, outer])


def test_thread_pool_takes_a_captures_allocations_and_frees_nothing_early():
    """Inside use_mem_pool a capture on the same thread allocates from the MemPool; without a
    capture, empty_cache and cross-stream frees work as usual."""
    sim, allocator = _allocator()
    allocator.begin_allocate_thread_to_pool((0, 1))
    allocator.begin_allocate_to_pool((0, 2), 7)
    sim.begin_capture(7)
    captured = allocator.malloc(4096, 7)
    sim.end_capture(7)
    allocator.end_allocate_to_pool(7)
    assert captured.segment.owner.pool_id == (0, 1)
    block = allocator.malloc(4096, 0)
    allocator.record_stream(block, 9)
    allocator.free(block)
    assert sim.pending_events() == 2  # deferred as usual, not held for a capture
    allocator.empty_cache()
    allocator.end_allocate_thread_to_pool((0, 1))
    check_invariants(allocator, sim, [captured])


def test_use_on_oom_pool_serves_what_the_device_cannot():
    sim, allocator = _allocator(total=32 * MiB)
    allocator.retain_pool((0, 1), use_on_oom=True)
    allocator.begin_allocate_thread_to_pool((0, 1))
    held = allocator.malloc(20 * MiB, 0)
    allocator.end_allocate_thread_to_pool((0, 1))
    allocator.free(held)  # the pool keeps its 20 MiB segment, free
    block = allocator.malloc(16 * MiB, 0)  # the device has 12 MiB left: the pool serves it
    assert block.segment.owner.pool_id == (0, 1)
    check_invariants(allocator, sim, [block])
    allocator.free(block)

    sim, allocator = _allocator(total=32 * MiB)
    allocator.retain_pool((0, 1))
    allocator.begin_allocate_thread_to_pool((0, 1))
    allocator.free(allocator.malloc(20 * MiB, 0))
    allocator.end_allocate_thread_to_pool((0, 1))
    with pytest.raises(OutOfMemoryError):
        allocator.malloc(16 * MiB, 0)


def test_caching_off_returns_free_segments_at_once():
    sim, allocator = _allocator()
    cached = allocator.malloc(4096, 0)
    allocator.free(cached)
    assert sim.used > 0  # cached, its segment kept
    allocator.configure({"caching": False})
    assert sim.used == 0 and not allocator._lru
    blocks = [allocator.malloc(n, 0) for n in (4096, 8192, 3 * MiB)]
    allocator.free(blocks[0])
    assert sim.used > 0  # its segment still holds the second block
    allocator.free(blocks[1])
    allocator.free(blocks[2])
    assert sim.used == 0
    check_invariants(allocator, sim, [])
    allocator.configure({"caching": True})
    allocator.free(allocator.malloc(4096, 0))
    assert sim.used > 0
    check_invariants(allocator, sim, [])
