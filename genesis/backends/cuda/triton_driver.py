"""Triton's active driver, backed by the Genesis runtime instead of PyTorch.

Triton's stock NVIDIA driver asks torch for the current device, stream and capability; this one
asks Genesis, so no GPU path imports torch. Its loader and launcher (Triton's own C helpers,
built once per machine) are reused as they are.
"""

import os

_installed = False


def _make_driver_class():
    from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils

    from .runtime import device, stream
    from .timing import flush_l2

    class GenesisDriver(CudaDriver):
        """Device, stream, capability and benchmarking from Genesis (see module docstring)."""

        def __init__(self):
            self.utils = CudaUtils()
            self.launcher_cls = CudaLauncher
            self.get_current_device = device.current_device
            self.set_current_device = device.set_device
            self.get_current_stream = stream.current_stream_handle

        def get_device_capability(self, index=None):
            return device.get_context(index).properties.capability

        @staticmethod
        def is_active():
            return True

        def get_active_torch_device(self):
            from ...device import device as genesis_device
            return genesis_device("cuda", device.current_device())

        def get_device_interface(self):
            return _DeviceInterface

        def get_benchmarker(self):
            from triton.testing import do_bench
            return do_bench

        def get_empty_cache_for_benchmark(self):
            return 256 << 20  # the bytes flushed before each timed call, as Triton's own driver

        def clear_cache(self, nbytes):
            flush_l2(nbytes)

    class _DeviceInterface:
        """What Triton's benchmarking asks of `torch.cuda`, from the Genesis runtime."""

        Event = stream.Event
        synchronize = staticmethod(stream.synchronize)
        current_device = staticmethod(device.current_device)

    return GenesisDriver


def install():
    """Make Genesis's driver Triton's active one (once) and point Triton's cache where asked."""
    global _installed
    if _installed:
        return
    from triton import knobs
    from triton.runtime import driver
    cache_dir = os.environ.get("GENESIS_KERNEL_CACHE_DIR")
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        knobs.cache.dir = cache_dir
    driver.set_active(_make_driver_class()())
    _installed = True
