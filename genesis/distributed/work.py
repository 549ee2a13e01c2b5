"""Reduction ops and the handle an asynchronous collective returns."""

from enum import Enum


class ReduceOp(Enum):
    """How a reduction combines the ranks' values (PyTorch's `dist.ReduceOp`)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class Work:
    """A collective in flight: `wait()` orders it before later work, `is_completed()` polls it.

    `wait_fn` finishes the collective (and any copy back it needs); `test_fn` returns True once
    it has completed, without blocking.
    """

    def __init__(self, wait_fn, test_fn):
        self._wait_fn, self._test_fn, self._done = wait_fn, test_fn, False

    def wait(self, timeout=None):
        if not self._done:
            self._wait_fn()
            self._done = True
        return True

    def is_completed(self):
        if not self._done and self._test_fn():
            self.wait()
        return self._done

    def is_success(self):
        return self.is_completed()

