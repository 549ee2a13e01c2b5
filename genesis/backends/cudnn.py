"""genesis.backends.cudnn: the settings scripts give PyTorch's cuDNN, on a framework without
cuDNN.

Genesis runs its own convolution and recurrent kernels, so `is_available()` is False and
`version()` None, as on a PyTorch built without cuDNN. `enabled`, `benchmark` and
`deterministic` change nothing, but what they ask for holds anyway: Genesis's convolution and
recurrent kernels are deterministic, and convolution and matmul configurations are timed per
shape and kept.

`allow_tf32` (default True) governs what PyTorch's governs in cuDNN: on the GPU, float32 1-D and
2-D convolutions (forward, transposed and both gradients; read at each call) and the recurrent
layers nn.RNN, LSTM and GRU (read when the layer runs forward, kept for its backward) run TF32
tensor-core products when it is set, IEEE float32 when not. Matrix products elsewhere (matmul,
F.linear, the RNN cells) follow `genesis.backends.cuda.matmul.allow_tf32` (default False).
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
