"""Distances between batches of vectors: pairwise_distance, cosine_similarity and pdist."""

from ... import dtypes
from ...autograd.function import name_node
from ...autograd.grad_mode import no_grad
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from ...ops.common import broadcast_shapes


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim (of the broadcast inputs)."""
    broadcast_shapes(tuple(x1.shape), tuple(x2.shape), op="pairwise_distance")
    ndim = max(x1.ndim, x2.ndim)
    diff = x1 - x2 + eps
    if ndim == 0:
        return ew.abs(diff)
    return name_node(diff.norm(p, -1, keepdim=keepdim), "NormBackward1")


def _clamped(norm, eps):
    """`norm` raised to at least eps, the gradient passing as if unclamped (as torch's
    no-grad clamp_)."""
    with no_grad():
        shift = ew.clamp_min(norm, eps) - norm
    return norm + shift


@autocast_policy("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along `dim`; half types compute in
    float32 and round once."""
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape), op="cosine_similarity")
    dtype = x1.dtype if x1.dtype.is_floating_point else dtypes.get_default_dtype()
    if dtype in (dtypes.float16, dtypes.bfloat16) or not x1.dtype.is_floating_point:
        x1, x2 = x1.float(), x2.float()
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1 = _clamped(x1.norm(2, dim, keepdim=True), eps)
    n2 = _clamped(x2.norm(2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim).to(dtype)


@autocast_policy("pdist")
def pdist(input, p=2.0):
    """The p-norm distances between the rows of an (N, M) input, pairs i < j in row order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return input.new_zeros((0,))
    index_i = input.new_tensor(rows).long()
    index_j = input.new_tensor(cols).long()
    diff = input.index_select(0, index_i) - input.index_select(0, index_j)
    return name_node(diff.norm(p, -1), "PdistBackward0")
