"""Grad mode: whether ops record themselves for backward (`no_grad`, `enable_grad`, ...), and
autograd's other per-thread switches (the gradient layout policy, multithreaded backward, view
replay).

The flags are per thread, as in PyTorch, so a DataLoader thread cannot switch them for the
trainer. Each context manager also works as a decorator.
"""

import functools
import threading

class _ThreadState(threading.local):
    """Each thread starts with grad mode on, inference mode off and PyTorch's defaults for the
    other switches."""

    enabled = True
    inference = False
    grad_layout = True
    multithreading = True
    view_replay = False


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


def is_multithreading_enabled():
    """Whether multithreaded backward is on (the flag; see set_multithreading_enabled)."""
    return _state.multithreading


def is_view_replay_enabled():
    """Whether view replay is on (the flag; see _force_original_view_tracking)."""
    return _state.view_replay


class _FlagContext:
    """Sets one of this thread's switches (`_flag`) at once, so that a bare call sets it for
    good; a `with` block restores the previous value on leaving, and as a decorator it sets the
    switch around each call of the function."""

    _flag = None

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = getattr(_state, self._flag)
        setattr(_state, self._flag, self.mode)

    def __enter__(self):
        setattr(_state, self._flag, self.mode)

    def __exit__(self, *exc):
        setattr(_state, self._flag, self.prev)
        return False

    def __call__(self, fn):
        setattr(_state, self._flag, self.prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_FlagContext):
    """Whether a leaf's first gradient must be laid out as the leaf (on: PyTorch's gradient
    layout contract) or may be taken as it comes, without a copy, when nothing else holds it
    (off). A gradient that must be copied is laid out as the leaf either way."""

    _flag = "grad_layout"

    def __init__(self, enable=True):
        super().__init__(enable)


class set_multithreading_enabled(_FlagContext):
    """Turn multithreaded backward on or off. Genesis's engine always runs backward on the
    calling thread (what off means in PyTorch), so only the flag changes."""

    _flag = "multithreading"


class _force_original_view_tracking(_FlagContext):
    """Turn view replay on or off: whether a view written in place regets its history by
    replaying its chain of views or by one as_strided view of its base. Genesis always does the
    latter, whose gradients are the same, so only the flag changes."""

    _flag = "view_replay"
