"""`TaskSpec` and `Measurement`, as torch.utils.benchmark's: what was timed and its block times.

A Measurement prints the median, the IQR and the run counts as PyTorch's does; its
`significant_figures`, `has_warnings` and `merge` (replicates of equal TaskSpecs pooled) serve
Compare. `select_unit` picks the unit a time prints in.
"""

import dataclasses
import math
import textwrap

import numpy as np

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9


def log10_float32(x):
    """log10 of `x` as PyTorch takes it of a float32 tensor (rounded to float32, then the log
    rounded to float32), so values at a power of ten's edge land on the same side."""
    return float(np.float32(math.log10(np.float32(x))))


def select_unit(t):
    """("ns" | "us" | "ms" | "s", its scale in seconds) for a time of `t` seconds."""
    unit = ({-3: "ns", -2: "us", -1: "ms"}.get(int(log10_float32(t) // 3), "s")
            if t > 0 else "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@dataclasses.dataclass(frozen=True, repr=False)
class TaskSpec:
    """What was timed: the statement, its setup and the labels that name it. Equal specs are
    one task: Measurement.merge pools their times."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self):
        """The setup as Measurement's repr shows it; nothing when it is `pass`."""
        if self.setup in ("pass", ""):
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self):
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASK_FIELDS = tuple(field.name for field in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """Block times (`raw_times`, each of `number_per_run` runs) of one task; `times`, `median`,
    `mean` and `iqr` are per run, in seconds. The TaskSpec's fields read as attributes."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self):
        self._sorted_times, self._warnings = (), ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name):
        if name in _TASK_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    def _lazy_init(self):
        """The statistics and warnings, taken on first use (raw_times may grow until then)."""
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        times = np.asarray(self._sorted_times, dtype=np.float64)
        self._p25, self._median, self._p75 = map(float, np.quantile(times, [0.25, 0.5, 0.75]))
        self._mean = float(times.mean())
        self._warnings = self._iqr_warnings()

    def _iqr_warnings(self):
        """The warning for an IQR above a tenth (or a quarter) of the median, if any."""
        if self.meets_confidence(_IQR_WARN_THRESHOLD):
            return ()
        why = ("This suggests significant environmental influence."
               if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
               else "This could indicate system fluctuation.")
        warning = (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of "
                   f"the median measurement.\n           {why}")
        return (warning,)

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self):
        """Digits of the median its spread supports (1 to 4): the log10 of median over a 90%
        confidence interval of the interquartile times, in float32 as PyTorch's."""
        self._lazy_init()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4:math.ceil(3 * n / 4)]
        std = float(np.float32(np.asarray(middle, np.float32).astype(np.float64).std()))
        sqrt_n = float(np.sqrt(np.float32(len(middle))))
        interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        digits = math.floor(log10_float32(self._median / interval))
        return min(max(digits, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def as_row_name(self):
        """Its row in a Compare table: the sub_label, else the statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements):
        """One Measurement per task (of one run per time) pooling its replicates' times; the
        metadata, which may differ between them, is dropped."""
        pooled = {}
        for m in measurements:
            pooled.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, task_spec) for task_spec, times in pooled.items()]

    def __repr__(self):
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines += self._warnings
        return "\n".join(lines).strip()
