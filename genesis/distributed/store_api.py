"""What every store has (PyTorch's `dist.Store` API) and the key-value table behind it.

A store's public methods all go through `_call(op, *args)`, one of OPERATIONS: TCPStore sends
it to its server, HashStore runs it on a table in memory, FileStore on a table in a file.
"wait" and "queue_pop" block until their keys exist (or the timeout passes: None).
"""

import threading
import time
from datetime import timedelta

from .errors import DistStoreError, QueueEmptyError

OPERATIONS = ("set", "add", "compare_set", "append", "check", "delete_key", "num_keys",
              "list_keys", "queue_push", "queue_len", "wait", "queue_pop")
BLOCKING = {"wait": "values_of", "queue_pop": "queue_pop"}


def _bytes(value):
    return value.encode() if isinstance(value, str) else bytes(value)


class Table:
    """The operations on a store's contents: `values` (key -> bytes) and FIFO `queues`."""

    def __init__(self, values=None, queues=None):
        self.values, self.queues = values or {}, queues or {}

    def set(self, key, value):
        self.values[key] = value

    def add(self, key, amount):
        value = int(self.values.get(key, b"0")) + amount
        self.values[key] = str(value).encode()
        return value

    def compare_set(self, key, expected, desired):
        """PyTorch's rule: set `desired` where the value is `expected` (or the key is absent
        and `expected` empty); returns the value now held (absent: `expected`)."""
        if key not in self.values:
            if expected:
                return expected
        elif self.values[key] != expected:
            return self.values[key]
        self.values[key] = desired
        return desired

    def append(self, key, value):
        self.values[key] = self.values.get(key, b"") + value

    def values_of(self, keys):
        """The values of `keys`, or None while one is missing."""
        if not all(k in self.values for k in keys):
            return None
        return [self.values[k] for k in keys]

    def check(self, keys):
        return all(k in self.values for k in keys)

    def delete_key(self, key):
        return self.values.pop(key, None) is not None

    def num_keys(self):
        return len(self.values)

    def list_keys(self):
        return list(self.values)

    def queue_push(self, key, value):
        self.queues.setdefault(key, []).append(value)

    def queue_len(self, key):
        return len(self.queues.get(key, ()))

    def queue_pop(self, key):
        """The oldest value pushed under `key`, or None when there is none."""
        queue = self.queues.get(key)
        return queue.pop(0) if queue else None

    def run(self, op, *args):
        return getattr(self, op)(*args)


class Shared:
    """A Table in memory, shared by threads: blocking operations wait on a condition."""

    def __init__(self):
        self.table, self.cond = Table(), threading.Condition()

    def call(self, op, *args):
        with self.cond:
            if op not in BLOCKING:
                result = self.table.run(op, *args)
                self.cond.notify_all()
                return result
            *args, timeout = args
            deadline = time.monotonic() + timeout
            while (result := self.table.run(BLOCKING[op], *args)) is None:
                left = deadline - time.monotonic()
                if left <= 0 or not self.cond.wait(left):
                    return self.table.run(BLOCKING[op], *args)
            return result


class Store:
    """A key-value store the ranks of a job share; values are bytes (str is UTF-8 encoded)."""

    def __init__(self, timeout=timedelta(seconds=300)):
        self.set_timeout(timeout)

    def _call(self, op, *args):
        raise NotImplementedError

    def _where(self):
        return ""

    @property
    def timeout(self):
        return self._timeout

    def set_timeout(self, timeout):
        self._timeout = timeout if isinstance(timeout, timedelta) else \
            timedelta(seconds=float(timeout))

    @property
    def _seconds(self):
        return self._timeout.total_seconds()

    def set(self, key, value):
        """Store `value` under `key`."""
        self._call("set", key, _bytes(value))

    def get(self, key):
        """The value of `key`, waiting up to the store's timeout for it to be set."""
        return self.wait([key])[0]

    def add(self, key, amount):
        """Add `amount` to the integer under `key` (0 when absent) and return the new value."""
        return self._call("add", key, int(amount))

    def compare_set(self, key, expected_value, desired_value):
        """Set `desired_value` if `key` holds `expected_value` (absent: expected ""); returns
        the value `key` holds afterwards."""
        return self._call("compare_set", key, _bytes(expected_value), _bytes(desired_value))

    def append(self, key, value):
        """Append `value` to the bytes under `key` (creating it)."""
        self._call("append", key, _bytes(value))

    def multi_get(self, keys):
        return self.wait(keys)

    def multi_set(self, keys, values):
        for key, value in zip(keys, values):
            self.set(key, value)

    def wait(self, keys, timeout=None):
        """Block until every key in `keys` is set; returns their values."""
        seconds = self._seconds if timeout is None else \
            (timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout))
        values = self._call("wait", list(keys), seconds)
        if values is None:
            raise DistStoreError(f"{type(self).__name__}: timed out after {seconds:g} s waiting "
                                 f"for keys {list(keys)}{self._where()}")
        return values

    def check(self, keys):
        """True when every key in `keys` is set (does not wait)."""
        return self._call("check", list(keys))

    def delete_key(self, key):
        """Remove `key`; True if it was there."""
        return self._call("delete_key", key)

    def num_keys(self):
        return self._call("num_keys")

    def list_keys(self):
        return self._call("list_keys")

    def queue_push(self, key, value):
        """Append `value` to the queue `key` (queues live apart from the keys)."""
        self._call("queue_push", key, _bytes(value))

    def queue_pop(self, key, block=True):
        """The oldest value of queue `key`: waiting up to the timeout for one when `block`,
        else QueueEmptyError at once."""
        value = self._call("queue_pop", key, self._seconds if block else 0.0)
        if value is None and not block:
            raise QueueEmptyError("queue is empty")
        if value is None:
            raise DistStoreError(f"{type(self).__name__}: timed out after {self._seconds:g} s "
                                 f"waiting for an item in queue {key!r}{self._where()}")
        return value

    def queue_len(self, key):
        return self._call("queue_len", key)

    def has_extended_api(self):
        """True: compare_set, append, multi_get/multi_set and queues are all here."""
        return True
