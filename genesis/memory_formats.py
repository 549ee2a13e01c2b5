"""Memory formats, as torch.memory_format: the order a tensor's dims are laid out in memory.

contiguous_format is row-major. channels_last keeps a 4-D (N, C, H, W) tensor as (N, H, W, C) and
channels_last_3d a 5-D (N, C, D, H, W) one as (N, D, H, W, C): the channels innermost, the layout
convolution kernels read fastest. preserve_format asks for the input's layout: a copy of a
tensor that is non-overlapping and dense takes its strides exactly, and a copy of any other takes
dense strides in the order of its dims' strides (PyTorch's empty_like and clone).
"""

import functools


class memory_format:
    """One memory format: its name, and for the channels-last ones the rank they apply to and
    their dims from the outermost in memory to the innermost."""

    __slots__ = ("name", "ndim", "order")

    def __init__(self, name, ndim=None, order=None):
        self.name, self.ndim, self.order = name, ndim, order

    def __repr__(self):
        return f"genesis.{self.name}"

    def __reduce__(self):
        return self.name  # pickled as the module attribute: one object per format


contiguous_format = memory_format("contiguous_format")
legacy_contiguous_format = contiguous_format  # PyTorch's other name for it (the same object)
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", 4, (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", 5, (0, 2, 3, 4, 1))


def dim_order(fmt):
    """The dims of a channels-last format, outermost in memory first; None for row-major order
    (contiguous_format, preserve_format, or no format given)."""
    return None if fmt is None else fmt.order


def is_laid_out(shape, strides, fmt):
    """Whether elements of `shape` at `strides` (in elements) are dense in `fmt`'s dim order,
    dims of size 1 taking any stride (PyTorch's is_contiguous(memory_format=...)); False for a
    rank the format does not apply to."""
    if len(shape) != fmt.ndim:
        return False
    expected = 1
    for d in reversed(fmt.order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def check_rank(ndim, fmt):
    """Raise PyTorch's error when `fmt` needs another rank than `ndim`."""
    if fmt.ndim is not None and ndim != fmt.ndim:
        raise RuntimeError(f"required rank {fmt.ndim} tensor to use {fmt.name} format")


def suggest(shape, strides):
    """PyTorch's suggest_memory_format: channels_last (channels_last_3d) when the strides order a
    4-D (5-D) tensor's dims as that format does, else contiguous_format. Ambiguous cases (a
    channel stride of 0, dims of size 1 that fit either order) count as contiguous."""
    for fmt in (channels_last, channels_last_3d):
        if len(shape) == fmt.ndim and _ordered_as(shape, strides, fmt.order):
            return fmt
    return contiguous_format


def _ordered_as(shape, strides, order):
    """Whether each dim's stride, innermost first in `order`, is at least the span of the dims
    inside it."""
    if strides[1] == 0:
        return False
    low = 0
    for d in reversed(order):
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * max(shape[d], 1)
    return True


def dense_strides(shape, order):
    """Element strides of `shape` dense with its dims in `order`, outermost first (sizes of 0
    and 1 counting as 1, as in row-major strides)."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def preserved(shape, strides):
    """The element strides PyTorch's preserve_format gives a copy of a tensor of `shape` at
    `strides`: `strides` themselves when the tensor is non-overlapping and dense, else dense
    strides in the order its strides rank its dims."""
    if non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    return dense_strides(shape, _ranked(shape, strides))


def outermost_first(shape, strides):
    """The dims of a tensor dense at `strides`, outermost in memory first."""
    return sorted(range(len(shape)), key=lambda d: -strides[d])


def non_overlapping_and_dense(shape, strides):
    """c10's is_non_overlapping_and_dense: the dims of size 2 or more, smallest stride first,
    step through memory one element after another with no gap or overlap (an empty tensor
    holds no elements to overlap)."""
    if 0 in shape:
        return True
    dims = sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def _ranked(shape, strides):
    """c10's infer_dense_strides order, outermost first: `elementwise_order` of one tensor."""
    return elementwise_order(tuple(shape), (tuple(strides),))


@functools.lru_cache(maxsize=1024)
def elementwise_order(shape, operand_strides):
    """The dims of an elementwise result, outermost in memory first, as PyTorch's
    TensorIterator orders them: a stable insertion sort of the dims, innermost from the last,
    in which the first operand whose strides tell two dims apart decides their order (the
    larger stride outside; on equal strides the longer dim outside), and operands broadcast
    along either dim (stride 0) have no say. `operand_strides`: each operand's element
    strides over `shape`, in the op's order."""
    perm = list(range(len(shape) - 1, -1, -1))  # innermost first
    for i in range(1, len(perm)):
        moving = i
        for j in range(i - 1, -1, -1):
            order = _outer(shape, operand_strides, perm[j], perm[moving])
            if order > 0:
                perm[j], perm[moving] = perm[moving], perm[j]
                moving = j
            elif order < 0:
                break
    return tuple(perm[::-1])


def _outer(shape, operand_strides, a, b):
    """1 when dim a goes outside dim b, -1 when inside, 0 when no operand tells."""
    for strides in operand_strides:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            continue
        if sa != sb:
            return 1 if sa > sb else -1
        if shape[a] > shape[b]:
            return 1
    return 0
