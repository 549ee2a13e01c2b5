"""The CUDA runtime of Genesis: driver, devices, streams and events, memory, arrays."""
