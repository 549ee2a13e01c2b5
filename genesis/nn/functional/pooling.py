"""Pooling over 1, 2 or 3 spatial dimensions: max, average, power-average, adaptive, fractional,
and max unpooling.

Fixed windows come from `Im2Col` over the input padded with the pooling's neutral value (-inf
for max, 0 for average); adaptive and fractional windows are gathered through index tables. The
gradients come from autograd over max/sum, unfold, gather and pad. Indices of a max are found by
running the same windows over a tensor of flat positions.

On a device whose backend has pooling kernels (CUDA), floating-point max and average pooling
run through them instead: `_MaxPool`, one pass for the values and indices, one for the gradient
(`_MaxPoolBackward`, whose own gradient gathers through the indices); `_AvgPool`, whose
backward is its adjoint and the other way round.
"""

import math

import numpy as np

from ... import dtypes
from ...autograd.function import Function, name_node
from ...dispatch import has_kernel
from ...ops import creation, elementwise, linalg, random, ranges
from ...ops.common import call, wrap
from ._utils import in_format_of, ntuple
from .conv import HALF_TYPES, Im2Col, _Geometry, batched, unbatch
from .padding import pad


def _pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output size, including its ceil_mode rule (last window starts inside)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


_BATCH_MODE = ("Expected {ranks} (batch mode) tensor with optional 0 dim batch size for input, "
               "but got:{shape}")
_NON_EMPTY = "non-empty {ranks} (batch mode) tensor expected for input"
_TWO_TO_THREE = ("Expected 2 to 3 dimensions, but got {ndim}-dimensional tensor for argument #1 "
                 "'self' (while checking arguments for {op})")
_UNPOOL = "Input to max_unpooling{d}d should be a {low}d or {high}d Tensor, but got a tensor with "
# torch's words for an input of the wrong rank, by op: each op's kernel has its own.
_RANK_WORDS = {
    "max_pool2d": _NON_EMPTY, "max_pool3d": _NON_EMPTY, "avg_pool3d": _NON_EMPTY,
    "avg_pool1d": _TWO_TO_THREE, "adaptive_avg_pool1d": _TWO_TO_THREE,
    "adaptive_max_pool1d": _TWO_TO_THREE,
    "adaptive_avg_pool2d": "{op}(): Expected {ranks} tensor, but got {shape}",
    "adaptive_avg_pool3d": "{op}(): Expected {ranks} tensor, but got {shape}",
    "adaptive_max_pool2d": "{op}(): Expected {ranks} tensor, but got: {shape}",
    "adaptive_max_pool3d": "{op}(): Expected {ranks} tensor, but got: {shape}",
    "fractional_max_pool2d": "{op}(): Expected {ranks} tensor, but got: {shape}",
    "fractional_max_pool3d": "{op}_out(): Expected {ranks} tensor, but got: {shape}",
    "max_unpool1d": _UNPOOL.format(d=2, low=3, high=4) + "{more} dimensions.",
    "max_unpool2d": _UNPOOL.format(d=2, low=3, high=4) + "{ndim} dimensions.",
    "max_unpool3d": _UNPOOL.format(d=3, low=4, high=5) + "{ndim} dimensions.",
}
# Ops whose shape arithmetic reads dim -(dims + 1) before any check: a shorter input is an
# IndexError there, as in torch.
_INDEXES_FIRST = ("avg_pool2d", "fractional_max_pool2d", "fractional_max_pool3d")


def _batched(input, dims, op):
    """The batched input and whether a batch dimension was added, an input of another rank
    refused in the words of torch's `op`."""
    ndim = input.ndim
    if ndim in (dims + 1, dims + 2):
        return batched(input, op, dims)
    if op in _INDEXES_FIRST and 0 < ndim <= dims:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {-dims - 1})")
    text = _RANK_WORDS.get(op, _BATCH_MODE).format(
        op=op, ranks=f"{dims + 1}D or {dims + 2}D", shape=list(input.shape), ndim=ndim,
        more=ndim + 1)
    raise RuntimeError(text if text.startswith(op) else f"{op}: {text}")


