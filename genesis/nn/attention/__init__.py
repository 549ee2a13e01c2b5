"""genesis.nn.attention, as torch.nn.attention: choosing scaled_dot_product_attention's backend
(`sdpa_kernel`, `SDPBackend`) and the causal biases (`bias`). flex_attention and its block masks
are the submodule `genesis.nn.attention.flex_attention`, imported on its own as torch's is.

The backends and how they map onto Genesis's kernels are described in
genesis/backends/cuda/sdp.py. torch's registry of alternative flash implementations
(register_flash_attention_impl and its kin) selects FlashAttention-3/4 builds for CUDA; Genesis
has one flash kernel of its own, so it has no such registry.
"""

import contextlib

from ...backends.cuda import sdp
from ...backends.cuda.sdp import SDPBackend
from . import bias  # noqa: F401  (torch.nn.attention.bias)

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block only `backends` (one SDPBackend or a list) may run
    scaled_dot_product_attention; with `set_priority`, tried in their order. The flags and order
    in force before are restored after."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    backends = [backends] if isinstance(backends, SDPBackend) else backends
    with sdp.backends_within(backends, set_priority) as context:
        yield context
