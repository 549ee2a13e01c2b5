"""genesis.utils.hooks, as torch.utils.hooks: RemovableHandle, what every register_*hook returns."""

from ..tensor import RemovableHandle

__all__ = ["RemovableHandle"]
