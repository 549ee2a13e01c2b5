"""Embedding: a lookup table of `num_embeddings` vectors of size `embedding_dim`."""

from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..functional.sparse import _check_padding_idx
from ..parameter import Parameter
from ._utils import new_parameter
from .module import Module


class Embedding(Module):
    """Rows of `weight` (N(0, 1) initialised; the padding row zeroed) selected by index."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = new_parameter(num_embeddings, embedding_dim, device=device, dtype=dtype)
            self.weight.requires_grad_(not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (2-D), frozen by default."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def extra_repr(self):
        parts = [f"{self.num_embeddings}, {self.embedding_dim}"]
        for name, default in (("padding_idx", None), ("max_norm", None), ("norm_type", 2.0),
                              ("scale_grad_by_freq", False), ("sparse", False)):
            value = getattr(self, name)
            if value != default:
                parts.append(f"{name}={value}")
        return ", ".join(parts)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows of `weight` (N(0, 1) initialised, the padding row
    zeroed), without materialising each bag's embeddings."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings, "padding_idx")
        if _weight is None:
            self.weight = new_parameter(num_embeddings, embedding_dim, device=device, dtype=dtype)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)

    reset_parameters = Embedding.reset_parameters

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` (2-D), frozen by default."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self):
        parts = [f"{self.num_embeddings}, {self.embedding_dim}"]
        for name, default in (("max_norm", None), ("norm_type", 2.0),
                              ("scale_grad_by_freq", False), ("mode", None),
                              ("padding_idx", None)):
            value = getattr(self, name)
            if value != default:
                parts.append(f"{name}={value!r}" if name == "mode" else f"{name}={value}")
        return ", ".join(parts)
