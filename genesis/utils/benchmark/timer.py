"""`Timer` and `Measurement`, as torch.utils.benchmark's: time a statement with replicates.

`timeit(number)` times one block of `number` runs. `blocked_autorange` first picks a block size
whose timer overhead is negligible (x10 steps until a block takes a thousandth of
`min_run_time`), then times blocks until `min_run_time` has passed; `adaptive_autorange` times
blocks until the interquartile range is within `threshold` of the median. The default timer
waits for the GPU (when CUDA has been initialised) before reading the clock, so kernels still
running count. A Measurement holds the block times and prints the median, the IQR and the run
counts as PyTorch's does; its `significant_figures`, `has_warnings` and `merge` (replicates of
equal TaskSpecs pooled) serve Compare.
"""

import dataclasses
import math
import textwrap
import timeit as _timeit

import numpy as np

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9


def timer():
    """The clock, read after the GPU has finished its queued work."""
    from ... import cuda
    if cuda.is_initialized():
        cuda.synchronize()
    return _timeit.default_timer()


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


class _Threads:
    """The CPU thread count set to `n` inside the block (genesis.set_num_threads)."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        from ... import settings
        self.before = settings.get_num_threads()
        settings.set_num_threads(self.n)

    def __exit__(self, *exc):
        from ... import settings
        settings.set_num_threads(self.before)


def _clean(code):
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Timer:
    """Time `stmt` (Python source) after `setup`, with `globals` in scope (`torch` and
    `genesis` name genesis there unless given). `label`, `sub_label`, `description` and `env`
    name the measurement; `num_threads` is the CPU thread count while timing."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language="python"):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in ("python", "py"):
            raise ValueError(f"Invalid language `{language}`; Genesis times Python statements.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             "code can simply be moved to `setup`.")
        import genesis
        scope = dict(globals or {})
        scope.setdefault("torch", genesis)
        scope.setdefault("genesis", genesis)
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=scope)
        self._task_spec = TaskSpec(stmt, setup, label=label, sub_label=sub_label,
                                   description=description, env=env, num_threads=num_threads)

    def _time(self, number):
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number=1000000):
        """One block of `number` runs (after a warm-up of a hundredth of them)."""
        with _Threads(self._task_spec.num_threads):
            self._time(max(number // 100, 2))
            return Measurement(number, [self._time(number)], self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time):
        """Runs per block: x10 until the timer's own overhead is under 1e-4 of a block and a
        block takes a thousandth of `min_run_time` (or all of it)."""
        overhead = float(np.median([self._time(0) for _ in range(5)]))
        number = 1
        while number * 10 <= 2147483647:
            taken = self._time(number)
            negligible = overhead / taken <= 1e-4 and taken >= min_run_time / 1000
            if negligible or taken > min_run_time:
                break
            number *= 10
        return number

    def _blocks(self, number, done, min_run_time, max_run_time=None, callback=None):
        """Block times until `min_run_time` has passed and `done(times)` holds (or
        `max_run_time` has passed)."""
        times, total = [], 0.0
        while total < min_run_time or not done(times):
            taken = self._time(number)
            times.append(taken)
            total += taken
            if callback:
                callback(number, taken)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a size fit for the timer, for at least `min_run_time` seconds."""
        with _Threads(self._task_spec.num_threads):
            number = self._block_size(min_run_time)
            times = self._blocks(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Blocks until the IQR is within `threshold` of the median (after 4 at least), for
        `min_run_time` to `max_run_time` seconds."""
        with _Threads(self._task_spec.num_threads):
            number = self._block_size(0.05)

            def done(times):
                if len(times) <= 3:
                    return False
                return Measurement(number, times, self._task_spec).meets_confidence(threshold)
            times = self._blocks(number, done, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
