"""Causal biases for scaled_dot_product_attention, as torch.nn.attention.bias: a CausalBias
passed as `attn_mask` is the causal mask of its variant, run through is_causal where it can."""

import enum
import warnings

from ... import dtypes
from ...ops import creation, shape_copies

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """UPPER_LEFT: query i sees keys 0..i (torch.tril of the (L, S) ones). LOWER_RIGHT: the
    triangle aligned to the bottom-right corner, query i seeing keys 0..i + S - L. The two agree
    when L == S."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


def causal_mask(seq_len_q, seq_len_kv, device, offset=0):
    """Bool (L, S) mask letting query i attend to keys 0..i + offset (0: top-left aligned),
    made on `device`."""
    ones = creation.ones((seq_len_q, seq_len_kv), dtype=dtypes.bool_, device=device)
    return shape_copies.tril(ones, offset)


class CausalBias:
    """A causal (L, S) attention mask of one variant, kept as its sizes rather than a tensor.
    Made by causal_upper_left and causal_lower_right."""

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)

    def _materialize(self, device=None):
        """The bool mask itself (True: may attend), on `device` (default: the CPU)."""
        offset = 0 if self.variant == CausalVariant.UPPER_LEFT else self.seq_len_kv - self.seq_len_q
        return causal_mask(self.seq_len_q, self.seq_len_kv, device or "cpu", offset)

    def __repr__(self):
        return repr(self._materialize())


def _sizes(size, name):
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return size


def causal_upper_left(*size):
    """The upper-left causal bias of an (L, S) score matrix."""
    seq_len_q, seq_len_kv = _sizes(size, "causal_upper_left")
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size):
    """The lower-right causal bias of an (L, S) score matrix."""
    seq_len_q, seq_len_kv = _sizes(size, "causal_lower_right")
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
