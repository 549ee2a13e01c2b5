"""`EventList.table`: the text table PyTorch's profiler prints, same columns, widths and footer."""

from .events import DeviceType, _format_memory, _format_time, _format_time_share

_COLUMN_WIDTH = 12
_SPACING = 2
_US_PER = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _time(time_us, time_unit):
    """A time as PyTorch prints it: auto-scaled, or in `time_unit` ("s", "ms", "us")."""
    if time_unit in _US_PER:
        return f"{time_us / _US_PER[time_unit]:.3f}{time_unit}"
    return _format_time(time_us)


def _sort_key(sort_by):
    attr = sort_by.replace("cuda", "device")
    return lambda e: getattr(e, attr)


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


class _Layout:
    """Headers and the row format, column by column as PyTorch adds them."""

    def __init__(self):
        self.headers = []
        self.row_format = ""
        self.separator = ""
        self.width = -_SPACING

    def add(self, header, width, align=">"):
        self.headers.append(header)
        self.row_format += "{: " + align + str(width) + "}" + " " * _SPACING
        self.separator += "-" * width + " " * _SPACING
        self.width += width + _SPACING


def _layout(device, columns, has_shapes, has_stack, widths):
    """The columns: `columns` says which optional groups show (device time, host memory,
    device memory)."""
    has_device_time, has_memory, has_device_memory = columns
    name_width, shapes_width, src_width = widths
    layout = _Layout()
    layout.add("Name", name_width)
    headers = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {device}", f"Self {device} %", f"{device} total", f"{device} time avg"]
    if has_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    if has_device_memory:
        headers += [f"{device} Mem", f"Self {device} Mem"]
    for header in headers + ["# of Calls"]:
        layout.add(header, _COLUMN_WIDTH)
    if has_shapes:
        layout.add("Input Shapes", shapes_width)
    if has_stack:
        layout.add("Source Location", src_width, "<")
    return layout


def _widths(events, max_name, max_shapes, max_src):
    name = max(len(e.key) for e in events) + 4
    shapes = max(len(str(e.input_shapes)) for e in events) + 4
    stacks = [e.stack for e in events if e.stack]
    src = max(len(entry) for stack in stacks for entry in stack) + 4 if stacks else None
    return (min(name, max_name) if max_name is not None else name,
            min(shapes, max_shapes) if max_shapes is not None else shapes,
            min(src, max_src) if src is not None and max_src is not None else src)


def _row(e, name_limit, totals, columns, time_unit):
    name = e.key
    if name_limit is not None and len(name) >= name_limit - 3:
        name = name[:name_limit - 3] + "..."
    self_cpu_total, self_device_total = totals
    values = [name, _format_time_share(e.self_cpu_time_total, self_cpu_total),
              _time(e.self_cpu_time_total, time_unit),
              _format_time_share(e.cpu_time_total, self_cpu_total),
              _time(e.cpu_time_total, time_unit), _time(e.cpu_time, time_unit)]
    has_device_time, has_memory, has_device_memory = columns
    if has_device_time:
        values += [_time(e.self_device_time_total, time_unit),
                   _format_time_share(e.self_device_time_total, self_device_total),
                   _time(e.device_time_total, time_unit), _time(e.device_time, time_unit)]
    if has_memory:
        values += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
    if has_device_memory:
        values += [_format_memory(e.device_memory_usage),
                   _format_memory(e.self_device_memory_usage)]
    values.append(e.count)
    return values


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                top_level_events_only=False, time_unit=None, profile_memory=False):
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    use_device = events[0].use_device
    columns = (has_device_time, profile_memory, profile_memory and bool(use_device) and any(
        e.self_device_memory_usage > 0 for e in events))
    device = use_device.upper() if use_device is not None else "None"
    has_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        events = sorted(events, key=_sort_key(sort_by), reverse=True)
    widths = _widths(events, max_name_column_width, max_shapes_column_width,
                     max_src_column_width)
    has_stack = widths[2] is not None
    layout = _layout(device, columns, has_shapes, has_stack, widths)
    totals = (sum(e.self_cpu_time_total for e in events),
              sum(e.self_device_time_total for e in events
                  if e.device_type is DeviceType.CUDA and not e.is_user_annotation))

    lines = []
    if header is not None:
        lines += ["=" * layout.width, header]
    if top_level_events_only:
        lines += ["=" * layout.width, "This report only display top-level ops statistics"]
    lines += [layout.separator, layout.row_format.format(*layout.headers), layout.separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        values = _row(e, max_name_column_width, totals, columns, time_unit)
        if has_shapes:
            values.append(str(e.input_shapes)[:widths[1]])
        if has_stack:
            values.append(_trim_path(e.stack[0], widths[2]) if e.stack else "")
        lines.append(layout.row_format.format(*values))
        if has_stack:
            blank = [""] * (len(layout.headers) - 1)
            lines += [layout.row_format.format(*blank, _trim_path(entry, widths[2]))
                      for entry in e.stack[1:]]
            lines.append(layout.row_format.format(*blank, ""))
    lines += [layout.separator, f"Self CPU time total: {_time(totals[0], time_unit)}"]
    if has_device_time:
        lines.append(f"Self {device} time total: {_time(totals[1], time_unit)}")
    return "\n".join(lines) + "\n"
