"""spawn and start_processes: run `fn(i, *args)` in `nprocs` fresh processes.

A child that raises writes its traceback to a text file and exits with code 1; the parent waits
on every child's sentinel, and at the first failure terminates the others (SIGTERM, then SIGKILL
after the grace period) and raises: ProcessRaisedException with the child's traceback, or
ProcessExitedException with its exit code or signal when it died without one.
"""

import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings


class ProcessException(Exception):
    """A child process failed; `error_index` is its `i`, `error_pid` its process id."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The child raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The child exited with a non-zero code, or was killed by a signal, without a traceback."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _run(fn, i, args, error_file):
    """The child's entry point: fn(i, *args), its traceback written to `error_file` on failure."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted it
    except Exception:
        with open(error_file, "w", encoding="utf-8") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The started processes; `join` waits for them and raises the first failure."""

    def __init__(self, processes, error_files, error_dir=None):
        self.processes = processes
        self.error_files = error_files
        self._error_dir = error_dir
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait up to `timeout` seconds for processes to end. True once all have ended cleanly,
        False while some still run; raises (after stopping the rest) when one failed."""
        if not self.sentinels:
            return True
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                self._stop_all(grace_period)
                failure = self._failure(index)
                self._remove_error_files()
                raise failure
        if self.sentinels:
            return False
        self._remove_error_files()
        return True

    def _remove_error_files(self):
        if self._error_dir is not None:
            shutil.rmtree(self._error_dir, ignore_errors=True)

    def _join_all(self, timeout):
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def _stop_all(self, grace_period):
        """Let the others finish for `grace_period`, then SIGTERM, then SIGKILL."""
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()

    def _failure(self, index):
        process = self.processes[index]
        try:
            with open(self.error_files[index], encoding="utf-8") as f:
                trace = f.read()
        except OSError:
            trace = ""
        if trace:
            return ProcessRaisedException(
                f"\n\n-- Process {index:d} terminated with the following error:\n{trace}",
                index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                          index, process.pid, code, name)
        return ProcessExitedException(f"process {index:d} terminated with exit code {code:d}",
                                      index, process.pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start `nprocs` processes running fn(i, *args) with `start_method`; join them (None) or
    return their ProcessContext when `join` is False."""
    context = multiprocessing.get_context(start_method)
    error_dir = tempfile.mkdtemp(prefix="genesis-spawn-")
    error_files = [os.path.join(error_dir, f"{i}.txt") for i in range(nprocs)]
    processes = []
    for i in range(nprocs):
        process = context.Process(target=_run, args=(fn, i, args, error_files[i]), daemon=daemon)
        process.start()
        processes.append(process)
    processes_context = ProcessContext(processes, error_files, error_dir)
    if not join:
        return processes_context
    while not processes_context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """start_processes with the "spawn" start method (another `start_method` warns, as in
    PyTorch, and is ignored)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
