"""CUDA C++ sources the NVRTC tests compile (tests/test_nvrtc.py) and launch
(tests/cuda/test_nvrtc_cuda.py), and the fixture that gives each test its own kernel cache."""

import pytest

from genesis.backends.cuda import nvrtc

ADD = r'''
extern "C" __global__ void vector_add(const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
'''

AXPY = r'''
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''

ROW_SUM = r'''
extern "C" __global__ void row_sum(const float* x, float* out, int n_cols) {
    extern __shared__ float row[];
    const float* src = x + (long long)blockIdx.x * n_cols;
    for (int j = threadIdx.x; j < n_cols; j += blockDim.x) row[j] = src[j];
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int j = 0; j < n_cols; ++j) total += row[j];
        out[blockIdx.x] = total;
    }
}
'''


@pytest.fixture(autouse=True)
def fresh_kernel_cache(tmp_path, monkeypatch):
    """Each test compiles into its own cache directory, with the process cache emptied."""
    monkeypatch.setenv("GENESIS_KERNEL_CACHE_DIR", str(tmp_path))
    nvrtc.clear_memory_cache()
    yield
    nvrtc.clear_memory_cache()
