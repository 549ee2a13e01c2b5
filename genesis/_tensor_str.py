"""Tensor printing, character for character as PyTorch's `repr`.

Values are read once to the host as numpy (floating types widened to float64, which holds every
genesis float exactly) and laid out with PyTorch's rules: one width for all elements, fixed or
scientific notation chosen from the range of the nonzero finite values, `...` summaries past
`threshold` elements, and suffixes for a non-default dtype, a non-CPU device and autograd state.
"""

import contextlib
import dataclasses
import math

import numpy as np

from . import dtypes
from .autograd.forward_ad import tangent_of


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None


PRINT_OPTS = _PrintOptions()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """PyTorch's `set_printoptions`; `sci_mode=None` lets the values choose the notation."""
    if profile is not None:
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, key, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a `with` block only."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one notation and width for all the values that will be printed."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            self.max_width = max((len(str(v)) for v in flat.tolist()), default=1)
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        lo, hi = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) \
            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        for value in finite.tolist():
            self.max_width = max(self.max_width, len(self._plain(value)))

    def _plain(self, value):
        """`value` in the chosen notation, unpadded (with the trailing "." of int mode)."""
        p = PRINT_OPTS.precision
        if self.sci_mode:
            return f"{value:.{p}e}"
        if self.int_mode:
            return f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        return f"{value:.{p}f}"

    def format(self, value):
        text = self._plain(value) if self.floating else f"{value}"
        return text.rjust(self.max_width)


def _summarized(values):
    """The values that a summarized print shows: `edgeitems` from each end of every dim."""
    edge = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        return values
    if not edge:
        return values[(slice(0, 0),) * values.ndim]
    for dim, size in enumerate(values.shape):
        if size > 2 * edge:
            keep = np.r_[0:edge, size - edge:size]
            values = np.take(values, keep, axis=dim)
    return values


def _vector_str(values, indent, summarize, formatter):
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (formatter.max_width + 2)))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        data = ([formatter.format(v) for v in values[:edge].tolist()] + [" ..."]
                + [formatter.format(v) for v in values[-edge:].tolist()])
    else:
        data = [formatter.format(v) for v in values.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values, indent, summarize, formatter):
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, formatter)
    edge, size = PRINT_OPTS.edgeitems, values.shape[0]
    if summarize and size > 2 * edge:
        rows = ([_nested_str(values[i], indent + 1, summarize, formatter) for i in range(edge)]
                + ["..."]
                + [_nested_str(values[i], indent + 1, summarize, formatter)
                   for i in range(size - edge, size)])
    else:
        rows = [_nested_str(values[i], indent + 1, summarize, formatter) for i in range(size)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _host_values(t):
    """The values as numpy: floats widened to float64, integers and bools as they are."""
    host = t.detach()._host()
    return host.astype(np.float64) if t.dtype.is_floating_point else host


def _values_str(t, indent):
    if t.numel() == 0:
        return "[]"
    values = _host_values(t)
    summarize = values.size > PRINT_OPTS.threshold
    formatter = _Formatter(_summarized(values) if summarize else values, t.dtype.is_floating_point)
    return _nested_str(values, indent, summarize, formatter)


def _add_suffixes(text, suffixes, indent):
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def _suffixes(t):
    """The device, size and dtype suffixes where PyTorch shows them, then the graph's."""
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = dtypes.get_default_dtype()
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype not in (default, dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype={t.dtype!r}")
    return suffixes + _graph_suffixes(t)


def _graph_suffixes(t):
    suffixes = []
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    tangent = tangent_of(t)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return suffixes


def _meta_suffixes(t):
    """A meta tensor has no values to show: its size always, its dtype unless the default."""
    suffixes = [f"device='{t.device}'", f"size={tuple(t.shape)}"]
    if t.dtype is not dtypes.get_default_dtype():
        suffixes.append(f"dtype={t.dtype!r}")
    return suffixes + _graph_suffixes(t)


def tensor_repr(t, prefix="tensor("):
    """`repr(t)` as PyTorch writes it, with "genesis." where PyTorch writes "torch."."""
    indent = len(prefix)
    if t.device.type == "meta":
        return _add_suffixes(prefix + "...", _meta_suffixes(t), indent)
    return _add_suffixes(prefix + _values_str(t, indent), _suffixes(t), indent)
