"""Performance tools for CUDA: memory-bandwidth analysis of an op, and ahead-of-time kernel
warm-up. `genesis.cuda` re-exports the public ones, as PyTorch keeps them under torch.cuda."""

import statistics
import sys
import time

from ... import dtypes as _dtypes
from ...backends.cuda.timing import time_calls

FLUSH_BYTES = 256 << 20  # the L2 flush before each timed call, and the peak-copy buffers
_peaks = {}


def _cuda():
    from ... import cuda
    return cuda


def _raw_buffer(nbytes):
    from ...backends.cuda.runtime.array import CUDAArray
    return CUDAArray.empty((nbytes,), "uint8", _cuda().current_device()).storage


def time_device_us(fn, warmup=3, reps=10):
    """Median device time of `fn()` in microseconds: CUDA events around each call, the L2 cache
    flushed before each."""
    for _ in range(warmup):
        fn()
    return statistics.median(time_calls(fn, reps, FLUSH_BYTES)) * 1e3


def measured_peak_bandwidth(device=None):
    """Bytes/s of a 256 MB device-to-device copy (read plus write), measured once per device."""
    from ...backends.cuda.runtime import driver
    from ...backends.cuda.runtime.stream import current_stream_handle
    cuda = _cuda()
    index = cuda.current_device() if device is None else cuda._index(device)
    if index not in _peaks:
        with cuda.device(index):
            src, dst = _raw_buffer(FLUSH_BYTES), _raw_buffer(FLUSH_BYTES)

            def copy():
                driver.memcpy_dtod(dst.ptr, src.ptr, FLUSH_BYTES, current_stream_handle(index))
            _peaks[index] = 2 * FLUSH_BYTES / (time_device_us(copy) * 1e-6)
    return _peaks[index]


def _nbytes(out):
    if isinstance(out, (tuple, list)):
        return sum(_nbytes(o) for o in out)
    return out.numel() * out.dtype.itemsize if hasattr(out, "numel") else 0


def _inputs(size, dtype, count):
    """`count` standard-normal cuda tensors of shape `size` (drawn on the host, cast on device)."""
    import numpy as np

    import genesis
    shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    rng = np.random.default_rng()
    return [genesis.tensor(rng.standard_normal(shape, dtype=np.float32), device="cuda").to(dtype)
            for _ in range(count)]


def analyze_memory_bandwidth(op, sizes, dtype=_dtypes.float32, num_inputs=2, warmup=3, reps=10,
                             verbose=True, file=None):
    """Achieved memory bandwidth of `op(*inputs)` for each size (an int or a shape).

    `num_inputs` random cuda tensors of that size and `dtype` are made (2 by default: a binary
    op). Bytes moved are the ideal traffic: every input read once plus the output
    written once; the time is the median over `reps` calls timed with CUDA events, L2 flushed
    before each. `fraction` compares with `measured_peak_bandwidth()` (a device-to-device copy,
    measured once per process). Returns one dict per size; prints a table when `verbose`.
    """
    peak = measured_peak_bandwidth()
    results = []
    for size in sizes:
        xs = _inputs(size, dtype, num_inputs)
        out = op(*xs)
        moved = sum(_nbytes(x) for x in xs) + _nbytes(out)
        del out
        us = time_device_us(lambda xs=xs: op(*xs), warmup, reps)
        bandwidth = moved / (us * 1e-6)
        results.append({
            "size": size, "elements": xs[0].numel() if xs else 0, "bytes": moved,
            "elapsed_ms": us / 1e3, "bandwidth_gb_s": bandwidth / 1e9,
            "peak_gb_s": peak / 1e9, "fraction": bandwidth / peak,
            "efficiency_percent": 100 * bandwidth / peak,
        })
    if verbose:
        print(bandwidth_table(results, getattr(op, "__name__", "op")), file=file or sys.stdout)
    return results


def bandwidth_table(results, name="op"):
    """The results of `analyze_memory_bandwidth` as a text table."""
    head = f"{'size':>18}  {'MB moved':>10}  {'time us':>10}  {'GB/s':>9}  {'of peak':>8}"
    lines = [f"{name}: bandwidth (peak = measured device-to-device copy)", head, "-" * len(head)]
    for r in results:
        lines.append(f"{r['size']!s:>18}  {r['bytes'] / 1e6:>10.2f}  "
                     f"{r['elapsed_ms'] * 1e3:>10.2f}  {r['bandwidth_gb_s']:>9.1f}  "
                     f"{r['fraction']:>8.1%}")
    return "\n".join(lines)


def _elementwise_ops(x, y, dtype):
    import genesis
    import genesis.nn.functional as F
    ops = [lambda: x + y, lambda: x * y, lambda: x + 1, lambda: x.clone()]
    if dtype is not _dtypes.bool_:
        ops += [lambda: x - y, lambda: -x]
    if dtype.is_floating_point:
        ops += [lambda: x / y, lambda: x * 0.5, lambda: x.exp(), lambda: x.tanh(),
                lambda: x.sigmoid(), lambda: F.relu(x), lambda: F.gelu(x), lambda: F.silu(x),
                lambda: x.to(genesis.float32)]
    return ops


def _row_ops(rows, dtype):
    import genesis
    import genesis.nn.functional as F

    from ...dispatch import has_kernel
    ops = [lambda: rows.sum(-1), lambda: rows.max(-1)]
    if dtype.is_floating_point:
        ops += [lambda: rows.mean(-1), lambda: genesis.softmax(rows, -1),
                lambda: genesis.log_softmax(rows, -1), lambda: F.layer_norm(rows, rows.shape[-1:])]
        if has_kernel("matmul", "cuda"):
            m = rows[:, :64].contiguous()
            ops.append(lambda: genesis.matmul(m, m.transpose(0, 1)))
    return ops


def warm_up_kernels(dtypes=(_dtypes.float32, _dtypes.float16, _dtypes.bfloat16),
                    sizes=(1023, 4096), verbose=False):
    """Compile the common kernel specializations ahead of the first real call.

    Runs the hot ops on small cuda tensors of each dtype and size: elementwise binary, unary and
    scalar ops and casts on 16-byte-aligned and on unaligned (offset by one element) contiguous
    inputs; last-dim reductions, softmax/log_softmax and LayerNorm on (4, size) rows; matmul when
    a kernel is registered. Each op goes through its own kernel's specialization path, so the
    compiled kernels are the ones later calls reuse. Returns {"compiled": new specializations,
    "seconds": wall time, "total": specializations now cached}.
    """
    import genesis

    from ...backends.cuda import launch
    before, t0 = len(launch._cache), time.perf_counter()
    for dtype in dtypes:
        for n in sizes:
            x, y = (genesis.ones(n + 1, dtype=dtype, device="cuda") for _ in range(2))
            rows = genesis.ones(4, n, dtype=dtype, device="cuda")
            ops = _elementwise_ops(x[:n], y[:n], dtype) + _elementwise_ops(x[1:], y[1:], dtype)
            for run in ops + _row_ops(rows, dtype):
                run()
    _cuda().synchronize()
    result = {"compiled": len(launch._cache) - before, "seconds": time.perf_counter() - t0,
              "total": len(launch._cache)}
    if verbose:
        print(f"warm_up_kernels: {result['compiled']} specializations compiled in "
              f"{result['seconds']:.2f} s")
    return result
