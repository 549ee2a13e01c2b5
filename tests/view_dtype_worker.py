"""Tensor.view(dtype) on the simulated CUDA device (benchmarks/simulated_cuda.py), run by
test_view_dtype.py in a process of its own (the simulation replaces the driver layer).

Values are never computed there, so the checks look at metadata: the view is a CUDAArray over
the input's allocation, at torch's strides and offset, launching no kernel. Prints "all checks
passed" at the end.
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import simulated_cuda  # noqa: E402

simulated_cuda.install()

import genesis  # noqa: E402
from genesis.backends.cuda import launch  # noqa: E402


def _no_launch(self, grid, stream, *args):
    raise AssertionError(f"view(dtype) launched {self.name}")


def check_view(x, dtype, shape, strides, offset):
    """x.view(dtype) has this geometry over x's allocation and launches nothing."""
    call, launch.BoundKernel.__call__ = launch.BoundKernel.__call__, _no_launch
    try:
        y = x.view(dtype)
    finally:
        launch.BoundKernel.__call__ = call
    assert y.device == x.device and y.dtype is dtype, (y.device, y.dtype)
    assert (tuple(y.shape), y.stride(), y.storage_offset()) == (shape, strides, offset), \
        (tuple(y.shape), y.stride(), y.storage_offset())
    assert y._data.storage is x._data.storage
    assert y._data.dtype == dtype.numpy_dtype
    assert y.data_ptr() == x.data_ptr()
    assert y._version_counter is x._version_counter
    return y


def main():
    x = genesis.empty(4, 6, device="cuda")
    check_view(x, genesis.int32, (4, 6), (6, 1), 0)
    check_view(x[:, 2:], genesis.int64, (4, 2), (3, 1), 1)
    check_view(x[1:, 1:5], genesis.bfloat16, (3, 8), (12, 1), 14)
    check_view(x.t(), genesis.int32, (6, 4), (1, 6), 0)
    y = check_view(x[:, 2:].view(genesis.uint8), genesis.float32, (4, 4), (6, 1), 2)
    assert y._storage.shape == x._storage.shape
    odd = genesis.empty(3, dtype=genesis.float16, device="cuda")
    check_view(odd[:2], genesis.float32, (1,), (1,), 0)
    try:
        x[:, 1:5].view(genesis.float64)
    except RuntimeError as e:
        assert "storage_offset() must be divisible by 2" in str(e), str(e)
    else:
        raise AssertionError("an odd offset viewed as float64")
    print("all checks passed")


if __name__ == "__main__":
    main()
