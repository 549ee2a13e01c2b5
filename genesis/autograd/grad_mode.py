"""Grad mode: whether ops record themselves for backward (`no_grad`, `enable_grad`, ...).

The flag is per thread, as in PyTorch, so a DataLoader thread cannot switch it for the trainer.
Each context manager also works as a decorator.
"""

import functools
import threading

class _ThreadState(threading.local):
    """Each thread starts with grad mode on and inference mode off."""

    enabled = True
    inference = False


_state = _ThreadState()


def is_grad_enabled():
    return _state.enabled


def _set_enabled(flag):
    _state.enabled = bool(flag)


def is_inference_mode_enabled():
    return _state.inference


class _GradModeContext:
    """Base: sets grad mode on enter and restores the previous mode on exit.

    Used as `with no_grad():`, as a decorator `@no_grad()`, or bare `@no_grad`.
    """

    _target = True

    def __new__(cls, func=None, *args, **kwargs):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self._target)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Ops inside do not record a graph; results have requires_grad=False."""

    _target = False


class enable_grad(_GradModeContext):
    """Turn recording back on inside a `no_grad` region."""

    _target = True


class set_grad_enabled(_GradModeContext):
    """`set_grad_enabled(False)` is `no_grad()`; takes effect at once, like PyTorch's."""

    def __init__(self, mode):
        self._target = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _set_enabled(self._prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self._target):
                return fn(*args, **kwargs)
        return wrapper


class inference_mode(_GradModeContext):
    """Like `no_grad` (Genesis has no separate inference tensors).

    `inference_mode(False)` turns grad mode on inside, as PyTorch's does.
    """

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        self._prev_inference = is_inference_mode_enabled()
        _set_enabled(not self.mode)
        _state.inference = self.mode
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        _state.inference = self._prev_inference
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper
