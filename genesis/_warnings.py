"""Warnings attributed to the user's code, as PyTorch's (raised from C++) are."""

import functools
import os
import sys
import warnings

_GENESIS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning):
    """`warnings.warn` attributed to the first caller outside Genesis, whatever wrappers
    (autocast policies, in-place forms, modules) sit between; two calls from different lines of
    a script then warn once each under the default filter, as PyTorch's do."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_GENESIS_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_always = [False]  # set_warn_always's flag
_warned = set()


def warn_once(key, message, category=UserWarning):
    """`warn`, the first time a process gives warning `key` (PyTorch's TORCH_WARN_ONCE), or
    every time under genesis.set_warn_always(True)."""
    if _always[0] or key not in _warned:
        _warned.add(key)
        warn(message, category)


def set_warn_always(b):
    """Whether the warnings given once a process (warn_once) are given every time."""
    _always[0] = bool(b)


def is_warn_always_enabled():
    return _always[0]


def deprecated_alias(new, name, message):
    """`new` under PyTorch's deprecated `name`: each call first warns `message`, a
    FutureWarning attributed to the caller's line."""
    @functools.wraps(new)
    def alias(*args, **kwargs):
        warn(message, FutureWarning)
        return new(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"Deprecated: `{new.__name__}` under PyTorch's older name."
    return alias
