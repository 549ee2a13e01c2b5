"""The CUDA backend: Genesis's own GPU runtime (runtime/) and Triton kernels (kernels/).

Importing this package loads nothing heavy; `register` (imported by the dispatcher on first use
of a "cuda" device) imports Triton and registers the kernels. The driver is initialised lazily.
It also holds torch.backends.cuda's settings: `matmul` and the attention flags (sdp.py).
"""

from .sdp import (SDPAParams, SDPBackend, allow_fp16_bf16_reduction_math_sdp,  # noqa: F401
                  can_use_cudnn_attention, can_use_efficient_attention, can_use_flash_attention,
                  cudnn_sdp_enabled, enable_cudnn_sdp, enable_flash_sdp, enable_math_sdp,
                  enable_mem_efficient_sdp, flash_sdp_enabled,
                  fp16_bf16_reduction_math_sdp_allowed, is_ck_sdpa_available,
                  is_flash_attention_available, math_sdp_enabled, mem_efficient_sdp_enabled,
                  sdp_kernel)


class _MatmulFlags:
    """`genesis.backends.cuda.matmul`: as torch.backends.cuda.matmul.

    allow_tf32: float32 matmuls may round their inputs to TF32 (10-bit mantissa) on tensor
    cores, several times faster; off by default (strict IEEE float32, as PyTorch).
    """

    __slots__ = ("allow_tf32",)

    def __init__(self):
        self.allow_tf32 = False

    def __repr__(self):
        return f"matmul(allow_tf32={self.allow_tf32})"


matmul = _MatmulFlags()
