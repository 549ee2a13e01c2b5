"""genesis.cpu, as torch.cpu: the CPU's side of device-agnostic code (`getattr(genesis,
device.type).synchronize()`). Genesis runs CPU ops synchronously on the calling thread, so
streams and events here order nothing and every wait returns at once."""

import contextlib

from . import amp


def is_available():
    return True


def is_initialized():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Accepted for device-agnostic code; there is one CPU device."""


def synchronize(device=None):
    """Returns at once: CPU ops have finished when they return."""


class Stream:
    """A CPU stream: work is already in order, so waits and records do nothing."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        pass

    def wait_event(self, event):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


class Event:
    """A CPU event: always complete."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_default_stream = Stream()
_current_stream = _default_stream


def current_stream(device=None):
    return _current_stream


@contextlib.contextmanager
def stream(stream):
    """Make `stream` current inside the block (None leaves the current one)."""
    global _current_stream
    previous = _current_stream
    if stream is not None:
        _current_stream = stream
    try:
        yield
    finally:
        _current_stream = previous


StreamContext = stream

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event"]
