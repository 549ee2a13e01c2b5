"""genesis.cuda's PyTorch names over its own functions: capability queries, the per-process
memory fraction, the deprecated memory names (with PyTorch's FutureWarnings) and device_of. The
allocator and device queries are stand-ins here; the GPU suite runs the real ones."""

import types

import pytest

import genesis
import genesis.cuda as cuda


class _Allocator:
    def __init__(self):
        self.config = types.SimpleNamespace(memory_fraction=1.0)
        self.resets = 0

    def set_memory_fraction(self, fraction):
        self.config.memory_fraction = fraction

    def memory_reserved(self):
        return 4096

    def max_memory_reserved(self):
        return 8192

    def reset_peak_memory_stats(self):
        self.resets += 1


@pytest.fixture
def allocator(monkeypatch):
    stand_in = _Allocator()
    monkeypatch.setattr(cuda, "_allocator", lambda device=None: stand_in)
    return stand_in


def test_per_process_memory_fraction(allocator):
    assert cuda.get_per_process_memory_fraction() == 1.0
    cuda.set_per_process_memory_fraction(0.25)
    assert cuda.get_per_process_memory_fraction() == 0.25


@pytest.mark.parametrize("old, new, value", [("memory_cached", "memory_reserved", 4096),
                                             ("max_memory_cached", "max_memory_reserved", 8192)])
def test_renamed_memory_queries_warn_as_torch(allocator, old, new, value):
    with pytest.warns(FutureWarning, match=f"`torch.cuda.{old}` has been renamed to "
                                           f"`torch.cuda.{new}`"):
        assert getattr(cuda, old)() == value


@pytest.mark.parametrize("name", ["reset_max_memory_allocated", "reset_max_memory_cached"])
def test_reset_max_resets_every_peak(allocator, name):
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        getattr(cuda, name)()
    assert allocator.resets == 1


@pytest.mark.parametrize("available, capability, expected", [(False, None, False),
                                                             (True, (7, 5), False),
                                                             (True, (8, 0), True),
                                                             (True, (9, 0), True)])
def test_bf16_and_tf32_support(monkeypatch, available, capability, expected):
    monkeypatch.setattr(cuda, "is_available", lambda: available)
    monkeypatch.setattr(cuda, "get_device_capability", lambda device=None: capability)
    assert cuda.is_bf16_supported() is expected
    assert cuda.is_bf16_supported(including_emulation=False) is expected
    assert cuda.is_tf32_supported() is expected


def test_device_of_a_cpu_tensor_touches_no_device():
    with cuda.device_of(genesis.ones(2)):
        pass
