"""`Compare`, as torch.utils.benchmark's: Measurements printed as one table per label.

Replicates of one task (equal TaskSpecs) are merged first. In each label's table the rows are
sub_labels (else statements), grouped by thread count and then env, and the columns are
descriptions; a cell with no measurement is left blank. All times of a table share the unit of
its fastest median. `trim_significant_figures` rounds each time to the digits its spread
supports, `colorize` marks times against the best of their column (within the thread group) or
of their row, and `highlight_warnings` tags high-variance times with their IQR / median. The
layout and its float32 digit counts are PyTorch's, so the same measurements print the same.
"""

import enum
import itertools

import numpy as np

from .common import Measurement, log10_float32, select_unit

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"

_VARIANCE_NOTE = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100."


class Colorize(enum.Enum):
    """What a colored time is measured against: nothing, its column or its row."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def unit_to_english(unit):
    """"us" -> "microsecond", for the table's footer."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[unit]


def trim_sigfig(x, n):
    """`x` rounded to `n` significant figures (3.14159, 2 -> 3.1), in float32 as PyTorch's."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    scale = 10 ** (_digits_before_point(abs(x)) - n)
    return float(np.round(np.float32(x / scale)) * np.float32(scale))


def ordered_unique(elements):
    """The distinct elements in the order they first appear."""
    return list(dict.fromkeys(elements))


def _digits_before_point(value):
    """ceil(log10(value)): how many digits a value of at least 1 has before its point."""
    return int(np.ceil(np.float32(log10_float32(value))))


def _paint(text, value, best):
    """`text` colored by how far `value` is from `best`: best (within 1% or 100 ns), good
    (within 10%), bad (2x) or very bad (5x); plain between."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


class _ColumnFormat:
    """How one column writes its times: as many decimals as its least precise time supports
    (when trimming; else one), right-aligned to its longest, with room for variance tags when
    one of its times has a warning and warnings are highlighted."""

    def __init__(self, measurements, scale, trim, highlight):
        present = [m for m in measurements if m is not None]
        digits = [_digits_before_point(m.median / scale) for m in present]
        decimals = (min(max(m.significant_figures - d, 0) for m, d in zip(present, digits))
                    if trim else 1)
        width = max(digits) + decimals + (1 if decimals else 0)
        self._number = f"{{:>{width}.{decimals}f}}"
        self._scale, self._trim = scale, trim
        self._tags = highlight and any(m.has_warnings for m in present)

    def _text(self, value, sigfigs, spread):
        if self._trim:
            value = trim_sigfig(value, sigfigs)
        tag = f" (! {spread * 100:.0f}%)" if self._tags and spread is not None else ""
        return self._number.format(value) + (f"{tag:>7}" if self._tags else "")

    def __call__(self, m):
        """The cell of `m`, or blanks as wide as a cell when there is none."""
        if m is None:
            return " " * len(self._text(1, 1, None))
        spread = m.iqr / m.median if m.has_warnings else None
        return self._text(m.median / self._scale, m.significant_figures, spread)


def _row_key(m):
    """Which row `m` sits in: its thread count, env and row name."""
    return m.num_threads, m.env, m.as_row_name


def _group_order(key):
    """Rows sort by thread count, then env (a missing env first), keeping their order within."""
    threads, env, _ = key
    return threads, env is not None, env or ""


class _Table:
    """One label's measurements laid out in rows and columns; rows of one thread count follow
    each other and make a group (`starts` marks each group's first row)."""

    def __init__(self, results, colorize, trim, highlight):
        self.label, self.results, self.colorize = results[0].label, results, colorize
        self.highlight = highlight
        self.unit, self.scale = select_unit(min(m.median for m in results))
        self.row_keys = sorted(ordered_unique(map(_row_key, results)), key=_group_order)
        self.descriptions = ordered_unique(m.description for m in results)
        cells = {(_row_key(m), m.description): m for m in results}
        self.grid = [[cells.get((key, d)) for d in self.descriptions] for key in self.row_keys]
        threads = [key[0] for key in self.row_keys]
        self.starts = [i == 0 or threads[i] != threads[i - 1] for i in range(len(threads))]
        self.groups = list(itertools.accumulate(self.starts))
        self.formats = [_ColumnFormat(column, self.scale, trim, highlight)
                        for column in zip(*self.grid)]

    def _row_names(self):
        """Each row's first cell: its name, after its env when envs differ and it starts one."""
        envs = {key[1] for key in self.row_keys}
        env_width = max(len(str(env)) for env in envs) if len(envs) > 1 else 0
        names, prior_env = [], ""
        for i, (_, env, name) in enumerate(self.row_keys):
            if self.starts[i]:
                prior_env = ""
            shown = f"({env})" if len(envs) > 1 and env != prior_env else ""
            names.append("  " + shown.ljust(env_width + 4) + name)
            prior_env = env
        return names

    def _best(self, i, j):
        """What cell (i, j) is colored against: its row's or its column's (in its group) best."""
        if self.colorize == Colorize.ROWWISE:
            return min(m.median for m in self.grid[i] if m is not None)
        return min(row[j].median for row, group in zip(self.grid, self.groups)
                   if group == self.groups[i] and row[j] is not None)

    def _line(self, i, texts, widths):
        """Row i's texts padded to the column widths and colored, joined by the rules."""
        cells = [texts[0].ljust(widths[0])]
        for j, m in enumerate(self.grid[i]):
            text = texts[j + 1].center(widths[j + 1])
            if self.colorize != Colorize.NONE and m is not None:
                text = _paint(text, m.median, self._best(i, j))
            cells.append(text)
        return "  |  ".join(cells)

    def render(self):
        header = [""] + ["" if d is None else d for d in self.descriptions]
        rows = [[name] + [fmt(m) for fmt, m in zip(self.formats, cells)]
                for name, cells in zip(self._row_names(), self.grid)]
        widths = [max(map(len, column)) for column in zip(header, *rows)]
        lines = ["  |  ".join(text.center(w) for text, w in zip(header, widths))]
        width = len(lines[0])
        for i, row in enumerate(rows):
            if self.starts[i]:
                lines.append(f"{self.row_keys[i][0]} threads: ".ljust(width, "-"))
            lines.append(self._line(i, row, widths))
        title = f" {self.label or ''} ".center(width - 2, "-")
        note = self.highlight and any(m.has_warnings for m in self.results)
        return (f"[{title}]\n" + "\n".join(lines) + f"\n\nTimes are in "
                f"{unit_to_english(self.unit)}s ({self.unit}).\n"
                + (_VARIANCE_NOTE + "\n" if note else ""))


class Compare:
    """Measurements printed as comparison tables, one per label (see the module docstring);
    `print(compare)` or `compare.print()` shows them."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self):
        return "\n".join(self._render())

    def extend_results(self, results):
        """Adds Measurements to those already held."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        """Rounds each time to the significant figures its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Colors each time against the best of its column, or of its row when `rowwise`."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        """Tags times with a high-variance warning with their IQR / median."""
        self._highlight_warnings = True

    def print(self):
        """Prints the tables."""
        print(str(self))

    def _render(self):
        """One rendered table per label, in the order the labels first appear."""
        by_label = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [_Table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for group in by_label.values()]
