"""The host cost of one kernel launch, by path, beside torch's whole small op (GPU only).

An empty Triton kernel (one program that stores nothing) is launched back to back: through
Genesis's BoundKernel, through Triton's C launcher with its argument tuple built once, and
straight to the driver's cuLaunchKernel through cuda-bindings and through ctypes (parameters
built once). torch's `t + t` and `t.add_(1)` on one element give its whole host path for
comparison. Figures are the best of 7 repeats of 4000 calls, in microseconds per call.

    python benchmarks/launch.py [--json PATH]
"""

import argparse
import ctypes
import json
import time

import triton
import triton.language as tl

import genesis
from genesis.backends.cuda.launch import get_kernel


@triton.jit
def _empty_kernel(x, n, BLOCK: tl.constexpr):
    if tl.program_id(0) < 0:  # never true: the launch is all that is timed
        tl.store(x, n)


def host_us(fn, sync, calls=4000, repeats=7):
    for _ in range(200):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
        sync()
    return best


def launch_paths(ptr):
    """name -> a no-argument callable launching the empty kernel once."""
    bound = get_kernel(_empty_kernel, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 128})
    compiled, threads = bound.compiled, 32 * bound.compiled.metadata.num_warps
    c_args = (1, 1, 1, 0) + bound._head + (ptr, 1, 128)
    paths = {"genesis BoundKernel": lambda: bound((1,), 0, ptr, 1),
             "triton C launcher, arguments prebuilt": lambda: bound._run(*c_args)}
    from cuda.bindings import driver as cu
    function, stream = cu.CUfunction(compiled.function), cu.CUstream(0)
    params = ((ptr, 1, 0, 0), (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p))
    paths["cuLaunchKernel via cuda-bindings"] = lambda: cu.cuLaunchKernel(
        function, 1, 1, 1, threads, 1, 1, 0, stream, params, 0)
    launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    values = [ctypes.c_uint64(ptr), ctypes.c_int32(1), ctypes.c_uint64(0), ctypes.c_uint64(0)]
    pointers = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in values])
    paths["cuLaunchKernel via ctypes, parameters prebuilt"] = lambda: launch(
        compiled.function, 1, 1, 1, threads, 1, 1, 0, None, pointers, None)
    return paths


def main():
    import torch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures as JSON to this path")
    args = parser.parse_args()
    x = genesis.zeros(1, device="cuda")
    rows = {name: host_us(fn, genesis.cuda.synchronize)
            for name, fn in launch_paths(x._data.ptr).items()}
    t = torch.ones(1, device="cuda")
    rows["genesis x + x, 1 element"] = host_us(lambda: x + x, genesis.cuda.synchronize)
    rows["torch t + t, 1 element"] = host_us(lambda: t + t, torch.cuda.synchronize)
    rows["torch t.add_(1), 1 element"] = host_us(lambda: t.add_(1), torch.cuda.synchronize)
    for name, us in rows.items():
        print(f"{name:50s}{us:8.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"us_per_call": rows, "device": genesis.cuda.get_device_name()}, f, indent=2)


if __name__ == "__main__":
    main()
