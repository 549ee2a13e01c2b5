"""Lookups: `embedding` (rows of a weight matrix by index) and `one_hot`."""

from ... import dtypes
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops import creation, ranges
from ...ops import elementwise as ew
from ...ops.common import call, wrap
from ...ops.index import Index, IndexAddToZeros
from ...ops.legacy import error_type_name


class Embedding(Function):
    """weight[indices]; the gradient is the output gradient's rows added into zeros of the
    weight's shape at the indices.

    The ids are checked once, as the forward gathers (an out-of-range id is an IndexError
    naming it); the backward reuses the checked ids. Rows looked up at `padding_idx` get no
    gradient; with `scale_grad_by_freq` each row's gradient is divided by how often its index
    occurs in `indices`.
    """

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ids = _checked_ids(indices.reshape(-1), weight)
        ctx.save_for_backward(ids)
        ctx.num_weights = weight.shape[0]
        ctx.padding_idx, ctx.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        rows = Index.apply(weight, (ids,), None)
        return rows.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        rows = grad.reshape(-1, grad.shape[-1])
        if ctx.padding_idx is not None:
            rows = ew.where((ids == ctx.padding_idx).unsqueeze(1), 0.0, rows)
        if ctx.scale_grad_by_freq:
            ones = creation.ones(ids.shape, dtype=rows.dtype, device=rows.device)
            counts = IndexAddToZeros.apply((ctx.num_weights,), (ids,), ones)
            rows = rows / Index.apply(counts, (ids,), None).unsqueeze(1)
        return IndexAddToZeros.apply((ctx.num_weights, rows.shape[1]), (ids,), rows), None, None, \
            None


def _checked_ids(flat, weight):
    """The 1-D ids `flat` as int64, checked to lie in [0, rows of `weight`): otherwise torch's
    IndexError, its words first so that a match on them holds, then the first id outside."""
    data, bad = call("check_index", flat, weight.shape[0], False)
    if bad is not None:
        raise IndexError(f"index out of range in self (index {bad} of an embedding table of "
                         f"{weight.shape[0]} rows, weight of shape {list(weight.shape)})")
    return wrap(data, flat.device, dtypes.int64)


def _renorm_rows(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows of `weight` used by `indices` whose norm exceeds `max_norm`.
    As torch's, which selects the rows in ascending index order, a negative index counts from
    the end and one outside [-rows, rows) is refused when reached (the rows before it
    rescaled). Its operands are checked first as torch's embedding_renorm_ checks them."""
    if weight.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {weight.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"embedding_renorm_)")
    check_indices(indices, "embedding_renorm_", argument=2)
    with no_grad():
        used = indices.reshape(-1).unique()  # ascending
        rows = weight.shape[0]
        if used.numel() and int(used[0]) < -rows:
            raise _select_error(int(used[0]), weight)
        inside = used[used < rows]
        _renorm_used(weight, (inside % rows).unique(), max_norm, norm_type)
        if inside.numel() < used.numel():
            raise _select_error(int(used[inside.numel()]), weight)


def _select_error(index, weight):
    """torch's IndexError for selecting row `index` of `weight`, which it does not have."""
    return IndexError(f"select(): index {index} out of range for tensor of size "
                      f"{list(weight.shape)} at dimension 0")


def _renorm_used(weight, used, max_norm, norm_type):
    """Rescale, in place, the rows `used` of `weight` whose norm exceeds `max_norm`; a weight
    of no floating type refused in the words of torch's norm() of a row."""
    if used.numel():
        if not weight.dtype.is_floating_point:
            raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                               f"Got {dtypes.scalar_type_name(weight.dtype)} instead.")
        rows = weight.index_select(0, used)
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        scale = ew.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, used, rows * scale)


def _check_padding_idx(padding_idx, num_embeddings, name="Padding_idx"):
    """`padding_idx` as a row number (None for none); torch's AssertionError if no row has it,
    the argument spelled `name` as the torch caller spells it (EmbeddingBag: 'padding_idx')."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError(f"{name} must be within num_embeddings")
    return padding_idx % num_embeddings


def check_indices(input, op, dtype=None, argument=1):
    """Embedding indices are int64 or int32, as torch's embedding kernels take; others refused
    in torch's words, the tensor named by its legacy type ('torch.FloatTensor') and `op`'s
    argument number. `dtype`: the type they are taken in, where not their own (embedding_bag's,
    promoted with the offsets)."""
    dtype = dtype or input.dtype
    if dtype not in (dtypes.int64, dtypes.int32):
        got = error_type_name(dtype, input.device.type)
        raise RuntimeError(f"Expected tensor for argument #{argument} 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {got} instead (while "
                           f"checking arguments for {op})")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` selected by the int64/int32 tensor `input`: shape input.shape + [dim].
    Checked in torch's order: padding_idx, max_norm's renorm, the weight's rank, the indices."""
    if padding_idx is not None:
        padding_idx = _check_padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    check_indices(input, "embedding")
    return Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dimension of `num_classes` holding a 1 at each index."""
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() and int(tensor.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ranges.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtypes.int64)
