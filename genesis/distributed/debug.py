"""Debug settings and helpers (PyTorch's DebugLevel, get/set_debug_level and breakpoint).

GENESIS_DISTRIBUTED_DEBUG (or TORCH_DISTRIBUTED_DEBUG) gives the level: OFF ("0" or unset),
INFO, or DETAIL ("1"), at which every collective first checks that all ranks pass the same
shapes and dtypes.
"""

import os
from enum import Enum


class DebugLevel(Enum):
    OFF = 0
    INFO = 1
    DETAIL = 2


_LEVELS = {"": DebugLevel.OFF, "0": DebugLevel.OFF, "1": DebugLevel.DETAIL}
_set_level = [None]


def _from_env():
    value = os.environ.get("GENESIS_DISTRIBUTED_DEBUG",
                           os.environ.get("TORCH_DISTRIBUTED_DEBUG", "")).strip().upper()
    if value in _LEVELS:
        return _LEVELS[value]
    try:
        return DebugLevel[value]
    except KeyError:
        raise ValueError(f"The value of GENESIS_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL "
                         f"(or 0, 1), got {value!r}") from None


def get_debug_level():
    """The level set by set_debug_level(_from_env), else the environment's now."""
    return _set_level[0] if _set_level[0] is not None else _from_env()


def set_debug_level(level):
    _set_level[0] = DebugLevel(level)


def set_debug_level_from_env():
    _set_level[0] = _from_env()


def breakpoint(rank=0, skip=0, timeout_s=3600):
    """Enter pdb on `rank` only (the `skip`-th time on, counting calls); the other ranks wait
    at a barrier until it continues. Genesis's ranks share the terminal's stdin as
    multiprocessing gives it, so pdb reads from /dev/tty when there is one."""
    from .process_group import barrier, get_rank
    _calls[0] += 1
    if _calls[0] <= skip:
        return
    if get_rank() == rank:
        import pdb
        pdb.Pdb(stdin=_tty()).set_trace(_caller())
    barrier()


_calls = [0]


def _tty():
    try:
        return open("/dev/tty")
    except OSError:
        return None


def _caller():
    import sys
    return sys._getframe(2)
