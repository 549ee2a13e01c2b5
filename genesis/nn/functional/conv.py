"""Convolutions through im2col: `unfold` gathers sliding windows, a matmul applies the kernel.

`Im2Col` (unfold) and `Col2Im` (fold) are each other's backward, so convolutions get their
gradients (of any order) from autograd over unfold, reshape and matmul; a transposed convolution
is a matmul followed by `Col2Im` (the adjoint of a convolution). Both are built from strided
views of one storage, so one implementation serves every device and every number of spatial
dimensions.

On a device whose backend has implicit-GEMM convolution kernels (CUDA), 1-D and 2-D
convolutions in float32, float16 and bfloat16 run through them instead, forward and backward
(`_ImplicitConv`, `_ImplicitConvTranspose`, `_ImplicitWeightGrad`: each one's backward is made
of the others, so gradients of any order stay on the kernels); their float32 products run TF32
per genesis.backends.cudnn.allow_tf32, as PyTorch's cuDNN convolutions. 3-D ones keep im2col,
whose matmul follows genesis.backends.cuda.matmul.allow_tf32.
"""

import itertools
import math
from collections.abc import Iterable

from ... import dtypes, memory_formats
from ...autograd.function import Function, name_node
from ...dispatch import has_kernel
from ...ops import creation, linalg
from ...ops.autocast import autocast_policy
from ...ops.common import call, make_view, wrap
from ...ops.size_args import int_list
from ._utils import ntuple
from .padding import pad

HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


def _out_size(size, kernel, dilation, padding, stride):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


class _Geometry:
    """Kernel size, dilation, padding and stride of an N-d sliding window."""

    def __init__(self, kernel_size, dilation, padding, stride, dims=2):
        self.dims = dims
        self.kernel = ntuple(kernel_size, dims, "kernel_size")
        self.dilation = ntuple(dilation, dims, "dilation")
        self.padding = ntuple(padding, dims, "padding")
        self.stride = ntuple(stride, dims, "stride")

    def blocks(self, *size):
        """The number of window positions along each spatial dimension."""
        return tuple(_out_size(*args) for args in
                     zip(size, self.kernel, self.dilation, self.padding, self.stride))

    def windows(self, x, blocks):
        """A (N, C, *kernel, *blocks) view of the windows over `x` (no padding)."""
        strides, spatial = x.stride(), x.stride()[2:]
        return make_view(x, (*x.shape[:2], *self.kernel, *blocks),
                         (*strides[:2], *(d * s for d, s in zip(self.dilation, spatial)),
                          *(t * s for t, s in zip(self.stride, spatial))), x.storage_offset())

    def padded(self, x, value=0):
        """`x` with the geometry's padding on both sides of every spatial dimension."""
        if not any(self.padding):
            return x
        return pad(x, tuple(p for p in reversed(self.padding) for _ in range(2)), value=value)


class Im2Col(Function):
    """(N, C, *S) -> (N, C*prod(kernel), prod(blocks)): a column per window, channels outermost."""

    @staticmethod
    def forward(ctx, x, geometry, blocks):
        ctx.geometry, ctx.size, ctx.blocks = geometry, tuple(x.shape[2:]), blocks
        windows = geometry.windows(geometry.padded(x), blocks).contiguous()
        return windows.reshape(x.shape[0], x.shape[1] * math.prod(geometry.kernel),
                               math.prod(blocks))

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, ctx.size, ctx.geometry, ctx.blocks), None, None


class Col2Im(Function):
    """(N, C*prod(kernel), prod(blocks)) -> (N, C, *size): sums each column into its window."""

    @staticmethod
    def forward(ctx, cols, size, geometry, blocks):
        ctx.geometry, ctx.blocks = geometry, blocks
        kernel, padding = geometry.kernel, geometry.padding
        n, c = cols.shape[0], cols.shape[1] // math.prod(kernel)
        out = creation.zeros(n, c, *(s + 2 * p for s, p in zip(size, padding)), dtype=cols.dtype,
                             device=cols.device)
        columns = cols.reshape(n, c, *kernel, *blocks)
        windows = geometry.windows(out, blocks)
        for offset in itertools.product(*(range(k) for k in kernel)):
            index = (slice(None), slice(None), *offset)
            windows[index].add_(columns[index])
        return out[(slice(None), slice(None), *(slice(p, p + s) for s, p in
                                                zip(size, padding)))].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return Im2Col.apply(grad, ctx.geometry, ctx.blocks), None, None, None


