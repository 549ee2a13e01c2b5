"""genesis.futures: torch.futures' Future, the handle DDP communication hooks return.

A Future completes once, with a value (set_result) or an error (set_exception); callbacks added
by then() or add_done_callback() run when it completes (at once if it already has). A Future
made by `Work.get_future()` finishes its collective when waited on.
"""

import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that becomes available later (torch.futures.Future's methods)."""

    def __init__(self, *, devices=None):
        self._event, self._lock = threading.Event(), threading.Lock()
        self._value = self._error = None
        self._callbacks, self._waiter = [], None

    @classmethod
    def _waiting_on(cls, waiter):
        """A Future that `waiter()` completes when someone waits on it."""
        fut = cls()
        fut._waiter = waiter
        return fut

    def done(self):
        return self._event.is_set()

    def wait(self):
        """Block until completed; the value, or the error raised."""
        if not self.done() and self._waiter is not None:
            self._waiter()
        self._event.wait()
        return self.value()

    def value(self):
        """The value of a completed Future (raises its error, if it has one)."""
        if not self.done():
            raise RuntimeError("value() called on a Future that has not completed; wait() first")
        if self._error is not None:
            raise self._error
        return self._value

    def set_result(self, result):
        self._complete(result, None)

    def set_exception(self, result):
        self._complete(None, result)

    def _complete(self, value, error):
        with self._lock:
            if self.done():
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error = value, error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback):
        """Run `callback(self)` once completed (now, if it already is)."""
        with self._lock:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A Future of `callback(self)`, run once this one completes; an error the callback
        raises completes it with that error."""
        child = Future._waiting_on(self.wait_quietly)
        self.add_done_callback(lambda fut: child._run(callback, fut))
        return child

    def wait_quietly(self):
        """Wait without raising: the error goes to whoever reads the value."""
        try:
            self.wait()
        except Exception:  # noqa: BLE001 - kept in the Future itself
            pass

    def _run(self, callback, fut):
        try:
            result = callback(fut)
        except Exception as e:  # noqa: BLE001 - handed to whoever waits
            self.set_exception(e)
        else:
            self.set_result(result)


def collect_all(futures):
    """A Future of the list of `futures`, completed once all of them are."""
    futures = list(futures)
    out = Future._waiting_on(lambda: [f.wait_quietly() for f in futures])
    remaining, lock = [len(futures)], threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)
    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """The values of `futures`, waiting for each (the first error is raised)."""
    return [f.wait() for f in futures]
