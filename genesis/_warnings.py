"""Warnings attributed to the user's code, as PyTorch's (raised from C++) are."""

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
