"""One reader of CUDA device arguments (backends.cuda.runtime.device.device_index), used by
genesis.cuda, its random functions and the runtime's streams: an int, None, "cuda", "cuda:N" or
a genesis.device, read as PyTorch's CUDA functions read them, with PyTorch's error for other
device types. No driver is needed: the current device is set by hand."""

import pytest
import torch
from torch.cuda._utils import _get_device_index

import genesis
import genesis.cuda.random
from genesis.backends.cuda.runtime import device as devices
from genesis.backends.cuda.runtime import stream as streams


@pytest.fixture
def current_is_1(monkeypatch):
    """This thread's current CUDA device is 1, as set_device(1) would leave it."""
    monkeypatch.setattr(devices, "_device_set", True)
    monkeypatch.setattr(devices._local, "device", 1)


@pytest.mark.parametrize("arg, want", [
    (None, 1), ("cuda", 1), (genesis.device("cuda"), 1), (0, 0), (3, 3), ("cuda:2", 2),
    (genesis.device("cuda", 2), 2)])
def test_device_index(current_is_1, arg, want):
    assert devices.device_index(arg) == want


def test_current_device_before_set_device_is_0(monkeypatch):
    monkeypatch.setattr(devices, "_device_set", False)
    assert devices.device_index(None) == devices.device_index("cuda") == 0


@pytest.mark.parametrize("arg", ["cpu", "cpu:0", genesis.device("cpu")])
def test_other_device_types_are_refused_as_torch(arg):
    torch_arg = torch.device(str(arg)) if isinstance(arg, genesis.device) else arg
    with pytest.raises(ValueError) as want:
        _get_device_index(torch_arg, optional=True)
    with pytest.raises(ValueError) as got:
        devices.device_index(arg)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda arg: genesis.cuda._index(arg), lambda arg: genesis.cuda.device(arg),
    lambda arg: genesis.cuda.random.default_generator(arg), lambda arg: streams.Stream(arg),
    lambda arg: streams.default_stream(arg), lambda arg: streams.current_stream(arg),
    lambda arg: streams.synchronize(arg)])
def test_callers_read_devices_through_the_helper(call):
    """Each refuses a CPU device with the helper's error before reaching for the driver."""
    with pytest.raises(ValueError, match="^Expected a cuda device, but got: cpu$"):
        call("cpu")


def test_default_generator_follows_the_current_device(current_is_1):
    generator = genesis.cuda.random.default_generator
    assert generator() is generator("cuda") is generator(1) is generator("cuda:1")
    assert generator(0) is not generator(1)
