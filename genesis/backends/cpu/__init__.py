"""The CPU backend: numpy kernels, registered with the dispatcher on import."""

from . import array, dlpack, elementwise, reduce  # noqa: F401  (importing registers the kernels)
