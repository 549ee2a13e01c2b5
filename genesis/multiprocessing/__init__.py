"""genesis.multiprocessing, as torch.multiprocessing: Python's multiprocessing plus `spawn` and
`start_processes`, which run a function in N processes and raise the first failure in the parent.

Genesis tensors cross process boundaries by pickling their values (there are no shared-memory
storages), so the sharing strategy is recorded for PyTorch's API but changes nothing.
"""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports it)

from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

_STRATEGIES = {"file_descriptor", "file_system"} if sys.platform != "darwin" else {"file_system"}
_strategy = "file_descriptor" if sys.platform != "darwin" else "file_system"


def get_all_sharing_strategies():
    """The sharing strategies this platform has, as torch.multiprocessing names them."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The strategy last set (the platform's default until then)."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Record `new_strategy`; tensors are pickled by value in every strategy."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_STRATEGIES}")
    _strategy = new_strategy


__all__ = multiprocessing.__all__ + [
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "spawn", "start_processes", "get_all_sharing_strategies", "get_sharing_strategy",
    "set_sharing_strategy"]
