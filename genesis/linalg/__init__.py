"""genesis.linalg: linear algebra as `torch.linalg`, batched over leading dims and
differentiable.

Decompositions run in the backend's kernels: numpy.linalg on the CPU; on CUDA, cuSOLVER for
solve, inv, cholesky, eigh and svd (genesis/backends/cuda/linalg_cusolver.py) and a host round
trip for the rest (linalg_host.py); their gradients are genesis ops.
"""

from ..ops.decompositions import (LinAlgError, cholesky, cholesky_ex, det, eigh, eigvalsh, inv,
                                  inv_ex, lstsq, lu, lu_factor, lu_factor_ex, pinv, qr, slogdet,
                                  solve, solve_ex, solve_triangular, svd, svdvals)
from ..ops.householder import householder_product
from ..ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ..ops.linalg import matmul, tensordot, vecdot
from ..ops.matrix_functions import (cond, diagonal, linalg_cross as cross, matrix_exp,
                                    matrix_norm, matrix_power, matrix_rank, multi_dot, norm, vander)
from ..ops.solvers import lu_solve, tensorinv, tensorsolve
from ..ops.reduce import vector_norm
from .. import numpy_names, out_variants

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex",
           "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensordot", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

out_variants.install(globals(), out_variants.LINALG_FUNCTIONS)
numpy_names.install(globals(), "genesis.linalg")
