"""genesis.return_types, as torch.return_types: the named tuples ops return (ops/named_tuples.py
makes them), one attribute each."""

from .ops.named_tuples import REGISTRY

globals().update(REGISTRY)
__all__ = sorted(REGISTRY)
