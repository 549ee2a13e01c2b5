"""`profile`, `schedule`, `record_function` and `tensorboard_trace_handler`, as in torch.profiler.

A profile steps through the actions its schedule gives each step (NONE, WARMUP, RECORD,
RECORD_AND_SAVE) and moves between them as PyTorch's does: recording starts on the first RECORD
step, and after a RECORD_AND_SAVE step (or at `stop`) the trace is complete and `on_trace_ready`
gets the profile. With a schedule, each step is a "ProfilerStep#N" range.
"""

import contextlib
import enum
import os
import socket
import time
import warnings

from .._warnings import warn_once
from . import recording


class ProfilerActivity(enum.Enum):
    """What to record: host ops and ranges (CPU), device kernels (CUDA)."""

    CPU = 0
    CUDA = 2


class ProfilerAction(enum.Enum):
    """What a schedule asks of one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """CPU, and CUDA where a GPU is available."""
    from .. import cuda
    return {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if cuda.is_available() else set())


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The step -> ProfilerAction function: skip `skip_first` steps, then cycles of `wait` idle,
    `warmup` and `active` recorded steps (the last one RECORD_AND_SAVE), `repeat` times (0:
    until the profile stops). With `skip_first_wait`, the first cycle has no wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _record_always(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An `on_trace_ready` that writes each trace into `dir_name` as
    "{worker_name}.{time_ns}.pt.trace.json" (".gz" with `use_gzip`); the worker name defaults
    to "{hostname}_{pid}"."""

    def handler_fn(prof):
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class record_function(contextlib.ContextDecorator):
    """Marks a block (`with record_function("name"):`) or a function (as a decorator) as a
    range of its own in the profile; costs one check while nothing records."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._event = None
        self._session = None

    def _recreate_cm(self):
        return record_function(self.name, self.args)

    key = None  # the event's name where it is not the range's own

    def __enter__(self):
        session = recording._session
        if session is not None:
            self._session = session
            self._event = session.open(self.key or self.name, annotation=True,
                                       trace_name=self.name)
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            self._session.close(self._event)
            self._event = self._session = None
        return False


class _StepRange(record_function):
    """The "ProfilerStep#N" range of one step; its events all share the key "ProfilerStep*"."""

    key = "ProfilerStep*"


_A = ProfilerAction
# (previous action, next action) -> what the profile does between them ("_warn": the schedule
# is malformed); None: the profile stops.
_TRANSITIONS = {
    (_A.NONE, _A.NONE): (),
    (_A.NONE, _A.WARMUP): ("prepare_trace",),
    (_A.NONE, _A.RECORD): ("prepare_trace", "start_trace"),
    (_A.NONE, _A.RECORD_AND_SAVE): ("prepare_trace", "start_trace"),
    (_A.WARMUP, _A.NONE): ("_warn", "start_trace", "stop_trace"),
    (_A.WARMUP, _A.WARMUP): (),
    (_A.WARMUP, _A.RECORD): ("start_trace",),
    (_A.WARMUP, _A.RECORD_AND_SAVE): ("start_trace",),
    (_A.RECORD, _A.NONE): ("_warn", "stop_trace"),
    (_A.RECORD, _A.WARMUP): ("_warn", "stop_trace"),
    (_A.RECORD, _A.RECORD): (),
    (_A.RECORD, _A.RECORD_AND_SAVE): (),
    (_A.RECORD_AND_SAVE, _A.NONE): ("stop_trace", "_trace_ready"),
    (_A.RECORD_AND_SAVE, _A.WARMUP): ("stop_trace", "_trace_ready", "prepare_trace"),
    (_A.RECORD_AND_SAVE, _A.RECORD): ("stop_trace", "_trace_ready", "prepare_trace",
                                      "start_trace"),
    (_A.RECORD_AND_SAVE, _A.RECORD_AND_SAVE): ("stop_trace", "_trace_ready", "prepare_trace",
                                               "start_trace"),
    (_A.WARMUP, None): ("start_trace", "stop_trace"),
    (_A.RECORD, None): ("stop_trace", "_trace_ready"),
    (_A.RECORD_AND_SAVE, None): ("stop_trace", "_trace_ready"),
}


class profile:
    """Records Genesis ops (CPU activity: host time per op, named "aten::add", ... as PyTorch
    names them) and the kernels they launch (CUDA activity: device time per kernel, counted in
    the launching op's CUDA time) while active; `key_averages`, `events` and
    `export_chrome_trace` report the last completed trace (every cycle's with `acc_events`).

    An op's host time is its kernel call; the Python around it (checks, wrapping, autograd
    bookkeeping) is self time of the enclosing range. `profile_memory` counts the bytes of
    each op's results (views and in-place writes count none; frees are not tracked);
    `with_stack` keeps each event's Python call stack outside genesis. `with_flops`,
    `with_modules` and `experimental_config` are accepted and record nothing.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None):
        chosen = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            (chosen.add if use_cuda else chosen.discard)(ProfilerActivity.CUDA)
        if not chosen:
            raise AssertionError("No valid profiler activities found")
        self.activities = chosen
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.schedule = schedule or _record_always
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self._session = None
        self._events = None
        self._cycled = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self):
        self._exit_step()
        self._transit(self.current_action, None)

    def step(self):
        """Signal that the next step begins: apply the schedule's action for it."""
        self._exit_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step()

    def _enter_step(self):
        if self.record_steps:
            self.step_rec_fn = _StepRange(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _exit_step(self):
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _transit(self, previous, current):
        for action in _TRANSITIONS.get((previous, current), ()):
            if action == "_warn":
                warnings.warn(f"Incorrect schedule: {previous.name} followed by {current.name}",
                              stacklevel=3)
            else:
                getattr(self, action)()

    def prepare_trace(self):
        if self._cycled and not self.acc_events:
            warn_once("profiler_clears_events", "Warning: Profiler clears events at the end of "
                      "each cycle. Only events from the current cycle will be reported. To keep "
                      "events across cycles, set acc_events=True.")
        self._cycled = True
        self._session = recording.Session(
            cpu=ProfilerActivity.CPU in self.activities,
            cuda=ProfilerActivity.CUDA in self.activities,
            record_shapes=self.record_shapes, with_stack=self.with_stack,
            profile_memory=self.profile_memory)

    def start_trace(self):
        if self._session is None:
            self.prepare_trace()
        self._session.start()

    def stop_trace(self):
        if self._session is not None:
            self._session.stop()
            events = self._session.events()
            if self.acc_events and self._events is not None:
                events[:0] = self._events
            self._events = events
            self._session = None

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def events(self):
        """The events of the last completed trace (an EventList of FunctionEvents)."""
        if self._events is None:
            raise AssertionError("Expected profiling results: no trace has completed yet")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The events averaged by name (and input shapes, and top stack entries, when asked)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_chrome_trace(self, path):
        """Write the last trace as Chrome trace JSON (Perfetto, chrome://tracing, TensorBoard)."""
        return self.events().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write "frame;frame;... time" lines (flame graph input) for events with stacks."""
        with open(path, "w") as f:
            for e in self.events():
                if e.stack:
                    value = int(getattr(e, metric.replace("cuda", "device")))
                    f.write(";".join(reversed(e.stack)) + f" {value}\n")
