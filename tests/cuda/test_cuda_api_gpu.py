"""genesis.cuda's torch.cuda names on a real GPU: NVML readings, peer access, library handles,
the runtime calls of cudart(), the sync debug mode at real synchronizations, MemPool and raw
allocations holding real data, external streams and pinned host memory statistics."""

import gc
import re
import warnings

import numpy as np
import pytest

import genesis
from helpers import skip_no_cuda

pytestmark = skip_no_cuda
cuda = genesis.cuda
SYNC = "called a synchronizing CUDA operation"


@pytest.fixture
def nvml():
    return pytest.importorskip("cuda.bindings.nvml")


def test_nvml_readings_are_plausible(nvml):
    x = genesis.ones(64 << 20, dtype=genesis.uint8, device="cuda")
    assert 0 <= cuda.utilization() <= 100 and 0 <= cuda.memory_usage(0) <= 100
    assert 0 < cuda.temperature() < 130
    assert cuda.power_draw() > 0 and cuda.clock_rate("cuda") > 0
    used = cuda.device_memory_used()
    assert cuda.memory_reserved() <= used <= cuda.get_device_properties().total_memory
    first, *rest = cuda.list_gpu_processes().split("\n")
    assert first == "GPU:0" and rest  # processes (NVML may not see PIDs in a container)
    assert rest == ["no processes are running"] or all(
        re.fullmatch(r"process +\d+ uses +\d+\.\d{3} MB GPU memory", line) for line in rest)
    del x


def test_peer_access_answers_for_every_pair():
    count = cuda.device_count()
    for i in range(count):
        for j in range(count):
            assert isinstance(cuda.can_device_access_peer(i, j), bool)
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        cuda.can_device_access_peer(0, count)


def test_library_handles_follow_the_current_stream():
    pytest.importorskip("nvmath.bindings.cublas")
    blas = cuda.current_blas_handle()
    assert blas and cuda.current_blas_handle() == blas
    solver = cuda.current_solver_handle()
    assert solver and solver != blas
    with cuda.stream(cuda.Stream()):
        assert cuda.current_blas_handle() == blas


def test_cudart_profiler_and_host_registration():
    pytest.importorskip("cuda.bindings.runtime")
    api = cuda.cudart()
    cuda.check_error(api.cudaProfilerStart())
    genesis.ones(16, device="cuda").sum()
    cuda.check_error(api.cudaProfilerStop())
    assert api.cudaMemGetInfo(0)[1] == cuda.mem_get_info(0)[1]
    host = np.zeros(1 << 20, np.uint8)
    cuda.check_error(api.cudaHostRegister(host.ctypes.data, host.nbytes, 0))
    cuda.check_error(api.cudaHostUnregister(host.ctypes.data))
    assert api.cudaHostUnregister(host.ctypes.data) != api.cudaError.success


def test_sync_debug_mode_at_real_synchronizations():
    x = genesis.arange(10, device="cuda")
    try:
        cuda.set_sync_debug_mode("warn")
        with pytest.warns(UserWarning, match=SYNC):
            assert x.sum().item() == 45
        with pytest.warns(UserWarning, match=SYNC):
            assert x.nonzero().shape == (9, 1)
        cuda.set_sync_debug_mode("error")
        with pytest.raises(RuntimeError, match=SYNC):
            x.cpu()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cuda.synchronize()
    finally:
        cuda.set_sync_debug_mode(0)


def test_mem_pool_holds_real_data():
    pool = cuda.MemPool()
    with cuda.use_mem_pool(pool):
        y = genesis.arange(1000, dtype=genesis.float32, device="cuda") * 2
    spans = [(s["address"], s["address"] + s["total_size"]) for s in pool.snapshot()]
    assert any(lo <= y.data_ptr() < hi for lo, hi in spans)
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(1000, dtype=np.float32) * 2)
    del y, pool
    gc.collect()
    cuda.empty_cache()
    assert cuda.memory_stats()["graph_pools"] == 0


def test_raw_allocation_is_device_memory():
    from genesis.backends.cuda.runtime import driver
    before = cuda.memory_allocated()
    ptr = cuda.caching_allocator_alloc(1 << 20)
    assert cuda.memory_allocated() == before + (1 << 20)
    driver.memset_d8(ptr, 7, 1 << 20, 0)
    cuda.synchronize()
    cuda.caching_allocator_delete(ptr)
    assert cuda.memory_allocated() == before


def test_external_stream_runs_genesis_work():
    from genesis.backends.cuda.runtime import driver
    handle = driver.stream_create()
    try:
        external = cuda.ExternalStream(handle)
        with cuda.stream(external):
            y = genesis.ones(1 << 16, device="cuda").mul(3).sum()
        external.synchronize()
        assert y.item() == 3 * (1 << 16)
        assert cuda.current_stream() == cuda.default_stream()
    finally:
        cuda.synchronize()
        driver.stream_destroy(handle)


def test_pinned_memory_is_counted():
    before = cuda.host_memory_stats()
    pinned = genesis.ones(1 << 18).pin_memory()
    during = cuda.host_memory_stats()
    assert during["allocations.current"] == before.get("allocations.current", 0) + 1
    grown = during["allocated_bytes.current"] - before.get("allocated_bytes.current", 0)
    assert grown >= 1 << 20
    del pinned
    gc.collect()
    assert cuda.host_memory_stats()["allocations.current"] == during["allocations.current"] - 1
