"""Which implementations scaled_dot_product_attention may choose: torch.backends.cuda's SDP
flags, process-wide and read on every call (on the CPU too, as torch's are).

Genesis has two implementations on each device. The fused one is FlashAttention-2 in Triton on
the GPU (with its one-query decode kernel), and on the CPU the composite that PyTorch's CPU build
runs as its fused flash kernel. The math one is the composite of matmul, softmax and dropout
that handles every input. PyTorch's backends map onto them:
- MATH: the math composite.
- FLASH_ATTENTION: the fused one, on the GPU and the CPU.
- EFFICIENT_ATTENTION and CUDNN_ATTENTION: on the GPU, the same fused kernel (Genesis has no
  separate memory-efficient or cuDNN kernel; this one computes the same attention in the same
  memory). On the CPU neither exists, as in PyTorch's CPU build.
- OVERRIDEABLE: no implementation.

A backend is tried when it is enabled, in the priority order (PyTorch's default: flash,
efficient, math, cudnn, overrideable; `sdpa_kernel(..., set_priority=True)` changes it). Which
inputs the fused kernels take is the attention module's to say: it registers its checks here
(`register_checks`), so `can_use_flash_attention` and the rest answer from the same rules that
choose the kernel.
"""

import contextlib
import enum
import importlib.util
import warnings


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention backends, as torch.nn.attention.SDPBackend."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__  # "SDPBackend.MATH", as torch's, not IntEnum's "0"


SDPBackend.__module__ = "genesis.nn.attention"

_DEFAULT_PRIORITY = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
                     SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)
_state = {"enabled": set(_DEFAULT_PRIORITY), "priority": _DEFAULT_PRIORITY,
          "math_reduction": False}
_checks = {}  # backend -> check(params, debug) -> bool, from the attention module


def _set(backend, enabled):
    (_state["enabled"].add if enabled else _state["enabled"].discard)(backend)


def flash_sdp_enabled():
    """Whether the flash backend may run."""
    return SDPBackend.FLASH_ATTENTION in _state["enabled"]


def enable_flash_sdp(enabled: bool):
    """Enable or disable the flash backend."""
    _set(SDPBackend.FLASH_ATTENTION, enabled)


def mem_efficient_sdp_enabled():
    """Whether the memory-efficient backend may run."""
    return SDPBackend.EFFICIENT_ATTENTION in _state["enabled"]


def enable_mem_efficient_sdp(enabled: bool):
    """Enable or disable the memory-efficient backend."""
    _set(SDPBackend.EFFICIENT_ATTENTION, enabled)


def math_sdp_enabled():
    """Whether the math backend may run."""
    return SDPBackend.MATH in _state["enabled"]


def enable_math_sdp(enabled: bool):
    """Enable or disable the math backend."""
    _set(SDPBackend.MATH, enabled)


def cudnn_sdp_enabled():
    """Whether the cuDNN backend may run."""
    return SDPBackend.CUDNN_ATTENTION in _state["enabled"]


def enable_cudnn_sdp(enabled: bool):
    """Enable or disable the cuDNN backend."""
    _set(SDPBackend.CUDNN_ATTENTION, enabled)


def allow_fp16_bf16_reduction_math_sdp(enabled: bool):
    """Let the math backend compute float16/bfloat16 attention in that type (off: it computes
    in float32 and rounds once, as torch's)."""
    _state["math_reduction"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    """Whether the math backend computes half types in their own precision."""
    return _state["math_reduction"]


def enabled_backends():
    """The enabled backends in priority order."""
    return [b for b in _state["priority"] if b in _state["enabled"]]


def set_backends(backends, set_priority=False):
    """Enable exactly `backends`; with `set_priority`, try them in their order first."""
    backends = list(dict.fromkeys(backends))
    _state["enabled"] = set(backends)
    if set_priority:
        _state["priority"] = tuple(backends) + tuple(
            b for b in _state["priority"] if b not in backends)


@contextlib.contextmanager
def backends_within(backends, set_priority=False):
    """Within the block only `backends` are enabled (see set_backends); the flags and order in
    force before are restored after it."""
    saved = set(_state["enabled"]), _state["priority"]
    try:
        set_backends(backends, set_priority)
        yield {}
    finally:
        _state["enabled"], _state["priority"] = saved


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Deprecated form of genesis.nn.attention.sdpa_kernel: enable these backends within the
    block (FutureWarning, as torch's)."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` "
                  "for the new context manager, with updated signature.", FutureWarning,
                  stacklevel=3)
    chosen = [b for b, on in ((SDPBackend.FLASH_ATTENTION, enable_flash),
                              (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                              (SDPBackend.MATH, enable_math),
                              (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if on]
    with backends_within(chosen) as context:
        yield context


class SDPAParams:
    """The arguments of one scaled_dot_product_attention call, for the can_use_* checks."""

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa=False):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = float(dropout), is_causal, enable_gqa


def register_checks(checks):
    """Install the attention module's {backend: check(params, debug)}."""
    _checks.update(checks)


def can_use(backend, params, debug=False):
    """Whether `backend`'s implementation takes `params` (its flag aside); with `debug`, warn
    why not."""
    check = _checks.get(backend)
    return bool(check and check(params, debug))


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether the flash backend's kernel takes these inputs; `debug` warns why not."""
    return can_use(SDPBackend.FLASH_ATTENTION, params, debug)


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether the memory-efficient backend (on the GPU, the fused kernel) takes these inputs."""
    return can_use(SDPBackend.EFFICIENT_ATTENTION, params, debug)


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether the cuDNN backend (on the GPU, the fused kernel) takes these inputs."""
    return can_use(SDPBackend.CUDNN_ATTENTION, params, debug)


def is_flash_attention_available() -> bool:
    """Whether the GPU's fused attention kernel can be built: Triton is installed."""
    return importlib.util.find_spec("triton") is not None


def is_ck_sdpa_available() -> bool:
    """False: Composable Kernel attention is ROCm's."""
    return False
