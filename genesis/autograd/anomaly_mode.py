"""Anomaly detection (`torch.autograd.detect_anomaly`): find the op whose backward fails.

While it is on, every op the graph records keeps the Python stack of its forward call, and
backward checks what each node returns: a node whose backward raises, or (with check_nan)
returns NaN in a gradient, is reported with the forward call that made it, as PyTorch's
warning "Error detected in MulBackward0. Traceback of forward call that caused the error".
It slows both passes, so it is for debugging only.
"""

import functools
import os
import traceback
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_enabled = False
_check_nan = True


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (`torch.set_anomaly_enabled`)."""
    global _enabled, _check_nan
    _enabled, _check_nan = bool(enabled), bool(check_nan)


class detect_anomaly:
    """Anomaly detection inside a `with` block (or a decorated function), with PyTorch's
    warning that it is on."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._previous = (_enabled, _check_nan)
        set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return checked


class set_detect_anomaly:
    """Set anomaly detection now; as a context manager, put the previous setting back at the
    end of the block."""

    def __init__(self, mode, check_nan=True):
        self._previous = (_enabled, _check_nan)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._previous)
        return False


def record_forward(ctx):
    """Keep the stack of the forward call that is recording `ctx`: the caller's frames, not
    Genesis's own (PyTorch's trace shows no frames of its C++ either)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE)]
    ctx.forward_trace = traceback.format_list(frames)


def apply_checked(node, grads):
    """node.apply(grads), reporting the node's forward call if it raises or returns NaN."""
    try:
        result = node.apply(grads)
    except Exception:
        _report(node)
        raise
    if _check_nan:
        for i, g in enumerate(result):
            if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
                _report(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                                   "output.")
    return result


def _report(node):
    trace = node.__dict__.get("forward_trace")
    if trace is None:
        warnings.warn("No forward pass information available. Enable detect anomaly during "
                      "forward pass for more information.", stacklevel=4)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{''.join(trace)}", stacklevel=4)