def _pooled(input, dims, op):
    """The batched input and whether a batch dimension was added, with PyTorch's shape checks."""
    x, unbatched = _batched(input, dims, op)
    if any(s == 0 for s in input.shape[-dims - 1:]):
        raise RuntimeError(f"{op}: " + _BATCH_MODE.format(ranks=f"{dims + 1}D or {dims + 2}D",
                                                          shape=list(input.shape)))
    return x, unbatched


class _Pool:
    """The window geometry of one pooling call over a batched (N, C, *S) input."""

    def __init__(self, x, dims, kernel_size, stride, padding, dilation, ceil_mode, op):
        self.dims = dims
        self.kernel = ntuple(kernel_size, dims, "kernel_size")
        self.stride = ntuple(kernel_size if stride in (None, ()) else stride, dims, "stride")
        self.padding = ntuple(padding, dims, "padding")
        self.dilation = ntuple(dilation, dims, "dilation")
        if any(s == 0 for s in self.stride):
            raise RuntimeError(f"{op}: stride should not be zero")
        if any(k <= 0 for k in self.kernel) or any(d <= 0 for d in self.dilation):
            raise RuntimeError(f"{op}: kernel_size and dilation should be greater than zero, "
                               f"but got kernel_size={self.kernel} and dilation={self.dilation}")
        self.size = tuple(x.shape[2:])
        self.out = tuple(_pooled_size(*args, ceil_mode) for args in
                         zip(self.size, self.kernel, self.stride, self.padding, self.dilation))
        if any(o < 1 for o in self.out):
            raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). "
                               f"Calculated output size: ({x.shape[1]}x"
                               f"{'x'.join(map(str, self.out))}). Output size is too small")

    def check_padding(self, op, effective):
        """PyTorch's rule: padding at most half of the (effective, for max) kernel size."""
        for p, k, d in zip(self.padding, self.kernel, self.dilation):
            limit = (d * (k - 1) + 1) if effective else k
            if p < 0 or p > limit // 2:
                raise RuntimeError(f"{op}: pad should be at most half of "
                                   f"{'effective ' if effective else ''}kernel size, but got "
                                   f"pad={p}, kernel_size={k} and dilation={d}")

    def windows(self, x, value):
        """(N, C, prod(kernel), *out): every window's elements, the padding filled with `value`."""
        high = [(o - 1) * s + d * (k - 1) + 1 - p - n for o, s, d, k, p, n in
                zip(self.out, self.stride, self.dilation, self.kernel, self.padding, self.size)]
        amounts = [a for p, h in zip(reversed(self.padding), reversed(high)) for a in (p, h)]
        padded = pad(x, tuple(amounts), value=value)
        geometry = _Geometry(self.kernel, self.dilation, 0, self.stride, self.dims)
        cols = Im2Col.apply(padded, geometry, self.out)
        return cols.reshape(x.shape[0], x.shape[1], math.prod(self.kernel), *self.out)


def _positions(size, device):
    """(1, 1, *size) int64 tensor of flat positions, run through the same windows as the input
    to turn a window-local argmax into PyTorch's index."""
    return ranges.arange(math.prod(size), device=device).reshape(1, 1, *size)


def _pick(position_windows, argmax, dim):
    """The flat positions at the window-local argmax (`position_windows` broadcast over N, C)."""
    dim %= argmax.ndim + 1
    shape = list(argmax.shape)
    shape.insert(dim, position_windows.shape[dim])
    return position_windows.expand(*shape).gather(dim, argmax.unsqueeze(dim)).squeeze(dim)


def _in_float32(x):
    """float32 for half-precision inputs, so that the sums of the forward and of the backward
    (overlapping windows) round once, at the end."""
    return x.float() if x.dtype in HALF_TYPES else x


