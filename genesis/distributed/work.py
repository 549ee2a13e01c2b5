"""Reduction ops and the handle an asynchronous collective returns."""

from enum import Enum


class ReduceOp(Enum):
    """How a reduction combines the ranks' values (PyTorch's `dist.ReduceOp`); the bitwise ones
    are for integer and bool tensors, on the gloo and mpi backends."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class Work:
    """A collective in flight: `wait()` orders it before later work, `is_completed()` polls it.

    `wait_fn` finishes the collective (and any copy back it needs); `test_fn` returns True once
    it has completed, without blocking; a receive's `source_fn` gives the rank it heard from.
    """

    def __init__(self, wait_fn, test_fn, source_fn=None):
        self._wait_fn, self._test_fn, self._done = wait_fn, test_fn, False
        self._source_fn = source_fn

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

    def _source_rank(self):
        """The group rank a receive from any source got its message from."""
        if self._source_fn is None:
            raise RuntimeError("sourceRank() may only be called on recv or recvAnysource work")
        self.wait()
        return self._source_fn()

