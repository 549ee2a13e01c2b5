"""A CUDA C++ kernel of your own, compiled by NVRTC and launched on Genesis tensors.

    python examples/nvrtc_kernel.py [--rows 4096] [--cols 4096]

The kernel fuses a bias add and a squared ReLU, out = relu(x + bias)^2 with the bias broadcast
over rows, in one pass; Genesis's ops take three (add, relu, square). The script checks the
kernel against them and times both with CUDA events. It needs a CUDA GPU.

`genesis.cuda.compile_kernel(source, name)` compiles once per device architecture (cached on
disk under GENESIS_KERNEL_CACHE_DIR); `kernel(grid, block, args)` launches on the current
stream. Tensors pass their data pointers; a Python int passes a `long long` and a float a
`double` (CuPy's rules), so pass `numpy.int32` or `numpy.float32` for `int` or `float`
parameters.
"""

import argparse
import sys

import numpy as np

import genesis
import genesis.nn.functional as F

SOURCE = r'''
template <typename T>
__global__ void bias_relu_square(const T* x, const T* bias, T* out, long long rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float v = (float)x[i] + (float)bias[i % cols];
    v = v > 0.0f ? v : 0.0f;
    out[i] = (T)(v * v);
}
'''

BLOCK = 256  # threads per block: 8 warps, enough to hide memory latency on every SM


def fused(kernel, x, bias):
    rows, cols = x.shape
    out = genesis.empty_like(x)
    grid = (rows * cols + BLOCK - 1) // BLOCK
    kernel(grid, BLOCK, (x, bias, out, rows, np.int32(cols)))
    return out


def composed(x, bias):
    return F.relu(x + bias).square()


def time_ms(fn, reps=50):
    """Median device time of `fn` in milliseconds, by CUDA events."""
    fn()
    times = []
    for _ in range(reps):
        start, end = genesis.cuda.Event(enable_timing=True), genesis.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=4096)
    args = p.parse_args(argv)
    if not genesis.cuda.is_available():
        sys.exit("examples/nvrtc_kernel.py launches a CUDA kernel: it needs a CUDA GPU, and none "
                 "is available here")

    kernel = genesis.cuda.compile_kernel(SOURCE, "bias_relu_square<float>")
    print(f"compiled {kernel.name} for {genesis.cuda.get_device_name()} "
          f"({kernel.program().arch_option})")
    x = genesis.randn(args.rows, args.cols, device="cuda")
    bias = genesis.randn(args.cols, device="cuda")

    diff = (fused(kernel, x, bias) - composed(x, bias)).abs().max().item()
    print(f"max |fused - composed| = {diff:.3g}")
    fused_ms = time_ms(lambda: fused(kernel, x, bias))
    composed_ms = time_ms(lambda: composed(x, bias))
    print(f"fused kernel {fused_ms:.3f} ms, Genesis ops {composed_ms:.3f} ms "
          f"({composed_ms / fused_ms:.2f}x)")


if __name__ == "__main__":
    main()