class _MaxPool(Function):
    """(values, indices) of max pooling through the backend's kernels."""

    @staticmethod
    def forward(ctx, x, pool):
        values, indices = call("max_pool_fwd", x, pool.kernel, pool.stride, pool.padding,
                               pool.dilation, pool.out, device=x.device)
        values, indices = wrap(values, x.device), wrap(indices, x.device)
        ctx.pool = pool
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, _):
        (indices,) = ctx.saved_tensors
        return _MaxPoolBackward.apply(grad, indices, ctx.pool), None


class _MaxPoolBackward(Function):
    """The input gradient of max pooling: each output gradient added at its index. Linear in
    the output gradient, so its own gradient gathers the incoming one at the indices."""

    @staticmethod
    def forward(ctx, grad, indices, pool):
        ctx.save_for_backward(indices)
        return wrap(call("max_pool_bwd", grad, indices, pool.size, pool.kernel, pool.stride,
                         pool.padding, pool.dilation, device=grad.device), grad.device)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        flat = indices.reshape(*indices.shape[:2], -1)
        picked = gg.reshape(*gg.shape[:2], -1).gather(2, flat)
        return picked.reshape(indices.shape), None, None


class _AvgPool(Function):
    """Average pooling through the backend's kernels, or with `adjoint` its input gradient
    (from an output gradient): each is the other's backward."""

    @staticmethod
    def forward(ctx, x, pool, count_include_pad, divisor, adjoint):
        ctx.args = (pool, count_include_pad, divisor, not adjoint)
        size = pool.size if adjoint else pool.out
        return wrap(call("avg_pool", x, pool.kernel, pool.stride, pool.padding,
                         count_include_pad, divisor, size, adjoint, device=x.device), x.device)

    @staticmethod
    def backward(ctx, grad):
        return _AvgPool.apply(grad, *ctx.args), None, None, None, None


def _pool_kernels(x, op):
    """True when the backend's pooling kernel `op` takes `x`: floating point, nothing empty."""
    return x.dtype.is_floating_point and x.numel() > 0 and has_kernel(op, x.device.type)


def _in_format_of(input, result, keeps_3d=True):
    """A pool's values (and indices) in the memory format of its input (in_format_of)."""
    if isinstance(result, tuple):
        return tuple(in_format_of(input, r, keeps_3d) for r in result)
    return in_format_of(input, result, keeps_3d)