def batched(input, op, spatial):
    """`input` with a batch dimension (added for unbatched input) and whether one was added."""
    if input.ndim == spatial + 1:
        return input.unsqueeze(0), True
    if input.ndim == spatial + 2:
        return input, False
    raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input "
                       f"to {op}, but got input of size: {list(input.shape)}")


def unbatch(out, unbatched):
    """Undo `batched`: drop the batch dimension it added."""
    return out.squeeze(0) if unbatched else out


def _window_args(op, **args):
    """The window arguments `args` of im2col or col2im (`op`), given in its argument order from
    position 2, as pairs of ints: an int stands for two, a sequence is taken as it is (as
    torch's _pair). Refused as torch refuses them: an element that is no integer by its argument
    parser (TypeError), then one of another length than 2 by the op, in that order."""
    pairs = [int_list((tuple(value) if isinstance(value, Iterable) else (value, value),), op,
                      name, position) for position, (name, value) in enumerate(args.items(), 2)]
    for name, pair in zip(args, pairs):
        if len(pair) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(pair)}")
    return pairs


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) tensor as columns (im2col)."""
    geometry = _Geometry(*_window_args("im2col", kernel_size=kernel_size, dilation=dilation,
                                       padding=padding, stride=stride))
    _check_im2col_geometry(geometry, ("kernel", "dilation", "padding", "stride"))
    _check_unfold_input(input)
    x, unbatched = batched(input, "unfold", 2)
    blocks = geometry.blocks(*x.shape[2:])
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size="
                           f"{geometry.kernel}, dilation={geometry.dilation}, padding="
                           f"{geometry.padding}, calculated shape of the array of sliding blocks "
                           f"as {blocks}, but its components must be at least one.")
    return unbatch(Im2Col.apply(x, geometry, blocks), unbatched)


# a window argument's words in torch's im2col and col2im checks, its short name, its least value
_IM2COL_LIMITS = {"kernel": ("kernel size should be greater than zero", "kernel", 1),
                  "dilation": ("dilation should be greater than zero", "dilation", 1),
                  "padding": ("padding should be non-negative", "pad", 0),
                  "stride": ("stride should be greater than zero", "stride", 1)}


def _check_im2col_geometry(geometry, order):
    """unfold's and fold's window arguments checked in `order` (each op's own), refused in
    torch's words ('stride should be greater than zero, but got stride_height: 0 ...')."""
    for field in order:
        words, short, least = _IM2COL_LIMITS[field]
        height, width = getattr(geometry, field)
        if min(height, width) < least:
            raise RuntimeError(f"{words}, but got {short}_height: {height} {short}_width: "
                               f"{width}")


def _check_unfold_input(input):
    """torch's im2col refusals of an input that is not (N, C, H, W) or (C, H, W): one of fewer
    than 3 dims fails its lookup of the size of dim `ndim` (IndexError); one of more than 4
    dims, or with an empty dim besides the batch, fails its shape check."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    if input.ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got {input.ndim})")
    if input.ndim > 4 or 0 in input.shape[input.ndim - 3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns of sliding blocks back into a (N, C, H, W) tensor (col2im)."""
    size, *window = _window_args("col2im", output_size=output_size, kernel_size=kernel_size,
                                 dilation=dilation, padding=padding, stride=stride)
    geometry = _Geometry(*window)
    _check_im2col_geometry(geometry, ("kernel", "stride", "dilation", "padding"))
    if input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    kernel = math.prod(geometry.kernel)
    blocks = geometry.blocks(*size)
    if cols.shape[1] % kernel:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={cols.shape[1]} and "
                           f"kernel_size={geometry.kernel}.")
    if cols.shape[2] != math.prod(blocks) or min(blocks) < 1:
        raise RuntimeError(f"Given output_size={size}, kernel_size={geometry.kernel}, "
                           f"dilation={geometry.dilation}, padding={geometry.padding}, "
                           f"stride={geometry.stride}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks "
                           f"{' * '.join(map(str, blocks))} = {math.prod(blocks)}, but got "
                           f"input.size(2)={cols.shape[2]}.")
    return unbatch(Col2Im.apply(cols, size, geometry, blocks), input.ndim == 2)


