"""`Timer`, as torch.utils.benchmark's: time a statement with replicates.

`timeit(number)` times one block of `number` runs. `blocked_autorange` first picks a block size
whose timer overhead is negligible (x10 steps until a block takes a thousandth of
`min_run_time`), then times blocks until `min_run_time` has passed; `adaptive_autorange` times
blocks until the interquartile range is within `threshold` of the median. The default timer
waits for the GPU (when CUDA has been initialised) before reading the clock, so kernels still
running count.
"""

import enum
import textwrap
import timeit as _timeit

import numpy as np

from .common import Measurement, TaskSpec


def timer():
    """The clock, read after the GPU has finished its queued work."""
    from .... import cuda
    if cuda.is_initialized():
        cuda.synchronize()
    return _timeit.default_timer()


class _Threads:
    """The CPU thread count set to `n` inside the block (genesis.set_num_threads)."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        from .... import settings
        self.before = settings.get_num_threads()
        settings.set_num_threads(self.n)

    def __exit__(self, *exc):
        from .... import settings
        settings.set_num_threads(self.before)


def _clean(code):
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Language(enum.Enum):
    """The language of a Timer's statement; Genesis times Python only."""

    PYTHON = 0
    CPP = 1


class Timer:
    """Time `stmt` (Python source) after `setup`, with `globals` in scope (`torch` and
    `genesis` name genesis there unless given). `label`, `sub_label`, `description` and `env`
    name the measurement; `num_threads` is the CPU thread count while timing."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise ValueError("Genesis times Python statements: Language.CPP is not supported.")
        if language not in (Language.PYTHON, "python", "py"):
            raise ValueError(f"Invalid language `{language}`.")
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