def _max_pool(input, dims, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    return _in_format_of(input, _max_pool_values(input, dims, kernel_size, stride, padding,
                                                 dilation, ceil_mode, return_indices))


def _max_pool_values(input, dims, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices):
    op = f"max_pool{dims}d"
    x, unbatched = _pooled(input, dims, op)
    pool = _Pool(x, dims, kernel_size, stride, padding, dilation, ceil_mode, op)
    pool.check_padding(op, effective=True)
    if _pool_kernels(x, "max_pool_fwd"):
        values, indices = _MaxPool.apply(x, pool)
        if not return_indices:
            return unbatch(values, unbatched)
        return unbatch(values, unbatched), unbatch(indices, unbatched)
    lowest = -math.inf if x.dtype.is_floating_point else int(np.iinfo(x.dtype.numpy_dtype).min)
    values, argmax = pool.windows(_in_float32(x), lowest).max(2)
    values = values.to(x.dtype)
    if not return_indices:
        return unbatch(values, unbatched)
    indices = _pick(pool.windows(_positions(pool.size, x.device), -1), argmax, 2)
    return unbatch(values, unbatched), unbatch(indices, unbatched)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window of (N, C, L) input; `return_indices` gives positions in L."""
    return _named(_max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices), "SqueezeBackward1")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window; `return_indices` also gives flat positions in H*W."""
    return _named(_max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices), "MaxPool2DWithIndicesBackward0")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window of (N, C, D, H, W) input (positions flat in D*H*W)."""
    return _named(_max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices), "MaxPool3DWithIndicesBackward0")


def _named(result, node):
    """A pool's values (alone, or first with their indices) under PyTorch's node name."""
    name_node(result[0] if isinstance(result, tuple) else result, node)
    return result


def _window_counts(size, out, kernel, stride, padding, count_include_pad):
    """Elements each window averages over along one dim (PyTorch's avg_pool divisor rule)."""
    counts = []
    for o in range(out):
        start = o * stride - padding
        end = min(start + kernel, size + padding)
        if not count_include_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return np.array(counts, dtype=np.float64)


def _avg_pool(input, dims, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    return in_format_of(input, _avg_pool_values(input, dims, kernel_size, stride, padding,
                                                ceil_mode, count_include_pad, divisor_override),
                        keeps_3d=False)


def _avg_pool_values(input, dims, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override):
    op = f"avg_pool{dims}d"
    x, unbatched = _pooled(input, dims, op)
    pool = _Pool(x, dims, kernel_size, stride, padding, 1, ceil_mode, op)
    pool.check_padding(op, effective=False)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    if _pool_kernels(x, "avg_pool"):
        return unbatch(_AvgPool.apply(x, pool, count_include_pad, divisor_override or 0, False),
                       unbatched)
    sums = pool.windows(_in_float32(x), 0.0).sum(2)
    if divisor_override:
        return unbatch((sums / divisor_override).to(x.dtype), unbatched)
    counts = [_window_counts(*args, count_include_pad) for args in
              zip(pool.size, pool.out, pool.kernel, pool.stride, pool.padding)]
    divisor = creation.tensor(math.prod(np.ix_(*counts)), dtype=sums.dtype, device=x.device)
    return unbatch((sums / divisor).to(x.dtype), unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """The mean over each window of (N, C, L) input (zero padding counted unless told not)."""
    return _named(_avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            None), "SqueezeBackward1")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean over each window (zero padding counted unless count_include_pad=False)."""
    return _named(_avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override), "AvgPool2DBackward0")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean over each window of (N, C, D, H, W) input."""
    return _named(_avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override), "AvgPool3DBackward0")


def _lp_pool(input, dims, norm_type, kernel_size, stride, ceil_mode):
    """(sum over the window of x**p) ** (1/p), through the average pool as PyTorch computes it."""
    kernel = ntuple(kernel_size, dims, "kernel_size")
    out = _avg_pool(input.pow(norm_type), dims, kernel, stride, 0, ceil_mode, True, None)
    out = elementwise.sign(out) * elementwise.relu(elementwise.abs(out))
    return out.mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, L) input."""
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, H, W) input."""
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, D, H, W) input."""
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode)


def _adaptive_sizes(input, x, output_size, dims, op):
    """The output sizes of adaptive pooling batched `x` (`input` as given), None keeping an
    input size; an empty spatial dim refused in torch's words, which name it in `input`."""
    sizes = ntuple(output_size, dims, "output_size")
    if any(s == 0 for s in x.shape[2:]):
        empty = input.ndim - dims + [s == 0 for s in x.shape[2:]].index(True)
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)} with dimension "
                           f"{empty} being empty")
    return tuple(s if o is None else o for s, o in zip(x.shape[2:], sizes))


