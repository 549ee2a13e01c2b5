"""Device time of a call: CUDA events around it, queued behind an L2 flush.

Zeroing a buffer larger than the L2 cache before each timed call evicts what earlier calls left
there (a training step rarely finds its inputs in L2), and keeps the GPU busy while the host
enqueues the call, so the events time the kernels rather than the host's launch overhead. One
zeroing (64 MB, some 20 us) is not always enough: a slow host queues a call of short kernels
more slowly than they run (two launches and an allocation took it 50 to 80 us on an H200's
host), and the gaps it leaves land between the events. So the buffer is zeroed as many times
as keep the GPU busy for twice the host's time to queue one call (`flush_passes`): on that
host a 31 us split-K product then timed 31.5 us instead of 84. The autotuner and
`genesis.utils.benchmark` both time this way, through one flush buffer per device that a
timing holds only while it runs: after it the allocator's cache keeps the memory, so a process
that tuned its kernels has none of it allocated.
"""

import math
import time

from .runtime import driver
from .runtime.array import CUDAArray
from .runtime.device import current_device
from .runtime.stream import Event, current_stream_handle

L2_FLUSH_BYTES = 64 << 20  # above the 50 MB L2 of an H100 or H200
MAX_FLUSH_PASSES = 16
_flush_buffers = {}  # device index -> CUDAStorage, as large as the largest flush asked for


def flush_l2(nbytes=L2_FLUSH_BYTES, passes=1):
    """Queue `passes` zeroings of `nbytes` of the current device's flush buffer on its current
    stream."""
    device = current_device()
    buf = _flush_buffers.get(device)
    if buf is None or buf.nbytes < nbytes:
        buf = _flush_buffers[device] = CUDAArray.empty((nbytes,), "uint8", device).storage
    stream = current_stream_handle(device)
    for _ in range(passes):
        driver.memset_d8(buf.ptr, 0, nbytes, stream)


def flush_passes(queue_seconds, flush_seconds):
    """Zeroings to queue before a timed call: as many as keep the GPU busy for twice the
    host's `queue_seconds` to queue the call, each taking `flush_seconds` (1 to
    MAX_FLUSH_PASSES)."""
    wanted = math.ceil(2 * queue_seconds / max(flush_seconds, 1e-9))
    return max(1, min(MAX_FLUSH_PASSES, wanted))


def _measured_passes(run, flush_bytes):
    """flush_passes for `run`: one zeroing timed by events, one call of `run` by the host's
    clock (both queued, neither timed with the other)."""
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    start.record()
    flush_l2(flush_bytes)
    end.record()
    queued = time.perf_counter()
    run()
    queued = time.perf_counter() - queued
    end.synchronize()
    return flush_passes(queued, start.elapsed_time(end) * 1e-3)


def time_calls(run, reps, flush_bytes=L2_FLUSH_BYTES):
    """Milliseconds of each of `reps` calls of `run()`, sorted; each call is timed by a pair of
    events on the current stream, behind `flush_passes` zeroings of `flush_bytes`."""
    pairs = [(Event(enable_timing=True), Event(enable_timing=True)) for _ in range(reps)]
    try:
        passes = _measured_passes(run, flush_bytes)
        for start, end in pairs:
            flush_l2(flush_bytes, passes)
            start.record()
            run()
            end.record()
        pairs[-1][1].synchronize()
    finally:
        _flush_buffers.pop(current_device(), None)  # freed in stream order
    return sorted(start.elapsed_time(end) for start, end in pairs)
