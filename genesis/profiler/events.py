"""What a profile hands back, with torch.autograd.profiler_util's names and arithmetic.

`FunctionEvent`: one op, `record_function` range or device kernel; times in microseconds; an op's
device time is that of the kernels it launched plus its children's. `FunctionEventAvg`: the sum of
the events of one key. `EventList`: a list of either, with `key_averages`, `table` (PyTorch's
layout and column names) and `export_chrome_trace`.
"""

import enum
import gzip
import json
import os
from collections import defaultdict


class DeviceType(enum.Enum):
    """Where an event ran: the host (ops, ranges) or the GPU (kernels)."""

    CPU = 0
    CUDA = 1


class Interval:
    """A span of time in microseconds."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _formatted(name):
    return property(lambda self: _format_time(getattr(self, name)))


class _Times:
    """Averages, PyTorch's deprecated cuda_* aliases and the formatted times both event kinds
    share; a subclass defines the `*_time_total` attributes and `count`."""

    cpu_time_str = _formatted("cpu_time")
    device_time_str = _formatted("device_time")
    cpu_time_total_str = _formatted("cpu_time_total")
    device_time_total_str = _formatted("device_time_total")
    self_cpu_time_total_str = _formatted("self_cpu_time_total")
    self_device_time_total_str = _formatted("self_device_time_total")

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total


class FunctionEvent(_Times):
    """One recorded op, range or kernel. `name` is the key ("aten::add", a range's name,
    "ProfilerStep*" for every step); `trace_name` is what the Chrome trace shows."""

    count = 1
    node_id = -1
    overload_name = ""
    is_async = False
    is_remote = False
    is_legacy = False
    sequence_nr = -1
    scope = 0
    flops = 0
    allocated = (0, 0)  # bytes of the fresh results of this event's own work: (host, device)

    def __init__(self, id, name, thread, start_us, end_us=None, input_shapes=(), stack=(),
                 device_type=DeviceType.CPU, is_user_annotation=False, use_device=None,
                 trace_name=None, device_index=0, args=None):
        self.id = id
        self.name = name
        self.trace_name = trace_name or name
        self.thread = thread
        self.time_range = Interval(start_us, start_us if end_us is None else end_us)
        self.input_shapes = list(input_shapes)
        self.stack = list(stack)
        self.device_type = device_type
        self.device_index = device_index
        self.is_user_annotation = is_user_annotation
        self.use_device = use_device
        self.args = args or {}
        self.cpu_parent = None
        self.cpu_children = []
        self.kernels = []

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us() if self.device_type is DeviceType.CPU else 0.0

    @property
    def self_cpu_time_total(self):
        if self.device_type is not DeviceType.CPU:
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if not self.use_device:
            return 0.0
        if self.device_type is DeviceType.CPU:
            return (sum(k.device_time_total for k in self.kernels)
                    + sum(c.device_time_total for c in self.cpu_children))
        return self.time_range.elapsed_us()

    @property
    def self_device_time_total(self):
        if not self.use_device:
            return 0.0
        if self.device_type is DeviceType.CPU:
            return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)
        return self.device_time_total

    @property
    def self_cpu_memory_usage(self):
        return self.allocated[0]

    @property
    def self_device_memory_usage(self):
        return self.allocated[1]

    @property
    def cpu_memory_usage(self):
        return self.allocated[0] + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def device_memory_usage(self):
        return self.allocated[1] + sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self):
        device = self.use_device
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"device_type={self.device_type} node_id={self.node_id} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start} "
                f"end_us={self.time_range.end} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"{device}_time={self.device_time_str} name={self.name} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{device}_memory_usage={self.device_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(_Times):
    """The events of one key summed: totals, self totals and count; the other fields are the
    first event's."""

    _COPIED = ("key", "node_id", "is_async", "is_remote", "cpu_parent", "cpu_children",
               "overload_name", "input_shapes", "stack", "scope", "device_type", "is_legacy",
               "use_device", "is_user_annotation")
    _SUMMED = ("cpu_time_total", "device_time_total", "self_cpu_time_total",
               "self_device_time_total", "cpu_memory_usage", "device_memory_usage",
               "self_cpu_memory_usage", "self_device_memory_usage", "count", "flops")

    def __init__(self):
        self.key = None
        self.node_id = 0
        self.is_async = self.is_remote = self.is_legacy = self.is_user_annotation = False
        self.cpu_parent = None
        self.cpu_children = []
        self.overload_name = ""
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.device_type = DeviceType.CPU
        self.use_device = None
        for field in self._SUMMED:
            setattr(self, field, 0)

    def add(self, other):
        if self.key is None:
            for field in self._COPIED:
                setattr(self, field, getattr(other, field))
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        for field in self._SUMMED:
            setattr(self, field, getattr(self, field) + getattr(other, field))
        return self

    __iadd__ = add

    def __repr__(self):
        device = self.use_device or "cuda"
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_{device}_time="
                f"{self.self_device_time_total_str} {device}_time={self.device_time_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{device}_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (or of FunctionEventAvgs, from `key_averages`)."""

    def __init__(self, events=(), use_device=None, profile_memory=False, with_flops=False):
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One FunctionEventAvg per key (and input shapes, and top stack entries, when asked),
        in order of first appearance; as in PyTorch, the shapes and stacks they show are only
        those grouped by."""
        stats = defaultdict(FunctionEventAvg)
        for e in self:
            key = [e.key, str(e.node_id), str(e.device_type), str(e.is_user_annotation)]
            if group_by_input_shapes:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += e.stack[:group_by_stack_n]
            stats[tuple(key)].add(e)
        for avg in stats.values():
            avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return EventList(stats.values(), self._use_device, self._profile_memory, self._with_flops)

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """PyTorch's text table of these events, sorted by `sort_by` (e.g. "cpu_time_total",
        "cuda_time_total", "self_cpu_time_total"), at most `row_limit` rows."""
        from .table import build_table
        return build_table(self, sort_by, row_limit, max_src_column_width,
                           max_name_column_width, max_shapes_column_width, header,
                           top_level_events_only, time_unit, self._profile_memory)

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON (gzip-compressed when `path` ends in .gz)."""
        trace = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
                 "traceEvents": trace_events(self), "traceName": str(path)}
        text = json.dumps(trace, default=_json_value)
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "wt") as f:
            f.write(text)
        return path


def _json_value(value):
    return value.item() if hasattr(value, "item") else str(value)


def trace_events(events):
    """Chrome trace events: host ops and ranges on their thread of this process, kernels on
    their device and stream, each a complete ("X") event in microseconds."""
    pid = os.getpid()
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": {"name": "python"}}]
    for e in events:
        if e.device_type is DeviceType.CPU:
            args = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            cat = "user_annotation" if e.is_user_annotation else "cpu_op"
            out.append({"ph": "X", "cat": cat, "name": e.trace_name, "pid": pid, "tid": e.thread,
                        "ts": e.time_range.start, "dur": e.time_range.elapsed_us(),
                        "args": args})
        else:
            out.append({"ph": "X", "cat": "kernel", "name": e.trace_name, "pid": e.device_index,
                        "tid": e.thread, "ts": e.time_range.start,
                        "dur": e.time_range.elapsed_us(), "args": e.args})
    return out
