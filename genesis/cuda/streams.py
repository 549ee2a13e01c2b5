"""torch.cuda's stream names beyond Stream and Event: `set_stream` and `StreamContext` (what
`genesis.cuda.stream` returns), which make a stream's device current as well, as PyTorch's do,
and `ExternalStream` / `get_stream_from_external` for streams that another library made."""

from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import driver as _driver
from ..backends.cuda.runtime import stream as _streams


def set_stream(stream):
    """Make `stream` current on its device, and that device the current one; None: a no-op
    (prefer `with genesis.cuda.stream(s):`)."""
    if stream is None:
        return
    if stream.device_index != _devices.current_device():
        _devices.set_device(stream.device_index)
    _streams.set_stream(stream)


class StreamContext:
    """`with StreamContext(s):` runs the block with `s` current, its device current too, and
    restores the previous streams of both devices and the previous device; None: a no-op."""

    def __init__(self, stream):
        self.stream = stream
        self.src_prev_stream = self.dst_prev_stream = None

    def __enter__(self):
        if self.stream is None:
            return None
        self.src_prev_stream = _streams.current_stream()
        if self.src_prev_stream.device_index != self.stream.device_index:
            self.dst_prev_stream = _streams.current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)
        return False


class ExternalStream(_streams.Stream):
    """A stream another library made, by its handle (a cudaStream_t as an int), for use as any
    genesis stream. Genesis never destroys it: keep it alive while it is in use.

    Args:
        stream_ptr (int): the stream's handle.
        device (optional): the device it was made on; the current one when None.
    """

    def __init__(self, stream_ptr, device=None, **kwargs):
        super().__init__(device, _handle=stream_ptr)
        self.priority = _driver.stream_priority(stream_ptr)


def get_stream_from_external(data_ptr, device=None):
    """A stream over handle `data_ptr`, made by another library on `device` (the current one
    when None); see ExternalStream."""
    return ExternalStream(data_ptr, device)
