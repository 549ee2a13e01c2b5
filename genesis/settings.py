"""Process-wide settings of the torch namespace: float32 matmul precision, deterministic
algorithms, the CPU thread counts, denormals and warnings given once.

Genesis's kernels are deterministic (no float atomics; reductions combine partial results in a
fixed order) except the fused attention's one-pass backward, whose dQ sums with float atomics as
torch's flash and memory-efficient backwards do. `use_deterministic_algorithms(True)` switches
that to its deterministic form (as torch's rule); no op ever needs to raise or warn.
"""

import os
import warnings

from ._warnings import is_warn_always_enabled, set_warn_always  # noqa: F401  (exported)
from .backends import cuda as _cuda_backend
from .backends.cpu import threads as _cpu_threads

_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = ("default", "warn", "error")
_state = {"precision": "highest", "deterministic": False, "warn_only": False,
          "interop_threads": None}


def set_float32_matmul_precision(precision):
    """"highest" keeps float32 matmuls in IEEE float32; "high" and "medium" let them use TF32
    tensor cores (`genesis.backends.cuda.matmul.allow_tf32`). CPU matmuls are always float32."""
    if precision not in _PRECISIONS:
        warnings.warn(f"set_float32_matmul_precision: unknown precision {precision!r}, expected "
                      f"one of {', '.join(_PRECISIONS)}; the setting is unchanged", stacklevel=2)
        return
    _state["precision"] = precision
    _cuda_backend.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    """The precision last set, or the one `genesis.backends.cuda.matmul.allow_tf32` implies
    when that flag was changed since."""
    tf32 = _cuda_backend.matmul.allow_tf32
    if tf32 == (_state["precision"] != "highest"):
        return _state["precision"]
    return "high" if tf32 else "highest"


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms only (the fused attention's backward is the one op
    that then changes form)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    """Whether use_deterministic_algorithms(True) is in effect."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether use_deterministic_algorithms(True, warn_only=True) is in effect."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """use_deterministic_algorithms by level: 0 or "default" (off), 1 or "warn" (warn only),
    2 or "error" (on)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0 (default), 1 (warn) or 2 (error), as set_deterministic_debug_mode takes them."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_num_threads(n):
    """The number of threads of CPU ops: numpy's BLAS pool (matmuls, convolutions, linear
    algebra), resized through threadpoolctl; checked as PyTorch checks it."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _cpu_threads.set_num_threads(n)


def get_num_threads():
    """The number of threads of CPU ops (numpy's BLAS pool)."""
    return _cpu_threads.get_num_threads()


def set_num_interop_threads(n):
    """The number of threads for running independent ops side by side, settable once, as
    PyTorch's. Genesis runs ops one after another on the calling thread (and the GPU's
    streams), so the number is kept and reported, and nothing else changes."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got "
                           f"{type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _state["interop_threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _state["interop_threads"] = n


def get_num_interop_threads():
    """The number set by set_num_interop_threads, else the CPU count (PyTorch's default)."""
    return _state["interop_threads"] or os.cpu_count() or 1


def init_num_threads():
    """PyTorch initializes a new thread's intra-op thread count here; Genesis's CPU ops use
    numpy's one pool for every thread, so there is nothing to do."""


def set_flush_denormal(mode):
    """Whether denormal floats could be flushed to zero on the CPU: False, as numpy offers no
    such mode (PyTorch returns False too where the CPU lacks it); denormals stay exact."""
    return False


__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_num_threads", "get_num_threads",
           "set_num_interop_threads", "get_num_interop_threads", "init_num_threads",
           "set_flush_denormal", "set_warn_always", "is_warn_always_enabled"]
