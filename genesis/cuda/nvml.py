"""Device monitoring through NVML, as torch.cuda's reads it through pynvml: memory in use,
utilization, temperature, power draw, clock rate, and the processes on a device.

Genesis calls NVML through cuda-bindings' own module (cuda.bindings.nvml, cuda-bindings 13.2
or newer, part of the `cuda` extra), and finds the NVML device of a CUDA index by its PCI bus
id, so CUDA_VISIBLE_DEVICES in any form (indices, UUIDs) is respected.
"""

from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import driver as _driver

_MISSING = ("cuda.bindings.nvml does not seem to be installed or it can't be imported: NVML "
            "queries need cuda-bindings 13.2 or newer (pip install 'genesis[cuda]')")
_NO_DRIVER = "cuda driver can't be loaded, is cuda enabled?"
_initialised = []


def _nvml():
    """cuda.bindings.nvml, initialised once; PyTorch's errors where NVML cannot be used."""
    try:
        from cuda.bindings import nvml
    except ImportError as e:
        raise ModuleNotFoundError(_MISSING) from e
    if not _initialised:
        try:
            nvml.init_v2()
        except (nvml.NvmlError, RuntimeError) as e:  # no libnvidia-ml, or no driver loaded
            raise RuntimeError(_NO_DRIVER) from e
        _initialised.append(True)
    return nvml


def _query(device):
    """(nvml module, NVML handle of CUDA device `device`, the current one when None)."""
    nvml = _nvml()
    bus_id = _driver.device_pci_bus_id(_devices.device_index(device))
    return nvml, nvml.device_get_handle_by_pci_bus_id_v2(bus_id)


def device_memory_used(device=None):
    """Device memory in use by all processes, in bytes, as nvidia-smi shows it."""
    nvml, handle = _query(device)
    return nvml.device_get_memory_info_v2(handle).used


def memory_usage(device=None):
    """The percent of the last sample period (1/6 s to 1 s) in which device memory was read or
    written, as nvidia-smi shows it."""
    nvml, handle = _query(device)
    return nvml.device_get_utilization_rates(handle).memory


def utilization(device=None):
    """The percent of the last sample period (1/6 s to 1 s) in which one or more kernels ran on
    the device, as nvidia-smi shows it."""
    nvml, handle = _query(device)
    return nvml.device_get_utilization_rates(handle).gpu


def temperature(device=None):
    """The GPU die's temperature in degrees C, averaged over the last sample period."""
    nvml, handle = _query(device)
    return nvml.device_get_temperature_v(handle, nvml.TemperatureSensors.TEMPERATURE_GPU)


def power_draw(device=None):
    """The device's power draw in mW (milliwatts), averaged over the last sample period."""
    nvml, handle = _query(device)
    return nvml.device_get_power_usage(handle)


def clock_rate(device=None):
    """The SM clock in MHz over the last sample period, as nvidia-smi shows it."""
    nvml, handle = _query(device)
    return nvml.device_get_clock_info(handle, nvml.ClockType.CLOCK_SM)


def list_gpu_processes(device=None):
    """A readable list of the processes running on the device and the memory each uses, or
    a line saying why NVML could not be asked (as PyTorch's, it never raises for that)."""
    try:
        nvml, handle = _query(device)
    except ModuleNotFoundError:
        return "cuda.bindings.nvml module not found, please install cuda-bindings>=13.2"
    except RuntimeError:
        return _NO_DRIVER
    lines = [f"GPU:{_devices.device_index(device)}"]
    processes = nvml.device_get_compute_running_processes_v3(handle)
    if len(processes) == 0:
        lines.append("no processes are running")
    for p in processes:
        mb = int(p.used_gpu_memory) / (1024 * 1024)
        lines.append(f"process {int(p.pid):>10d} uses {mb:>12.3f} MB GPU memory")
    return "\n".join(lines)
