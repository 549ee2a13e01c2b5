"""Argument handling shared by the functional forms: tuples of sizes, reductions, dims; the
memory format of their results."""

from ... import dtypes, memory_formats
from ..._warnings import warn
from ...autograd.function import Function, name_node
from ...autograd.grad_mode import is_grad_enabled


def ntuple(value, n, name="argument"):
    """`value` as an n-tuple of ints (an int is repeated; a sequence must have length n)."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return tuple(value) * n
        if len(value) != n:
            raise ValueError(f"expected {name} to be a single int or a sequence of {n} ints, "
                             f"got {list(value)}")
        return tuple(value)
    return (value,) * n


def in_format_of(input, out, keeps_3d=True):
    """`out` laid out in the memory format `input`'s strides suggest, as PyTorch lays out what
    pooling, padding, resampling and pixel shuffles return (channels-last in, channels-last
    out); channels_last_3d only where the op `keeps_3d` (PyTorch's average and adaptive 3-D
    pools return contiguous results)."""
    fmt = memory_formats.suggest(input.shape, input.stride())
    if fmt is memory_formats.channels_last_3d and not keeps_3d:
        fmt = memory_formats.contiguous_format
    return out if out.ndim != input.ndim else laid_out(out, fmt)


def laid_out(out, fmt):
    """`out` itself where it is laid out in memory format `fmt` (the CUDA kernels write the
    layout their ops return), else a copy that shows the op's node name."""
    if out.is_contiguous(memory_format=fmt):
        return out
    node = out.grad_fn
    copy = out.contiguous(memory_format=fmt)
    return copy if node is None else name_node(copy, node.name())


def size_text(t):
    """`t`'s shape as PyTorch's Python-facing messages print a size: torch.Size([2, 3])."""
    return f"torch.Size({list(t.shape)})"


def check_reduction(reduction, op):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average/reduce pair mapped to a `reduction` string."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
         "instead.")
    return reduction


def reduce_loss(loss, reduction):
    """Apply `reduction` ("none", "mean" or "sum") to an elementwise loss."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def refuse_gradient(op, **arguments):
    """torch's refusal, where grad mode records, of an argument of `op` that requires grad
    though its derivative formula gives it none (checked in argument order)."""
    if not is_grad_enabled():
        return
    for name, tensor in arguments.items():
        if tensor is not None and tensor.requires_grad:
            raise RuntimeError(f"The function '{op}' is not differentiable with respect to "
                               f"argument '{name}'. This input cannot have requires_grad True.")


class _RefusedBackward(Function):
    """`value` itself, whose backward raises `error`."""

    @staticmethod
    def forward(ctx, value, error):
        ctx.error = error
        return value.view_as(value)

    @staticmethod
    def backward(ctx, grad):
        raise ctx.error


def refused_backward(value, error):
    """`value`, whose gradient raises `error` (forward-mode AD too, which pushes tangents
    through the backward): where torch's backward kernel refuses what its forward kernel
    took."""
    return _RefusedBackward.apply(value, error)


def cast_error(result, output):
    """torch's error for an in-place step whose `result` dtype a tensor of dtype `output`
    cannot hold (a float result written into an integer tensor)."""
    return RuntimeError(f"result type {dtypes.scalar_type_name(result)} can't be cast to the "
                        f"desired output type {dtypes.scalar_type_name(output)}")


def dtype_mismatch(found, expected):
    """torch's error for an operand of dtype `found` where a kernel expects `expected` (one
    dtype for its operands)."""
    return RuntimeError(f"Found dtype {dtypes.scalar_type_name(found)} but expected "
                        f"{dtypes.scalar_type_name(expected)}")


def softmax_dim(name, ndim):
    """The implicit dim of softmax-like functions called without one (deprecated in torch)."""
    warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
         "dim=X as an argument.")
    return 0 if ndim in (0, 1, 3) else 1
