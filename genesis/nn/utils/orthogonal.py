"""The orthogonal parametrization: a matrix (or batch) kept with orthonormal columns (or rows,
when wider than tall) as the image of an unconstrained one.

The maps are written with genesis ops so they differentiate: "matrix_exp" (exp of a
skew-symmetric matrix, by scaling and squaring a Taylor series) and "householder" (a product of
reflections). With trivialization (the default), assignment stores the orthogonalized value as
the buffer `base` and the parameter restarts at the map's identity, as torch does.
"""

import math

from ...autograd.grad_mode import no_grad
from ...ops import creation, random
from ...ops.householder import householder_product
from ...ops.shape_copies import cat, stack
from ..modules.module import Module
from . import parametrize

_TAYLOR_TERMS = 18  # exp's series past ||B|| <= 1/2 leaves under 1e-22 of it
_MAPS = ("matrix_exp", "cayley", "householder")


def _eye_like(a, n):
    return creation.eye(n, dtype=a.dtype, device=a.device).expand(*a.shape[:-2], n, n)


def matrix_exp(a):
    """exp(a) of square matrices: the Taylor series of a / 2^s (its 1-norm at most 1/2), squared
    s times."""
    n = a.shape[-1]
    with no_grad():
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    b = a / (2 ** squarings)
    identity = _eye_like(a, n)
    result = identity
    for k in range(_TAYLOR_TERMS, 0, -1):  # Horner: I + b/1 (I + b/2 (I + ...))
        result = identity + (b @ result) / k
    for _ in range(squarings):
        result = result @ result
    return result


def _make_orthogonal(a):
    """The Q of a = QR with R's diagonal positive (Gram-Schmidt, each column orthogonalized
    twice against the earlier ones)."""
    columns = []
    for i in range(a.shape[-1]):
        v = a[..., i]
        for _ in range(2):
            for q in columns:
                v = v - (q * v).sum(-1, keepdim=True) * q
        columns.append(v / v.norm(2, -1, keepdim=True))
    return stack(columns, -1)


def _is_orthogonal(q, eps=1e-5):
    n, k = q.shape[-2], q.shape[-1]
    gram = q.mT @ q
    return bool(((gram - _eye_like(q, k)).abs() <= eps).all()) and n >= k


class _Orthogonal(Module):
    """Maps an unconstrained matrix to one with orthonormal columns (see the module
    docstring)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape, self.orthogonal_map = tuple(weight.shape), orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == "matrix_exp":
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros((n, n - k)).expand(*x.shape[:-2], n, n - k)], -1)
            q = matrix_exp(x - x.mT)[..., :k]
        else:
            below = x.tril(-1)
            tau = 2.0 / (1.0 + (below * below).sum(-2))
            q = householder_product(below, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q):
        if tuple(q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape "
                             f"{list(self.shape)}. Got a tensor of shape {list(q.shape)}.")
        if "base" not in self._buffers:
            raise NotImplementedError("orthogonal: assigning without trivialization needs a QR "
                                      "factorization (geqrf), which genesis does not have")
        with no_grad():
            original = q
            n, k = q.shape[-2], q.shape[-1]
            if n < k:
                q, n, k = q.mT, k, n
            if n != k:
                noise = random.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(cat([q, noise], -1))
            elif not _is_orthogonal(q):
                q = _make_orthogonal(q)
            else:
                q = q.clone()
            self.base = q
            minus_identity = creation.zeros_like(original)
            minus_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return minus_identity


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain `module.<name>` (a matrix or batch of them) to orthonormal columns or rows."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} "
                         f"dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    if orthogonal_map == "cayley":
        raise NotImplementedError("orthogonal: the cayley map needs linalg.solve, which genesis "
                                  "does not have; use matrix_exp or householder")
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization),
        unsafe=True)
    return module