def _adaptive_bounds(size, out):
    """[start, end) of each adaptive window: floor(i*size/out) to ceil((i+1)*size/out)."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_matrix(size, out):
    """(out, size) numpy matrix averaging each adaptive window."""
    matrix = np.zeros((out, size))
    for i, (start, end) in enumerate(_adaptive_bounds(size, out)):
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


# A dimension is applied as a sum of index_selects only when it is longer than DENSE_SIZE (below
# that one matmul is faster, measured on numpy at 128 -> 256) and each row has at most MAX_TAPS
# nonzeros; the dense product's cost grows with size * out, the sum's with MAX_TAPS * out.
DENSE_SIZE = 512
MAX_TAPS = 8


def along(x, dim, matrix):
    """The (out, size) numpy `matrix` applied to dimension `dim` of `x`: one matmul, or for a
    long dimension with few nonzeros per row (interpolation, small windows) a sum of that many
    weighted index_selects in ascending column order."""
    nonzero = matrix != 0
    taps = int(nonzero.sum(1).max())
    if matrix.shape[1] <= DENSE_SIZE or taps > MAX_TAPS or taps == 0:
        weights = creation.tensor(matrix, dtype=x.dtype, device=x.device)
        return linalg.matmul(x.movedim(dim, -1), weights.t()).movedim(-1, dim)
    columns = np.argsort(~nonzero, axis=1, kind="stable")[:, :taps]
    weights = np.take_along_axis(matrix, columns, 1)
    shape = [1] * x.ndim
    shape[dim] = matrix.shape[0]
    out = None
    for tap in range(taps):
        index = creation.tensor(columns[:, tap], dtype=dtypes.int64, device=x.device)
        weight = creation.tensor(weights[:, tap], dtype=x.dtype, device=x.device)
        term = x.index_select(dim, index) * weight.reshape(shape)
        out = term if out is None else out + term
    return out


def _equal_windows(x, sizes):
    """The window (and stride) of an adaptive pool whose windows tile the input evenly, each
    size a multiple of its output's (global pooling to 1 among them), else None. Such a pool
    is a plain one: no host-built tables, so it is also capturable in a CUDA graph."""
    if all(o > 0 and s % o == 0 for s, o in zip(x.shape[2:], sizes)):
        return tuple(s // o for s, o in zip(x.shape[2:], sizes))
    return None


def _adaptive_avg_pool(input, output_size, dims):
    op = f"adaptive_avg_pool{dims}d"
    x, unbatched = _batched(input, dims, op)
    sizes = _adaptive_sizes(input, x, output_size, dims, op)
    window = _equal_windows(x, sizes)
    if window is not None:
        pooled = _avg_pool_values(x, dims, window, window, 0, False, True, None)
    else:
        pooled = _in_float32(x)
        for d, out in enumerate(sizes):
            pooled = along(pooled, 2 + d, _adaptive_matrix(x.shape[2 + d], out))
        pooled = pooled.to(x.dtype)
    out = name_node(unbatch(pooled, unbatched), _adaptive_node("Avg", sizes))
    return in_format_of(input, out, keeps_3d=False)


def _adaptive_node(kind, sizes):
    """PyTorch's node name for adaptive pooling to `sizes`: its 1-d pools squeeze a 2-d pool's
    result, and its average pool to all ones is a mean."""
    if len(sizes) == 1:
        return "SqueezeBackward1"
    if kind == "Avg" and all(s == 1 for s in sizes):
        return "MeanBackward1"
    return f"Adaptive{kind}Pool{len(sizes)}DBackward0"


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) input to a fixed output length."""
    return _adaptive_avg_pool(input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (None keeps that input dimension)."""
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) input to a fixed output size."""
    return _adaptive_avg_pool(input, output_size, 3)


def _broadcast(*sizes):
    return next((s for s in sizes if s != 1), 1)


def gather_windows(x, tables):
    """(N, C, *out, prod(widths)): the windows of `x` whose positions along spatial dim d are
    tables[d] (shape (N or 1, C or 1, out_d, width_d), int64)."""
    n, c = (_broadcast(x.shape[i], *(t.shape[i] for t in tables)) for i in (0, 1))
    for d, table in enumerate(tables):
        dim = 2 + d
        index = table.reshape(table.shape[0], table.shape[1], *(1,) * d, -1,
                              *(1,) * (x.ndim - dim - 1))
        shape = list(x.shape)
        shape[0], shape[1], shape[dim] = n, c, index.shape[dim]
        x = x.expand(n, c, *x.shape[2:]).gather(dim, index.expand(*shape))
    outs = [t.shape[2] for t in tables]
    widths = [t.shape[3] for t in tables]
    split = x.reshape(n, c, *(s for pair in zip(outs, widths) for s in pair))
    order = [0, 1, *range(2, 2 + 2 * len(tables), 2), *range(3, 3 + 2 * len(tables), 2)]
    return split.permute(*order).reshape(n, c, *outs, math.prod(widths))


def _max_over_tables(x, tables, return_indices, unbatched):
    """The maximum over gathered windows, with PyTorch's flat indices if asked."""
    values, argmax = gather_windows(_in_float32(x), tables).max(-1)
    values = values.to(x.dtype)
    if not return_indices:
        return unbatch(values, unbatched)
    positions = gather_windows(_positions(x.shape[2:], x.device), tables)
    return unbatch(values, unbatched), unbatch(_pick(positions, argmax, -1), unbatched)


def _adaptive_table(size, out, device):
    """Positions of each adaptive window, the short ones padded by repeating their last one."""
    bounds = _adaptive_bounds(size, out)
    width = max(end - start for start, end in bounds)
    table = [[min(start + j, end - 1) for j in range(width)] for start, end in bounds]
    return creation.tensor(table, dtype=dtypes.int64, device=device).reshape(1, 1, out, width)


def _adaptive_max_pool(input, output_size, return_indices, dims):
    op = f"adaptive_max_pool{dims}d"
    x, unbatched = _batched(input, dims, op)
    sizes = _adaptive_sizes(input, x, output_size, dims, op)
    window = _equal_windows(x, sizes)
    if window is not None:
        result = _max_pool_values(x, dims, window, window, 0, 1, False, return_indices)
        result = (tuple(unbatch(r, unbatched) for r in result) if return_indices
                  else unbatch(result, unbatched))
    else:
        tables = [_adaptive_table(s, o, x.device) for s, o in zip(x.shape[2:], sizes)]
        result = _max_over_tables(x, tables, return_indices, unbatched)
    return _in_format_of(input, _named(result, _adaptive_node("Max", sizes)), keeps_3d=False)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of (N, C, L) input to a fixed output length."""
    return _adaptive_max_pool(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of (N, C, H, W) input to a fixed output size."""
    return _adaptive_max_pool(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of (N, C, D, H, W) input to a fixed output size."""
    return _adaptive_max_pool(input, output_size, return_indices, 3)


def _intervals(samples, size, out, kernel):
    """PyTorch's pseudo-random window starts (N, C, out) for one dim from samples in [0, 1)."""
    starts = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = samples.dtype.type(size - kernel) / samples.dtype.type(out - 1)
        steps = np.arange(out - 1, dtype=samples.dtype)
        starts[..., :-1] = (((steps + samples[..., None]) * alpha).astype(np.int64) -
                            (samples * alpha).astype(np.int64)[..., None])
    starts[..., -1] = size - kernel
    return starts


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                         samples, dims):
    op = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    x, unbatched = _pooled(input, dims, op)
    kernel = ntuple(kernel_size, dims, "kernel_size")
    if output_size is None:
        ratio = ntuple(output_ratio, dims, "output_ratio")
        output_size = [int(s * r) for s, r in zip(x.shape[2:], ratio)]
    sizes = ntuple(output_size, dims, "output_size")
    names = ("time", "height", "width")[3 - dims:]
    for name, s, o, k in zip(names, x.shape[2:], sizes, kernel):
        if o + k - 1 > s - (dims == 3):  # PyTorch's 3-D check is strict
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} {s}")
    if samples is None:
        samples = random.rand(x.shape[0], x.shape[1], dims, dtype=x.dtype, device=x.device)
    host = samples.detach().cpu().numpy()
    host = host.astype(np.float32) if host.dtype.itemsize < 4 else host
    tables = []
    for d, (s, o, k) in enumerate(zip(x.shape[2:], sizes, kernel)):
        order = d if dims == 3 else 1 - d
        starts = _intervals(host[..., order], s, o, k)[..., None] + np.arange(k)
        tables.append(creation.tensor(starts, dtype=dtypes.int64, device=x.device))
    return _named(_max_over_tables(x, tables, return_indices, unbatched),
                  f"FractionalMaxPool{dims}DBackward0")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max pooling over pseudo-randomly placed windows (Graham's fractional max pooling)."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, D, H, W) input."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 3)


def _unpool_size(x, dims, kernel, stride, padding, output_size, op):
    default = [(i - 1) * s - 2 * p + k for i, s, p, k in
               zip(x.shape[2:], stride, padding, kernel)]
    if output_size is None:
        return tuple(default)
    size = tuple(output_size)[-dims:] if len(output_size) in (dims, dims + 2) else None
    if size is None:
        raise ValueError(f"{op}: output_size must have {dims} or {dims + 2} elements (got "
                         f"{len(output_size)})")
    for s, low, st in zip(size, default, stride):
        if not low - st < s < low + st:
            raise ValueError(f"{op}: invalid output_size {list(output_size)} (dim size must be "
                             f"between {[d - s for d, s in zip(default, stride)]} and "
                             f"{[d + s for d, s in zip(default, stride)]})")
    return size


def _check_indices(input, indices, dims, op):
    """torch's refusal of unpooling indices that are not int64 or not of the input's shape (its
    1-d unpool shows both with the trailing dim it adds to pool them in 2-d)."""
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: "
                           f"{dtypes.scalar_type_name(indices.dtype)}")
    if indices.shape != input.shape:
        extra = [1] if dims == 1 else []
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({list(input.shape) + extra}) but got indices tensor with "
                           f"shape: {list(indices.shape) + extra}")


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims):
    op = f"max_unpool{dims}d"
    x, unbatched = _batched(input, dims, op)
    _check_indices(input, indices, dims, op)
    idx = indices.unsqueeze(0) if unbatched else indices
    kernel = ntuple(kernel_size, dims, "kernel_size")
    stride = ntuple(kernel_size if stride is None else stride, dims, "stride")
    size = _unpool_size(x, dims, kernel, stride, ntuple(padding, dims, "padding"), output_size,
                        op)
    n, c = x.shape[:2]
    flat_idx = idx.reshape(n, c, -1)
    if flat_idx.numel():
        low, high = int(flat_idx.min()), int(flat_idx.max())
        if low < 0 or high >= math.prod(size):
            bad = low if low < 0 else high
            raise RuntimeError(f"{op}: Found an invalid max index: {bad} (output volumes are of "
                               f"size {'x'.join(map(str, size))})")
    out = creation.zeros(n, c, math.prod(size), dtype=x.dtype, device=x.device)
    out = out.scatter(2, flat_idx, x.reshape(n, c, -1))
    return name_node(unbatch(out.reshape(n, c, *size), unbatched),
                     "SqueezeBackward1" if dims == 1 else f"MaxUnpool{dims}DBackward0")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: values placed at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: values placed at their flat H*W indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: values placed at their flat D*H*W indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _with_indices(pool):
    """`pool` that always returns (values, indices), as torch's *_with_indices functions."""
    def pooled(*args, **kwargs):
        kwargs.pop("return_indices", None)
        return pool(*args, **kwargs, return_indices=True)
    pooled.__name__ = pooled.__qualname__ = f"{pool.__name__}_with_indices"
    pooled.__doc__ = f"{pool.__name__} returning (values, indices)."
    return pooled


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)
fractional_max_pool2d_with_indices = _with_indices(fractional_max_pool2d)
fractional_max_pool3d_with_indices = _with_indices(fractional_max_pool3d)
