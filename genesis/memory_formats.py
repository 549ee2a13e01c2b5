"""Memory formats, as torch.memory_format: the order a tensor's dims are laid out in memory.

contiguous_format is row-major. channels_last keeps a 4-D (N, C, H, W) tensor as (N, H, W, C) and
channels_last_3d a 5-D (N, C, D, H, W) one as (N, D, H, W, C): the channels innermost, the layout
convolution kernels read fastest. preserve_format asks for the input's layout.
"""


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


def inverse(order):
    """The permutation that undoes `order`."""
    result = [0] * len(order)
    for i, d in enumerate(order):
        result[d] = i
    return tuple(result)


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
