"""Process-wide settings of the torch namespace: float32 matmul precision, deterministic
algorithms and the CPU thread count.

Genesis's kernels are deterministic (no float atomics; reductions combine partial results in a
fixed order) except the fused attention's one-pass backward, whose dQ sums with float atomics as
torch's flash and memory-efficient backwards do. `use_deterministic_algorithms(True)` switches
that to its deterministic form (as torch's rule); no op ever needs to raise or warn.
"""

import warnings

from .backends import cuda as _cuda_backend
from .backends.cpu import threads as _cpu_threads

_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = ("default", "warn", "error")
_state = {"precision": "highest", "deterministic": False, "warn_only": False}


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


__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_num_threads", "get_num_threads"]
