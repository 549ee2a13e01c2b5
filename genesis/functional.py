"""genesis.functional, as torch.functional: the functions PyTorch keeps in that module, as
genesis.<name> has them (without the out= keyword, as in PyTorch). stft and istft are absent
(their results are complex)."""

from .ops.counting import unique_consecutive
from .ops.linalg import einsum, tensordot
from .ops.matrix_functions import pca_lowrank, svd_lowrank
from .ops.numeric import broadcast_shapes, broadcast_tensors, unravel_index
from .ops.products import block_diag, cartesian_prod, cdist, chain_matmul
from .ops.reduce import norm
from .ops.shape import atleast_1d, atleast_2d, atleast_3d, meshgrid, split
from .ops.solvers import lu
from .ops.sorting import unique

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "lu", "norm",
           "meshgrid", "pca_lowrank", "split", "svd_lowrank", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]
