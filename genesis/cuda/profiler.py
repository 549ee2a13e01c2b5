"""Kernel profiling for users: `enable_profiling`, `GPUProfiler` (stats, summary, Chrome trace).

Both attach a recorder to `genesis.backends.cuda.profiling`, which times every Triton kernel
launch and every library region with CUDA events on the stream it runs on (device time) and with
the host clock (launch cost). Nothing is recorded, and nothing costs, while neither is active.
"""

import contextlib
import json
import os
import sys

from ..backends.cuda import profiling


class _Printer:
    """The recorder behind `enable_profiling`: waits for each record and prints it."""

    def __init__(self, file=None):
        self.file = file

    def add(self, rec):
        rec.resolve()
        grid = f" grid={'x'.join(map(str, rec.grid))}" if rec.grid else ""
        print(f"{'  ' * rec.depth}{rec.name}: {rec.device_us / 1e3:.4f} ms "
              f"(host {rec.host_us:.1f} us{grid})", file=self.file or sys.stdout)


_printer = None


def enable_profiling(enabled=True, file=None):
    """Print every kernel launch and profiled region with its device time as it completes.

    Each record is printed right after its launch: the host waits for the kernel to finish, so
    the timings are per launch and the program runs slower while profiling is on.
    """
    global _printer
    if _printer is not None:
        profiling.detach(_printer)
        _printer = None
    if enabled:
        _printer = _Printer(file)
        profiling.attach(_printer)


def is_profiling_enabled():
    return _printer is not None


def _summarize(name, recs):
    device = [r.device_us for r in recs]
    host = [r.host_us for r in recs]
    total = sum(device)
    return {
        "name": name, "kind": recs[0].kind, "calls": len(recs), "count": len(recs),
        "total_us": total, "mean_us": total / len(recs), "min_us": min(device),
        "max_us": max(device), "host_total_us": sum(host), "host_mean_us": sum(host) / len(host),
        "mean": total / len(recs) / 1e6, "min": min(device) / 1e6, "max": max(device) / 1e6,
    }


class GPUProfiler:
    """Records kernel launches and regions while active (`with GPUProfiler() as prof:` or
    start/stop); `get_stats`, `print_summary` and `export_chrome_trace` report them.

    Stats are per name (kernel label with its specialization, or region name): calls, total,
    mean, min and max device microseconds, and host microseconds spent launching; also `count`,
    and `mean`/`min`/`max` in seconds.
    """

    def __init__(self):
        self.records = []

    def add(self, rec):
        self.records.append(rec)

    def start(self):
        profiling.attach(self)
        return self

    def stop(self):
        profiling.detach(self)
        self._resolve()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def active(self):
        return self in profiling._recorders

    def _resolve(self):
        for rec in self.records:
            rec.resolve()
        return self.records

    def clear(self):
        self.records = []

    @contextlib.contextmanager
    def _recording(self, on):
        """Attach (on=True) or detach (on=False) for the block, then restore the previous state."""
        was = self.active
        (profiling.attach if on else profiling.detach)(self)
        try:
            yield
        finally:
            if was != on:
                (profiling.attach if was else profiling.detach)(self)

    @contextlib.contextmanager
    def _operation(self, name, args):
        with self._recording(True), profiling.region(name, **args):
            yield

    def profile_operation(self, name, fn=None, *args, warmup=3, iters=10, **kwargs):
        """Time `fn(*args, **kwargs)` as region `name`: `warmup` unrecorded calls, then `iters`
        recorded ones; returns the region's stats. Without `fn`, a context manager that records
        its block as region `name` (`with prof.profile_operation("add"): ...`).
        """
        if fn is None:
            return self._operation(name, kwargs)
        with self._recording(False):
            for _ in range(warmup):
                fn(*args, **kwargs)
        with self._recording(True):
            for _ in range(iters):
                with profiling.region(name):
                    fn(*args, **kwargs)
        return self.get_stats(name)

    def get_stats(self, name=None):
        """{name: stats} for every kernel and region, or one name's stats (None if unseen)."""
        groups = {}
        for rec in self._resolve():
            groups.setdefault(rec.name, []).append(rec)
        if name is not None:
            return _summarize(name, groups[name]) if name in groups else None
        return {n: _summarize(n, recs) for n, recs in groups.items()}

    def summary(self, sort_by="total_us", limit=None):
        """The stats as a text table, the largest `sort_by` first."""
        rows = sorted(self.get_stats().values(), key=lambda s: -s[sort_by])[:limit]
        width = max([len(r["name"]) for r in rows] + [4])
        head = (f"{'Name':<{width}}  {'Kind':<6}  {'Calls':>6}  {'Total us':>11}  {'Mean us':>10}"
                f"  {'Min us':>10}  {'Max us':>10}  {'Host us':>9}")
        lines = [head, "-" * len(head)]
        for r in rows:
            lines.append(f"{r['name']:<{width}}  {r['kind']:<6}  {r['calls']:>6}  "
                         f"{r['total_us']:>11.2f}  {r['mean_us']:>10.2f}  {r['min_us']:>10.2f}  "
                         f"{r['max_us']:>10.2f}  {r['host_mean_us']:>9.2f}")
        return "\n".join(lines)

    def print_summary(self, sort_by="total_us", limit=None, file=None):
        print(self.summary(sort_by, limit), file=file or sys.stdout)

    def trace_events(self):
        """Chrome trace events: one complete ("X") event per record on its device/stream track
        and one for its host launch on the host track, microseconds from the first event."""
        recs = self._resolve()
        device_ts = [rec.base[1] / 1e3 + rec.start_us for rec in recs]
        host_ts = [rec.host_start_ns / 1e3 for rec in recs]
        origin = min(device_ts + host_ts, default=0.0)
        tracks, events = {}, []
        for rec, dts, hts in zip(recs, device_ts, host_ts):
            tid = tracks.setdefault((rec.device, rec.stream), len(tracks))
            args = dict(rec.args or {})
            if rec.grid:
                args["grid"] = list(rec.grid)
            common = {"name": rec.name, "cat": rec.kind, "ph": "X", "args": args}
            events.append({**common, "pid": rec.device + 1, "tid": tid, "ts": dts - origin,
                           "dur": rec.device_us})
            events.append({**common, "cat": f"host_{rec.kind}", "pid": 0, "tid": rec.thread,
                           "ts": hts - origin, "dur": rec.host_us})
        return _track_names(tracks) + events

    def export_chrome_trace(self, path):
        """Write the trace as Chrome trace event JSON (opens in Perfetto and chrome://tracing)."""
        with open(path, "w") as f:
            json.dump({"traceEvents": self.trace_events(), "displayTimeUnit": "ms"}, f,
                      default=_json_value)
        return path


def _json_value(value):
    """numpy scalars as Python numbers, anything else JSON cannot hold as its str."""
    return value.item() if hasattr(value, "item") else str(value)


def _track_names(tracks):
    """Metadata events naming the processes (pid 0: the host, pid d+1: cuda:d) and the stream
    tracks."""
    meta = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
             "args": {"name": f"host (pid {os.getpid()})"}}]
    for device in sorted({d for d, _ in tracks}):
        meta.append({"name": "process_name", "ph": "M", "pid": device + 1, "tid": 0,
                     "args": {"name": f"cuda:{device}"}})
    for (device, stream), tid in tracks.items():
        label = "default stream" if stream == 0 else f"stream {stream:#x}"
        meta.append({"name": "thread_name", "ph": "M", "pid": device + 1, "tid": tid,
                     "args": {"name": label}})
    return meta