def _check_geometry(geometry, op):
    if any(s <= 0 for s in geometry.stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported, got {geometry.stride}")
    if any(d <= 0 for d in geometry.dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero, got {geometry.dilation}")
    if any(p < 0 for p in geometry.padding):
        raise RuntimeError(f"{op}: negative padding is not supported, got {geometry.padding}")
    if any(k <= 0 for k in geometry.kernel):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, got "
                           f"{geometry.kernel}")


def _check_blocks(geometry, size, op):
    padded = [s + 2 * p for s, p in zip(size, geometry.padding)]
    effective = [d * (k - 1) + 1 for k, d in zip(geometry.kernel, geometry.dilation)]
    if any(p < e for p, e in zip(padded, effective)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, effective))}). Kernel size can't be greater "
                           "than actual input size")


def same_padding(kernel, dilation):
    """(low, high) padding per dimension that keeps the size with padding='same' (the odd
    element of an even total goes to the high side, as PyTorch)."""
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return [(t // 2, t - t // 2) for t in totals]


def _resolve_padding(x, padding, kernel, dilation, stride, op):
    """Symmetric padding for the window geometry; 'same' pads the high side of `x` if needed."""
    dims = len(kernel)
    if padding == "valid":
        return x, (0,) * dims
    if padding != "same":
        if isinstance(padding, str):
            raise RuntimeError(f"{op}: Invalid padding string: '{padding}'")
        return x, ntuple(padding, dims, "padding")
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
    pairs = same_padding(kernel, dilation)
    extra = [high - low for low, high in reversed(pairs)]
    if any(extra):
        x = pad(x, tuple(p for e in extra for p in (0, e)))
    return x, tuple(low for low, _ in pairs)


def _check_conv(x, weight, bias, groups, transposed, op):
    """PyTorch's checks of channels, groups and bias against the weight."""
    c_in = weight.shape[0] if transposed else weight.shape[1] * groups
    out_c = weight.shape[1] * groups if transposed else weight.shape[0]
    if groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    if x.shape[1] != c_in:
        kind = "transposed=1, " if transposed else f"groups={groups}, "
        raise RuntimeError(f"{op}: Given {kind}weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {c_in} channels, but got "
                           f"{x.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_c):
        raise RuntimeError(f"{op}: Given weight of size {list(weight.shape)}, expected bias to "
                           f"be 1-dimensional with {out_c} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    for t in (weight, bias):
        if t is not None and (t.dtype is not x.dtype or t.device != x.device):
            raise RuntimeError(f"{op}: expected input ({x.dtype}, {x.device}), weight and bias "
                               f"to have the same dtype and device, but got {t.dtype} on "
                               f"{t.device}")


def _in_float32(fn, x, weight, bias, *args):
    """`fn` on float32 copies of half-precision operands, rounded once to the input's type."""
    if x.dtype not in HALF_TYPES:
        return fn(x, weight, bias, *args)
    bias = None if bias is None else bias.float()
    return fn(x.float(), weight.float(), bias, *args).to(x.dtype)


def _add_bias(out, bias):
    return out if bias is None else out + bias.reshape(1, -1, *(1,) * (out.ndim - 2))


def _window_matmul(weight, cols):
    """(g, O, K) weights times (N, g, K, L) columns -> (N, g, O, L). With one group it is one
    (N*L, K) x (K, O) product (and so are both of its gradients), the shape BLAS runs fastest,
    not N products of O x K by K x L."""
    if weight.shape[0] != 1:
        return linalg.matmul(weight, cols)
    n, _, k, length = cols.shape
    rows = cols[:, 0].transpose(1, 2).reshape(n * length, k)
    out = linalg.matmul(rows, weight[0].t()).reshape(n, length, weight.shape[1])
    return out.transpose(1, 2).unsqueeze(1)


def _conv_geometry(x, weight, stride, padding, dilation, op):
    """(`x` padded on the high side if padding="same" needs it, the window geometry), checked."""
    dims = weight.ndim - 2
    kernel = tuple(weight.shape[2:])
    stride, dilation = ntuple(stride, dims, "stride"), ntuple(dilation, dims, "dilation")
    x, padding = _resolve_padding(x, padding, kernel, dilation, stride, op)
    geometry = _Geometry(kernel, dilation, padding, stride, dims)
    _check_geometry(geometry, op)
    _check_blocks(geometry, x.shape[2:], op)
    return x, geometry


def _output_format(x):
    """The memory format of a convolution's result, as torch's CPU convolutions lay it out:
    channels-last where the input `x` is, else contiguous; but a float64 channels_last_3d input
    gives a contiguous result (torch's float64 path has no channels-last 3-D kernels)."""
    fmt = memory_formats.suggest(x.shape, x.stride())
    if fmt is memory_formats.channels_last_3d and x.dtype is dtypes.float64:
        return memory_formats.contiguous_format
    return fmt


def _conv(x, weight, bias, stride, padding, dilation, groups, op):
    """N-d convolution of a batched `x`: im2col, then one (grouped) matmul, the result laid out
    as torch's (the matmul's is channels-last: a later .view(n, -1) would fail)."""
    n, out_c = x.shape[0], weight.shape[0]
    fmt = _output_format(x)
    x, geometry = _conv_geometry(x, weight, stride, padding, dilation, op)
    blocks = geometry.blocks(*x.shape[2:])
    cols = Im2Col.apply(x, geometry, blocks)
    k = weight.shape[1] * math.prod(geometry.kernel)
    cols = cols.reshape(n, groups, k, math.prod(blocks))
    out = _window_matmul(weight.reshape(groups, out_c // groups, k), cols)
    return _add_bias(out.reshape(n, out_c, *blocks), bias).contiguous(memory_format=fmt)


def _transpose_geometry(x, weight, stride, padding, output_padding, dilation, op):
    """(the window geometry, the output's spatial size) of a transposed convolution, checked."""
    dims = weight.ndim - 2
    kernel = tuple(weight.shape[2:])
    geometry = _Geometry(kernel, dilation, padding, stride, dims)
    _check_geometry(geometry, op)
    output_padding = ntuple(output_padding, dims, "output_padding")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, geometry.stride,
                                                 geometry.dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                           f"dilation, but got output_padding={output_padding}, stride="
                           f"{geometry.stride} and dilation={geometry.dilation}")
    blocks = tuple(x.shape[2:])
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + o + 1 for i, s, p, d, k, o in
                 zip(blocks, geometry.stride, geometry.padding, geometry.dilation, kernel,
                     output_padding))
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}: Given input size per channel: {list(blocks)}. Calculated "
                           f"output size per channel: {list(size)}. Output size is too small")
    return geometry, size


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, op):
    """N-d transposed convolution of a batched `x`: a matmul to columns, then col2im."""
    n, c_in = x.shape[0], x.shape[1]
    geometry, size = _transpose_geometry(x, weight, stride, padding, output_padding, dilation,
                                         op)
    blocks = tuple(x.shape[2:])
    k = weight.shape[1] * math.prod(geometry.kernel)
    w = weight.reshape(groups, c_in // groups, k).transpose(1, 2)
    cols = _window_matmul(w, x.reshape(n, groups, c_in // groups, math.prod(blocks)))
    out = Col2Im.apply(cols.reshape(n, groups * k, math.prod(blocks)), size, geometry, blocks)
    return _add_bias(out, bias).contiguous(memory_format=_output_format(x))


_IMPLICIT_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)


def _implicit(x, weight):
    """True when the backend's implicit-GEMM kernels run this convolution: 1-D or 2-D, float32
    or a half type, nothing empty, on a device whose backend has them."""
    return (weight.ndim in (3, 4) and x.dtype in _IMPLICIT_DTYPES and x.numel() > 0
            and weight.numel() > 0 and has_kernel("conv2d_igemm", x.device.type))


def _as_2d(x, weight, geometry):
    """A 1-D convolution's input, weight and geometry as a 2-D one's of height 1."""
    if geometry.dims == 2:
        return x, weight, geometry
    flat = _Geometry((1, *geometry.kernel), (1, *geometry.dilation), (0, *geometry.padding),
                     (1, *geometry.stride))
    return x.unsqueeze(2), weight.unsqueeze(2), flat


def _conv_implicit(x, weight, bias, stride, padding, dilation, groups, op):
    """A 1-D or 2-D convolution of a batched `x` through the implicit-GEMM kernels."""
    x, geometry = _conv_geometry(x, weight, stride, padding, dilation, op)
    dims = geometry.dims
    x, weight, geometry = _as_2d(x, weight, geometry)
    out = _ImplicitConv.apply(x, weight, bias, geometry, groups, geometry.blocks(*x.shape[2:]))
    return out.squeeze(2) if dims == 1 else out


def _conv_transpose_implicit(x, weight, bias, stride, padding, output_padding, groups, dilation,
                             op):
    """A 1-D or 2-D transposed convolution of a batched `x` through the implicit-GEMM kernels."""
    geometry, size = _transpose_geometry(x, weight, stride, padding, output_padding, dilation,
                                         op)
    dims = geometry.dims
    x, weight, geometry = _as_2d(x, weight, geometry)
    size = tuple(size) if dims == 2 else (1, *size)
    out = _ImplicitConvTranspose.apply(x, weight, bias, geometry, groups, size)
    return out.squeeze(2) if dims == 1 else out


def _kernel_args(geometry, groups):
    return geometry.stride, geometry.padding, geometry.dilation, groups


def _implicit_forward(ctx, op, x, weight, bias, geometry, groups, size):
    """The forward of _ImplicitConv (`op` "conv2d_igemm") or _ImplicitConvTranspose."""
    ctx.geometry, ctx.groups = geometry, groups
    ctx.save_for_backward(x, weight)
    out = call(op, x, weight, bias, *_kernel_args(geometry, groups), size, device=x.device)
    return wrap(out, x.device)


def _laid_out_as_input(grad, x):
    """The output gradient in the input's memory format, as PyTorch's convolution backward
    takes it: made channels-last once here, the input gradient comes out channels-last as the
    input is, and neither product copies it again."""
    fmt = memory_formats.suggest(x.shape, x.stride())
    if fmt is memory_formats.contiguous_format or grad.is_contiguous(memory_format=fmt):
        return grad
    return grad.contiguous(memory_format=fmt)


def _implicit_backward(ctx, grad, adjoint, transposed):
    """The gradients of _ImplicitConv or (`transposed`) _ImplicitConvTranspose: the input's by
    the `adjoint` Function, the weight's by _ImplicitWeightGrad of the convolution's input and
    output gradient (for a transposed one: `grad` and `x`), the bias's as a column sum."""
    x, weight = ctx.saved_tensors
    need_x, need_weight, need_bias = ctx.needs_input_grad[:3]
    geometry, groups = ctx.geometry, ctx.groups
    grad = _laid_out_as_input(grad, x)
    dx = adjoint.apply(grad, weight, None, geometry, groups,
                       tuple(x.shape[2:])) if need_x else None
    conv_input, conv_grad = (grad, x) if transposed else (x, grad)
    channels_last = memory_formats.suggest(weight.shape, weight.stride()) is not \
        memory_formats.contiguous_format
    dw = _ImplicitWeightGrad.apply(conv_input, conv_grad, tuple(weight.shape), geometry,
                                   groups, channels_last) if need_weight else None
    db = grad.sum((0, 2, 3)) if need_bias else None
    return dx, dw, db, None, None, None


class _ImplicitConv(Function):
    """2-D convolution of (N, C, H, W) `x` into an (N, C_out, *size) result (`size` may cut the
    full output short: a transposed convolution's input gradient)."""

    @staticmethod
    def forward(ctx, x, weight, bias, geometry, groups, size):
        return _implicit_forward(ctx, "conv2d_igemm", x, weight, bias, geometry, groups, size)

    @staticmethod
    def backward(ctx, grad):
        return _implicit_backward(ctx, grad, _ImplicitConvTranspose, False)


class _ImplicitConvTranspose(Function):
    """2-D transposed convolution of (N, C_in, H, W) `x` into an (N, C_out, *size) result: the
    adjoint of _ImplicitConv in `x`."""

    @staticmethod
    def forward(ctx, x, weight, bias, geometry, groups, size):
        return _implicit_forward(ctx, "conv_transpose2d_igemm", x, weight, bias, geometry,
                                 groups, size)

    @staticmethod
    def backward(ctx, grad):
        return _implicit_backward(ctx, grad, _ImplicitConv, True)


class _ImplicitWeightGrad(Function):
    """The weight gradient of a convolution of `x` given its output gradient `grad`. Bilinear
    in the two: <A, dw(x, grad)> = <grad, conv(x, A)>, so its own gradients are a transposed
    convolution and a convolution with A as the weight."""

    @staticmethod
    def forward(ctx, x, grad, weight_shape, geometry, groups, channels_last=False):
        ctx.geometry, ctx.groups = geometry, groups
        ctx.save_for_backward(x, grad)
        out = call("conv2d_igemm_weight_grad", x, grad, weight_shape,
                   *_kernel_args(geometry, groups), channels_last, device=x.device)
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, a):
        x, grad = ctx.saved_tensors
        need_x, need_grad = ctx.needs_input_grad[:2]
        geometry, groups = ctx.geometry, ctx.groups
        dx = _ImplicitConvTranspose.apply(grad, a, None, geometry, groups,
                                          tuple(x.shape[2:])) if need_x else None
        dgrad = _ImplicitConv.apply(x, a, None, geometry, groups,
                                    tuple(grad.shape[2:])) if need_grad else None
        return dx, dgrad, None, None, None, None


def _check_weight(weight, dims, op):
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-D weight, got shape "
                           f"{list(weight.shape)}")


def _convolution(input, weight, bias, stride, padding, dilation, groups, dims, op):
    _check_weight(weight, dims, op)
    x, unbatched = batched(input, op, dims)
    _check_conv(x, weight, bias, groups, False, op)
    if _implicit(x, weight):
        out = _conv_implicit(x, weight, bias, stride, padding, dilation, groups, op)
    else:
        out = _in_float32(_conv, x, weight, bias, stride, padding, dilation, groups, op)
    return _named_convolution(out, unbatched)


def _named_convolution(out, unbatched):
    """`out` unbatched if the input was, named as PyTorch's convolution (or its squeeze)."""
    return name_node(unbatch(out, unbatched),
                     "SqueezeBackward1" if unbatched else "ConvolutionBackward0")


def _transposed(input, weight, bias, stride, padding, output_padding, groups, dilation, dims,
                op):
    _check_weight(weight, dims, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    x, unbatched = batched(input, op, dims)
    _check_conv(x, weight, bias, groups, True, op)
    if _implicit(x, weight):
        out = _conv_transpose_implicit(x, weight, bias, stride, padding, output_padding, groups,
                                       dilation, op)
    else:
        out = _in_float32(_conv_transpose, x, weight, bias, stride, padding, output_padding,
                          groups, dilation, op)
    return _named_convolution(out, unbatched)


@autocast_policy("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of (N, C, L) or (C, L) input."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_policy("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) input."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_policy("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of (N, C, D, H, W) or (C, D, H, W) input."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


@autocast_policy("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution (the adjoint of conv1d); weight (C_in, C_out/groups, k)."""
    return _transposed(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                       "conv_transpose1d")


@autocast_policy("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution (the adjoint of conv2d); weight (C_in, C_out/groups, kh, kw)."""
    return _transposed(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                       "conv_transpose2d")


@autocast_policy("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution (the adjoint of conv3d); weight (C_in, C_out/groups, *k)."""
    return _transposed(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                       "conv_transpose3d")


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of (time, batch, channels) input with a (k, C_in, C_out) weight."""
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(f"conv_tbc: Input must have 3 dims: time, batch, in_channel, and "
                           f"weight 3 dims, got input {list(input.shape)} and weight "
                           f"{list(weight.shape)}")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return name_node(out.permute(2, 0, 1), "ConvTbcBackward0")
