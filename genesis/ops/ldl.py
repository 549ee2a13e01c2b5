"""torch.linalg's symmetric-indefinite factorization A = P L D L^T P^T: ldl_factor_ex,
ldl_factor and ldl_solve, on backends/cpu/ldl.py's kernels (LAPACK's sytf2 and sytrs; the GPU
runs them through the host, as the decompositions without a cuSOLVER path). As in PyTorch none
is differentiable: a result that would need a gradient gets a node whose backward raises.
"""


from .. import dtypes
from ..autograd.function import Function
from .common import call, check_devices, wrap
from .decompositions import _batch_broadcast, _raise_for, check_matrix
from .named_tuples import return_type

LDLFactorResult = return_type("linalg_ldl_factor", ("LD", "pivots"))
LDLFactorExResult = return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))


class _NotDifferentiable(Function):
    """kernel `op` of the arguments; the first result is the differentiable one, whose
    backward raises PyTorch's error (its node is named NotImplemented, as PyTorch's)."""

    @staticmethod
    def forward(ctx, op, *args):
        ctx.op, ctx.node_name = op, "NotImplemented"
        out = call(op, *args)
        device = args[0].device
        out = out if isinstance(out, tuple) else (out,)
        results = [wrap(o, device) for o in out]
        ctx.mark_non_differentiable(*results[1:])
        return tuple(results) if len(results) > 1 else results[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """(LD, pivots, info) of the symmetric A given by its lower triangle: LD holds L's
    multipliers below the diagonal and the block-diagonal D on it, pivots LAPACK's 1-based
    interchanges (negative for 2x2 blocks); info > 0 where D is singular. `hermitian` is the
    same factorization for real matrices."""
    check_matrix("torch.linalg.ldl_factor_ex", A)
    LD, pivots, info = _NotDifferentiable.apply("linalg_ldl_factor_ex", A)
    if check_errors:
        _raise_singular("torch.linalg.ldl_factor_ex", A, info)
    return LDLFactorExResult(LD, pivots, info)


def _raise_singular(op, A, info):
    """LinAlgError where D is singular (PyTorch fails an internal assert there instead)."""
    _raise_for(op, info, A.ndim > 2,
               lambda i: f"The factorization could not be completed because the input is not "
                         f"invertible: D[{i - 1},{i - 1}] is zero.")


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots) as ldl_factor_ex's; LinAlgError where D is singular."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular("torch.linalg.ldl_factor", A, info)
    return LDLFactorResult(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B, A given by ldl_factor's (LD, pivots); batch dims broadcast."""
    check_matrix("torch.linalg.ldl_solve", LD)
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(B.ndim, 1)}, {max(B.ndim, 1) - 1}], but got -2)")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to "
                           f"be the same, but got pivots with shape {list(pivots.shape)} instead")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{dtypes.scalar_type_name(B.dtype)} and A of type "
                           f"{dtypes.scalar_type_name(LD.dtype)} instead.")
    check_devices("torch.linalg.ldl_solve", LD, pivots, B)
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix "
                           f"is {LD.shape[-2]} by {LD.shape[-1]} but each b matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    LD, B = _batch_broadcast("torch.linalg.ldl_solve", LD, B)
    pivots = pivots.expand(*LD.shape[:-1])
    return _NotDifferentiable.apply("linalg_ldl_solve", LD, pivots, B)
