"""The CUDA backend: Genesis's own GPU runtime (runtime/) and Triton kernels (kernels/).

Importing this package loads nothing heavy; `register` (imported by the dispatcher on first use
of a "cuda" device) imports Triton and registers the kernels. The driver is initialised lazily.
"""


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
