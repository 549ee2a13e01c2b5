"""`Timer` and `Measurement`, as torch.utils.benchmark's: time a statement with replicates.

`timeit(number)` times one block of `number` runs. `blocked_autorange` first picks a block size
whose timer overhead is negligible (x10 steps until a block takes a thousandth of
`min_run_time`), then times blocks until `min_run_time` has passed; `adaptive_autorange` times
blocks until the interquartile range is within `threshold` of the median. The default timer
waits for the GPU (when CUDA has been initialised) before reading the clock, so kernels still
running count. A Measurement holds the block times and prints the median, the IQR and the run
counts as PyTorch's does.
"""

import math
import textwrap
import timeit as _timeit

import numpy as np

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def timer():
    """The clock, read after the GPU has finished its queued work."""
    from ... import cuda
    if cuda.is_initialized():
        cuda.synchronize()
    return _timeit.default_timer()


def select_unit(t):
    """("ns" | "us" | "ms" | "s", its scale in seconds) for a time of `t` seconds."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s") if t > 0 else "s"
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


class TaskSpec:
    """What was timed: the statement, its setup and the labels that name it."""

    def __init__(self, stmt, setup, label=None, sub_label=None, description=None, env=None,
                 num_threads=1):
        self.stmt, self.setup = stmt, setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads

    @property
    def title(self):
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def summarize(self):
        sections = [self.title, self.description or ""]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


class Measurement:
    """Block times (`raw_times`, each of `number_per_run` runs) of one task; `times`, `median`,
    `mean` and `iqr` are per run, in seconds."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run, self.raw_times = number_per_run, list(raw_times)
        self.task_spec, self.metadata = task_spec, metadata
        sorted_times = np.sort(np.asarray(self.times, dtype=np.float64))
        self._p25, self._median, self._p75 = (np.quantile(sorted_times, [0.25, 0.5, 0.75])
                                              if len(sorted_times) else (-1.0, -1.0, -1.0))
        self._mean = float(sorted_times.mean()) if len(sorted_times) else -1.0
        self._count = len(sorted_times)

    def __getattr__(self, name):
        if name in ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads",
                    "title"):
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        return float(self._median)

    @property
    def mean(self):
        return self._mean

    @property
    def iqr(self):
        return float(self._p75 - self._p25)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    def _warnings(self):
        if self.meets_confidence(_IQR_WARN_THRESHOLD):
            return []
        why = ("This suggests significant environmental influence."
               if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
               else "This could indicate system fluctuation.")
        return [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the "
                f"median measurement.\n           {why}"]

    def __repr__(self):
        n = self._count
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines += self._warnings()
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
        self._task_spec = TaskSpec(stmt, setup, label, sub_label, description, env, num_threads)

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
