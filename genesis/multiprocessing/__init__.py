"""genesis.multiprocessing, as torch.multiprocessing: Python's multiprocessing plus `spawn` and
`start_processes`, which run a function in N processes and raise the first failure in the parent.

Importing it registers reductions.py's reducer with multiprocessing's pickler: a CPU tensor sent
to another process (Process arguments, Queue, Pipe, Pool) moves into shared memory and travels as
a handle, so both processes write the same values. The sharing strategy says how that memory is
made and sent: "file_descriptor" (an anonymous memfd, its descriptor passed along) or
"file_system" (a named segment under /dev/shm, passed by name; see genesis/backends/cpu/shared).
DataLoader workers still send their batches by value, pickled to bytes.
"""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports it)

from ..backends.cpu import shared as _shared
from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

_STRATEGIES = {"file_descriptor", "file_system"} if sys.platform != "darwin" else {"file_system"}


def get_all_sharing_strategies():
    """The sharing strategies this platform has, as torch.multiprocessing names them."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The strategy last set (the platform's default until then)."""
    return _shared.strategy


def set_sharing_strategy(new_strategy):
    """Make and send shared memory the `new_strategy` way from now on (memory shared
    already keeps its kind)."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_STRATEGIES}")
    _shared.strategy = new_strategy


init_reductions()


__all__ = multiprocessing.__all__ + [
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "spawn", "start_processes", "get_all_sharing_strategies", "get_sharing_strategy",
    "set_sharing_strategy"]
