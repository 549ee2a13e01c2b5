"""Profiling hooks of the CUDA backend: kernel launches and named regions, timed with CUDA events.

Off by default, and then free: `region(name)` checks one module flag and returns a shared no-op
context, and kernel launches go through `BoundKernel.__call__` untouched. While a recorder is
attached (`genesis.cuda.GPUProfiler`, `genesis.cuda.enable_profiling`), `BoundKernel.__call__`
is swapped for a recording one: every launch and every region brackets its work with two events
on the stream it runs on and with the host clock, and hands a `Record` to each recorder.
Library calls that launch no Triton kernel are wrapped by their callers:
`with profiling.region("cublaslt.matmul", stream, m=m, n=n, k=k): ...`.

`timer` is the event source (CUDA events on the real device); tests swap in a fake one.
"""

import contextlib
import threading
import time

_active = False
_recorders = []
_lock = threading.Lock()
_local = threading.local()
_kernel_info = {}
_saved_call = None


class CudaTimer:
    """Timing events from the driver: pooled per device, recorded on raw stream handles."""

    def __init__(self):
        self._pools = {}
        self._bases = {}

    def base(self, device, stream):
        """The reference event of `device` (device times are measured from it), its host time."""
        base = self._bases.get(device)
        if base is None:
            event = self.event(device)
            self.record(event, stream)
            base = self._bases[device] = (event, self.clock_ns())
        return base

    def device(self):
        from .runtime.device import current_device
        return current_device()

    def stream(self, device):
        from .runtime.stream import current_stream_handle
        return current_stream_handle(device)

    def event(self, device):
        pool = self._pools.get(device)
        if pool:
            return pool.pop()
        from .runtime import driver
        from .runtime.device import activate
        activate(device)
        return driver.event_create(enable_timing=True)

    def release(self, device, event):
        self._pools.setdefault(device, []).append(event)

    def record(self, event, stream):
        from .runtime import driver
        driver.event_record(event, stream)

    def synchronize(self, event):
        from .runtime import driver
        driver.event_synchronize(event)

    def elapsed_ms(self, start, end):
        from .runtime import driver
        return driver.event_elapsed_ms(start, end)

    def clock_ns(self):
        return time.perf_counter_ns()


timer = CudaTimer()


class Record:
    """One timed launch or region; `device_us`/`start_us` are filled in by `resolve`."""

    __slots__ = ("kind", "name", "device", "stream", "grid", "args", "depth", "parent", "thread",
                 "host_start_ns", "host_end_ns", "start_event", "end_event", "base",
                 "start_us", "device_us")

    def __init__(self, kind, name, device, stream, grid, args, depth, parent):
        self.kind = kind
        self.name = name
        self.device = device
        self.stream = stream
        self.grid = grid
        self.args = args
        self.depth = depth
        self.parent = parent
        self.thread = threading.get_native_id()
        self.start_us = self.device_us = None

    @property
    def host_us(self):
        return (self.host_end_ns - self.host_start_ns) / 1e3

    def resolve(self):
        """Wait for the end event, read the device times, give the events back to the pool."""
        if self.device_us is not None:
            return self
        base_event, _ = self.base
        timer.synchronize(base_event)
        timer.synchronize(self.end_event)
        self.start_us = timer.elapsed_ms(base_event, self.start_event) * 1e3
        self.device_us = max(timer.elapsed_ms(self.start_event, self.end_event) * 1e3, 0.0)
        timer.release(self.device, self.start_event)
        timer.release(self.device, self.end_event)
        self.start_event = self.end_event = None
        return self


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _begin(kind, name, stream, grid, args):
    device = timer.device()
    if stream is None:
        stream = timer.stream(device)
    stack = _stack()
    rec = Record(kind, name, device, stream, grid, args, len(stack),
                 stack[-1].name if stack else None)
    rec.base = timer.base(device, stream)
    rec.start_event = timer.event(device)
    timer.record(rec.start_event, stream)
    rec.host_start_ns = timer.clock_ns()
    return rec


def _end(rec):
    rec.host_end_ns = timer.clock_ns()
    rec.end_event = timer.event(rec.device)
    timer.record(rec.end_event, rec.stream)
    for recorder in tuple(_recorders):
        recorder.add(rec)


class _Region:
    """A live profiled region: records its span on the current stream of the current device."""

    __slots__ = ("name", "stream", "args", "rec")

    def __init__(self, name, stream, args):
        self.name = name
        self.stream = stream
        self.args = args

    def __enter__(self):
        self.rec = _begin("region", self.name, self.stream, None, self.args)
        _stack().append(self.rec)
        return self.rec

    def __exit__(self, *exc):
        _stack().pop()
        _end(self.rec)
        return False


_NULL = contextlib.nullcontext()


def region(name, stream=None, **args):
    """`with region("cublaslt.matmul", stream, m=m): ...` times the block when profiling is on,
    on `stream` (a raw handle; the current stream by default); `args` go into the trace."""
    if not _active:
        return _NULL
    return _Region(name, stream, args)


def is_enabled():
    return _active


def kernel_info(bound):
    """(label, fields) of a BoundKernel: "_add[fp32 BLOCK=1024 w4]" and, per runtime argument,
    its name, or None for pointers and constants (only sizes and scalars are reported)."""
    entry = _kernel_info.get(id(bound))
    if entry is None or entry[0] is not bound:
        entry = _kernel_info[id(bound)] = (bound, _describe(bound))
    return entry[1]


def _describe(bound):
    from . import launch
    for key, value in list(launch._cache.items()):
        if value is bound:
            _, signature, constexprs, aligned, num_warps = key[:5]
            return _label(bound.name, signature, constexprs, aligned, num_warps)
    return bound.name, ()


def _label(name, signature, constexprs, aligned, num_warps):
    """A short specialization summary: pointer dtypes, constexpr values (unused None ones left
    out), alignment, warps."""
    dtypes = []
    for _, kind in signature:
        if kind.startswith("*") and kind[1:] not in dtypes:
            dtypes.append(kind[1:])
    parts = ["/".join(dtypes)] if dtypes else []
    parts += [f"{k}={getattr(v, '__name__', v)}" for k, v in constexprs if v is not None]
    if aligned:
        parts.append("aligned")
    parts.append(f"w{num_warps}")
    fields = tuple(None if kind.startswith("*") or kind == "constexpr" else n
                   for n, kind in signature)
    return f"{name}[{' '.join(parts)}]", fields


def _grid3(grid):
    return (tuple(grid) + (1, 1))[:3]


def _profiled_call(bound, grid, stream, *args):
    """BoundKernel.__call__ while profiling: the original launch between two events."""
    label, fields = kernel_info(bound)
    sizes = {n: v for n, v in zip(fields, args) if n is not None}
    rec = _begin("kernel", label, stream, _grid3(grid), sizes)
    _saved_call(bound, grid, stream, *args)
    _end(rec)


def attach(recorder):
    """Start handing records to `recorder` (an object with `add(record)`); turns profiling on."""
    global _active, _saved_call
    from .launch import BoundKernel
    with _lock:
        if recorder in _recorders:
            return
        _recorders.append(recorder)
        if not _active:
            _saved_call = BoundKernel.__call__
            BoundKernel.__call__ = _profiled_call
            _active = True


def detach(recorder):
    """Stop handing records to `recorder`; profiling turns off with the last one."""
    global _active, _saved_call
    from .launch import BoundKernel
    with _lock:
        if recorder not in _recorders:
            return
        _recorders.remove(recorder)
        if not _recorders and _active:
            BoundKernel.__call__ = _saved_call
            _saved_call = None
            _active = False
