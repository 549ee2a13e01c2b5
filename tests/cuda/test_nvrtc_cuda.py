"""genesis.cuda.compile_kernel on the GPU: CUDA C++ kernels compiled by NVRTC and launched on
Genesis tensors (vector add, a template instance, dynamic shared memory past the 48 KiB default,
a non-default stream), compared with numpy."""

import numpy as np
import pytest
from helpers import skip_no_cuda
from nvrtc_sources import ADD, AXPY, ROW_SUM, fresh_kernel_cache  # noqa: F401

import genesis
from genesis.backends.cuda import nvrtc

pytestmark = [skip_no_cuda]


def _cuda(array):
    return genesis.tensor(array, device="cuda")


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_vector_add(rng, n):
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = genesis.empty(n, device="cuda")
    kernel = genesis.cuda.compile_kernel(ADD, "vector_add")
    kernel(((n + 255) // 256,), (256,), (_cuda(x), _cuda(y), out, n))
    np.testing.assert_array_equal(out.cpu().numpy(), x + y)


def test_program_matches_the_device():
    kernel = genesis.cuda.compile_kernel(ADD, "vector_add")
    major, minor = genesis.cuda.get_device_capability()
    program = kernel.program()
    assert program.arch_option.endswith(f"_{major}{minor}") or program.format == "ptx"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_template_instance(rng, dtype):
    n = 777
    name = "axpy<float>" if dtype == np.float32 else "axpy<double>"
    x, y = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    a = dtype(rng.standard_normal())
    gy = _cuda(y)
    kernel = genesis.cuda.compile_kernel(AXPY, name)
    kernel((n + 127) // 128, 128, (a, _cuda(x), gy, np.int32(n)))
    wide = np.longdouble
    exact = wide(a) * x.astype(wide) + y.astype(wide)
    # a multiply and an add round at most twice (once when fused): within eps (|a x| + |y|)
    bound = np.finfo(dtype).eps * (np.abs(wide(a) * x) + np.abs(y))
    assert np.all(np.abs(gy.cpu().numpy().astype(wide) - exact) <= bound)


@pytest.mark.parametrize("n_cols", [100, 20000])
def test_dynamic_shared_memory(rng, n_cols):
    """20000 floats are 80 000 bytes, past the 48 KiB a function gets without opting in."""
    rows = 5
    x = rng.standard_normal((rows, n_cols)).astype(np.float32)
    out = genesis.empty(rows, device="cuda")
    kernel = genesis.cuda.compile_kernel(ROW_SUM, "row_sum")
    kernel(rows, 128, [_cuda(x), out, np.int32(n_cols)], shared_mem=n_cols * 4)
    # one thread adds the row left to right in float32, as numpy's cumulative sum does
    np.testing.assert_array_equal(out.cpu().numpy(),
                                  np.cumsum(x, axis=1, dtype=np.float32)[:, -1])


def test_non_default_stream(rng):
    n = 4096
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    gx, gy = _cuda(x), _cuda(y)
    out, out2 = genesis.empty(n, device="cuda"), genesis.empty(n, device="cuda")
    kernel = genesis.cuda.compile_kernel(ADD, "vector_add")
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    kernel(n // 256, 256, (gx, gy, out, n), stream=side)
    with genesis.cuda.stream(side):
        kernel(n // 256, 256, (gx, out, out2, n))
    side.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), x + y)
    np.testing.assert_array_equal(out2.cpu().numpy(), x + (x + y))


def test_disk_cache_reloads(rng, tmp_path):
    genesis.cuda.compile_kernel(ADD, "vector_add")
    nvrtc.clear_memory_cache()
    kernel = genesis.cuda.compile_kernel(ADD, "vector_add")
    assert len(list((tmp_path / "nvrtc").glob("*.bin"))) == 1
    x = rng.standard_normal(300).astype(np.float32)
    out = genesis.empty(300, device="cuda")
    kernel(2, 256, (_cuda(x), _cuda(x), out, 300))
    np.testing.assert_array_equal(out.cpu().numpy(), x + x)


def test_compile_error_names_the_kernel():
    with pytest.raises(genesis.cuda.NVRTCError, match="(?s)'vector_add'.*undefined"):
        genesis.cuda.compile_kernel(ADD.replace("y[i]", "z[i]"), "vector_add")


def test_cpu_tensor_is_refused():
    kernel = genesis.cuda.compile_kernel(ADD, "vector_add")
    with pytest.raises(TypeError, match="argument 0 is a tensor on cpu"):
        kernel(1, 32, (genesis.ones(3), genesis.ones(3, device="cuda"),
                       genesis.ones(3, device="cuda"), 3))
