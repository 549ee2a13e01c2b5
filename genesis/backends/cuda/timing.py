"""Device time of a call: CUDA events around it, queued behind an L2 flush.

Zeroing a buffer larger than the L2 cache before each timed call evicts what earlier calls left
there (a training step rarely finds its inputs in L2), and keeps the GPU busy while the host
enqueues the call, so the events time the kernels rather than the host's launch overhead. The
autotuner and `genesis.utils.benchmark` both time this way, through one flush buffer per device
that a timing holds only while it runs: after it the allocator's cache keeps the memory, so a
process that tuned its kernels has none of it allocated.
"""

from .runtime import driver
from .runtime.array import CUDAArray
from .runtime.device import current_device
from .runtime.stream import Event, current_stream_handle

L2_FLUSH_BYTES = 64 << 20  # above the 50 MB L2 of an H100 or H200
_flush_buffers = {}  # device index -> CUDAStorage, as large as the largest flush asked for


def flush_l2(nbytes=L2_FLUSH_BYTES):
    """Queue the zeroing of `nbytes` of the current device's flush buffer on its current stream."""
    device = current_device()
    buf = _flush_buffers.get(device)
    if buf is None or buf.nbytes < nbytes:
        buf = _flush_buffers[device] = CUDAArray.empty((nbytes,), "uint8", device).storage
    driver.memset_d8(buf.ptr, 0, nbytes, current_stream_handle(device))


def time_calls(run, reps, flush_bytes=L2_FLUSH_BYTES):
    """Milliseconds of each of `reps` calls of `run()`, sorted; each call is timed by a pair of
    events on the current stream, behind a flush of `flush_bytes`."""
    pairs = [(Event(enable_timing=True), Event(enable_timing=True)) for _ in range(reps)]
    try:
        for start, end in pairs:
            flush_l2(flush_bytes)
            start.record()
            run()
            end.record()
        pairs[-1][1].synchronize()
    finally:
        _flush_buffers.pop(current_device(), None)  # freed in stream order
    return sorted(start.elapsed_time(end) for start, end in pairs)
