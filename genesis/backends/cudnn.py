"""genesis.backends.cudnn: the settings scripts give PyTorch's cuDNN, on a framework without
cuDNN.

Genesis runs its own convolution and recurrent kernels, so `is_available()` is False and
`version()` None, as on a PyTorch built without cuDNN, where these flags are accepted and change
nothing. What they ask for holds anyway: every Genesis kernel is deterministic (`deterministic`),
and convolution and matmul configurations are timed per shape and kept (`benchmark`). The
precision of Genesis's float32 convolutions and recurrent products follows
`genesis.backends.cuda.matmul.allow_tf32`, not `allow_tf32` here.
"""

import contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True

_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")


def is_available():
    """False: Genesis does not use cuDNN."""
    return False


def version():
    """None: no cuDNN is loaded."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Within the block, the flags hold these values; they are restored after it."""
    module = globals()
    saved = {name: module[name] for name in _FLAGS}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                  deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(saved)
