"""The CUDA runtime on a real GPU: devices, streams, events, transfers, views, OOM, threads."""

import threading

import numpy as np
import pytest

import genesis
from helpers import ALL_DTYPES, skip_no_cuda

pytestmark = skip_no_cuda


def _host(arr_dtype, shape, rng):
    if arr_dtype is genesis.bool:
        return rng.random(shape) < 0.5
    if arr_dtype.is_floating_point:
        return rng.standard_normal(shape).astype(arr_dtype.numpy_dtype)
    return rng.integers(0, 100, size=shape).astype(arr_dtype.numpy_dtype)


def test_device_queries():
    assert genesis.cuda.device_count() >= 1
    props = genesis.cuda.get_device_properties(0)
    assert props.major >= 7 and props.multi_processor_count > 0 and props.total_memory > 0
    assert props.L2_cache_size > 0
    assert genesis.cuda.get_device_name() == props.name
    free, total = genesis.cuda.mem_get_info()
    assert 0 < free <= total


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_round_trip_every_dtype(dtype, rng):
    host = _host(dtype, (3, 5, 7), rng)
    t = genesis.tensor(host, device="cuda")
    assert t.device == genesis.device("cuda", 0) and t.dtype is dtype
    np.testing.assert_array_equal(t.cpu().numpy(), host)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.int64, genesis.bool],
                         ids=str)
def test_strided_views_read_and_copy_like_numpy(dtype, rng):
    host = _host(dtype, (6, 8, 10), rng)
    t = genesis.tensor(host, device="cuda")
    views = [
        (t.permute(2, 0, 1), host.transpose(2, 0, 1)),
        (t[1:5:2, ::3, 2:], host[1:5:2, ::3, 2:]),
        (t[:, 3], host[:, 3]),
        (t[2:3].expand(4, 8, 10), np.broadcast_to(host[2:3], (4, 8, 10))),
    ]
    for view, expected in views:
        assert view.data_ptr() >= t.data_ptr()
        np.testing.assert_array_equal(view.cpu().numpy(), expected)
        np.testing.assert_array_equal(view.contiguous().cpu().numpy(), expected)


@pytest.mark.parametrize("src,dst", [(genesis.float32, genesis.bfloat16),
                                     (genesis.float16, genesis.float32),
                                     (genesis.float32, genesis.int32),
                                     (genesis.int64, genesis.float64),
                                     (genesis.float32, genesis.bool)], ids=str)
def test_cast_matches_numpy(src, dst, rng):
    host = (_host(src, (257, 3), rng) * 10).astype(src.numpy_dtype)
    got = genesis.tensor(host, device="cuda").t().to(dst).cpu().numpy()
    np.testing.assert_array_equal(got, host.T.astype(dst.numpy_dtype))


def test_fill_and_creation():
    for dtype, value in [(genesis.float32, 2.5), (genesis.bfloat16, -1.0), (genesis.int64, 7),
                         (genesis.bool, True), (genesis.uint8, 0)]:
        t = genesis.full((1001,), value, dtype=dtype, device="cuda")
        assert (t.cpu().numpy() == np.asarray(value, dtype=dtype.numpy_dtype)).all()
    assert genesis.zeros(0, device="cuda").numel() == 0
    assert genesis.ones(2, 3, device="cuda").cpu().numpy().sum() == 6


def test_copy_between_devices_and_in_place(rng):
    a = genesis.tensor(rng.standard_normal((4, 6)).astype(np.float32), device="cuda")
    b = genesis.zeros(6, 4, device="cuda")
    b.copy_(a.t()) if hasattr(b, "copy_") else None
    host = a.cpu()
    assert host.device == genesis.device("cpu")
    np.testing.assert_array_equal(host.numpy(), a.cpu().numpy())


def test_streams_order_work_and_events_time_it(rng):
    s = genesis.cuda.Stream()
    host = rng.standard_normal(1 << 20).astype(np.float32)
    start, end = genesis.cuda.Event(enable_timing=True), genesis.cuda.Event(enable_timing=True)
    with genesis.cuda.stream(s):
        assert genesis.cuda.current_stream() == s
        start.record()
        x = genesis.tensor(host, device="cuda")
        y = x.to(genesis.float64)
        end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    assert genesis.cuda.current_stream() == genesis.cuda.default_stream()
    s.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), host.astype(np.float64))


def test_threads_allocate_concurrently(rng):
    errors = []

    def work(seed):
        local = np.random.default_rng(seed)
        try:
            for _ in range(50):
                n = int(local.integers(1, 1 << 16))
                host = local.standard_normal(n).astype(np.float32)
                np.testing.assert_array_equal(genesis.tensor(host, device="cuda").cpu().numpy(), host)
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_current_stream_and_device_are_per_thread():
    """A stream made current in one thread is not another thread's current stream, and new
    tensors there are allocated for that thread's own (default) stream."""
    s = genesis.cuda.Stream()
    seen = {}

    def work():
        seen["stream"] = genesis.cuda.current_stream()
        seen["device"] = genesis.cuda.current_device()
        seen["allocated for"] = genesis.empty(16, device="cuda")._data.storage.block.stream

    with genesis.cuda.stream(s):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert genesis.empty(16, device="cuda")._data.storage.block.stream == s.cuda_stream
    assert seen == {"stream": genesis.cuda.default_stream(), "device": 0, "allocated for": 0}


def test_library_handles_are_made_once_and_released_in_reverse_order():
    from genesis.backends.cuda import libraries
    from genesis.backends.cuda.runtime.device import DeviceContext
    ctx = DeviceContext(0)
    released = []
    first = ctx.handle("a", lambda: 1, released.append)
    assert ctx.handle("a", lambda: 2, released.append) == first
    ctx.handle("b", lambda: 3, released.append)
    ctx.release()
    assert released == [3, 1]
    if not libraries.has_cublaslt():
        pytest.skip("nvmath-python not installed: cuBLASLt handle not checked")
    handle = libraries.cublaslt_handle()
    assert handle and libraries.cublaslt_handle() == handle
    assert libraries.cublaslt_version() > 0
