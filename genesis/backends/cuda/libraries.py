"""Vendor libraries the CUDA backend can call next to its own Triton kernels.

cuBLASLt comes through nvmath-python's low-level bindings (the `cublas` extra), so the matmul
dispatcher can measure it against Triton per shape. Each device context creates a library's
handle on first request and destroys it at exit, newest first (seed 003).
"""

from .runtime.device import get_context


def has_cublaslt():
    """True when nvmath-python's cuBLASLt bindings can be imported."""
    try:
        from nvmath.bindings import cublasLt  # noqa: F401
    except ImportError:
        return False
    return True


def cublaslt_handle(device=None):
    """The device's cuBLASLt handle (an int), created on first use in its context."""
    try:
        from nvmath.bindings import cublasLt
    except ImportError as e:
        raise RuntimeError("cuBLASLt needs nvmath-python: pip install 'genesis[cublas]'") from e
    return get_context(device).handle("cublasLt", cublasLt.create, cublasLt.destroy)


def cublaslt_version():
    from nvmath.bindings import cublasLt
    return cublasLt.get_version()
