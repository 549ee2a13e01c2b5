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
    The collective that returns it records its output tensors, for `result()` and futures.
    """

    def __init__(self, wait_fn, test_fn, source_fn=None):
        self._wait_fn, self._test_fn, self._done = wait_fn, test_fn, False
        self._source_fn, self._outputs = source_fn, []

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

    def result(self):
        """The collective's output tensors (once waited on, they hold its result)."""
        return list(self._outputs)

    def get_future(self):
        """A genesis.futures.Future of `result()`, completed by waiting on this Work."""
        from ..futures import Future

        def finish():
            self.wait()
            fut.set_result(self.result())
        fut = Future._waiting_on(finish)
        if self._done:
            fut.set_result(self.result())
        return fut

    def _source_rank(self):
        """The group rank a receive from any source got its message from."""
        if self._source_fn is None:
            raise RuntimeError("sourceRank() may only be called on recv or recvAnysource work")
        self.wait()
        return self._source_fn()



def supports_complex(reduceOp):
    """Whether `reduceOp` may reduce complex tensors: never in genesis, which has no complex
    dtypes (PyTorch answers True for SUM, AVG and the like)."""
    return False
