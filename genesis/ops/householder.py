"""torch.linalg.householder_product (LAPACK's orgqr, also `torch.orgqr`): the first n columns of
H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, v_i being column i of A below the diagonal with 1 on
it. Composed of genesis ops, applying the reflectors to the identity's first n columns last one
first, as orgqr does: it runs on every device, and its gradient in A and tau is autograd's."""

from .. import dtypes
from .common import check_devices
from .creation import eye
from .shape_copies import tril

_OP = "torch.linalg.householder_product"


def _check(A, tau):
    """PyTorch's checks, with its texts."""
    check_devices(_OP, A, tau)
    if A.ndim < 2:
        raise RuntimeError(f"{_OP}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{_OP}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{_OP}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{_OP}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{_OP}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{_OP}: tau dtype {dtypes.scalar_type_name(tau.dtype)} does not "
                           f"match input dtype {dtypes.scalar_type_name(A.dtype)}")
    if A.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f"\"orgqr_{A.device.type}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(A.dtype)}'")


def householder_product(A, tau):
    """The first n columns of the product of the Householder reflectors stored in A (m x n,
    m >= n) and tau (k <= n scalars), batched over leading dims."""
    _check(A, tau)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    reflectors = tril(A[..., :, :k], -1) + eye(m, k, dtype=A.dtype, device=A.device)
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(*A.shape)
    for i in reversed(range(k)):
        v = reflectors[..., :, i:i + 1]
        Q = Q - (tau[..., i, None, None] * v) @ (v.mT @ Q)
    return Q
