"""Casts before mixed elementwise ops on the simulated CUDA device (benchmarks/simulated_cuda.py),
run by test_half_operands_sim.py in a process of its own (the simulation replaces the driver
layer).

A binary op of a float16/bfloat16 tensor and a float32 one (autocast's output added to a float32
residual stream) is one launch: the kernel reads the half-type operand as float32, as PyTorch's
does, with no cast kernel before it. Where no float32 tensor takes part (a half tensor computed
in float32 beside another half type) the casts stay. Prints "all checks passed" at the end.
"""

import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import simulated_cuda  # noqa: E402

simulated_cuda.install()

import genesis  # noqa: E402
from genesis.backends.cuda import launch  # noqa: E402

LAUNCHES = collections.Counter()
_call = launch.BoundKernel.__call__


def _counting_call(self, grid, stream, *args):
    LAUNCHES[self.name] += 1
    return _call(self, grid, stream, *args)


def launches(fn):
    """(fn's result, the kernels it launched by name)."""
    LAUNCHES.clear()
    launch.BoundKernel.__call__ = _counting_call
    try:
        result = fn()
    finally:
        launch.BoundKernel.__call__ = _call
    return result, dict(LAUNCHES)


def check_one_launch(name, fn, dtype):
    fn()  # compiled and planned
    out, counts = launches(fn)
    assert out.dtype is dtype, (name, out.dtype)
    assert sum(counts.values()) == 1, (name, counts)


def main():
    x = genesis.randn(4, 96, device="cuda")
    row = genesis.randn(96, device="cuda")
    for half in (genesis.bfloat16, genesis.float16):
        h = genesis.randn(4, 96, device="cuda").to(half)
        check_one_launch("x + h", lambda: x + h, genesis.float32)
        check_one_launch("h * x", lambda: h * x, genesis.float32)
        check_one_launch("h - row (broadcast)", lambda: h - row, genesis.float32)
        check_one_launch("h.t() / x.t()", lambda: h.t() / x.t(), genesis.float32)
        check_one_launch("x < h", lambda: x < h, genesis.bool)
        _, counts = launches(lambda: h + genesis.tensor(0.5))  # a half result: nothing widens
        assert sum(counts.values()) == 1, counts
    b16, f16 = (genesis.randn(4, 96, device="cuda").to(t) for t in (genesis.bfloat16,
                                                                    genesis.float16))
    out, counts = launches(lambda: b16 + f16)  # float32 with no float32 operand: both cast
    assert out.dtype is genesis.float32 and counts.get("_copy_contiguous_kernel") == 2, counts
    print("all checks passed")


if __name__ == "__main__":
    main()
