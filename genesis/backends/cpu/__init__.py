"""The CPU backend: numpy kernels, registered with the dispatcher on import."""

from . import array, elementwise  # noqa: F401  (importing registers the kernels)
