"""The runner of every elementwise op: operands (tensors and Python scalars) checked, put on one
device, promoted to one dtype and broadcast to one shape once, for every device, then one kernel;
and the helpers the ops' Functions share (dtype categories and rejections, gradients summed back
to an operand's shape, operands saved with their scalars)."""

import numbers

from ... import dtypes
from ..._warnings import warn_once
from ...dispatch import kernel
from ...tensor import Tensor
from ..common import (SCALAR_TYPES, broadcast_data, broadcast_shapes, cast, operand_scalar,
                      python_number, scalar_for, sum_to, wrap)


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else ()


def _device(op, operands):
    """The device of the operands; 0-d CPU tensors ride along with GPU ones, as in PyTorch."""
    devices = {x.device for x in operands if isinstance(x, Tensor)
               and not (x.ndim == 0 and x.device.type == "cpu")}
    if not devices:
        return next(x.device for x in operands if isinstance(x, Tensor))
    if len(devices) > 1:
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at "
                           f"least two devices, {' and '.join(sorted(map(str, devices)))}!")
    return devices.pop()


_HALVES = (dtypes.float16, dtypes.bfloat16)


def _operand(op, i, x, dtype, shape, device, reads_halves=False):
    """Operand `i` of kernel `op` as its argument: a Python scalar as the kernel reads it
    (`operand_scalar`), or a backend array cast to `dtype` viewed as `shape`; a half-type array
    left as it is where the kernel `reads_halves` as float32 itself."""
    if not isinstance(x, Tensor):
        return operand_scalar(op, i, dtype, x)
    if x.device != device:
        return scalar_for(dtype, x.item())
    if not (reads_halves and x.dtype in _HALVES):
        x = cast(x, dtype)
    return broadcast_data(x, shape)


def _reads_halves(fn, dtype, operands, device):
    """Whether kernel `fn` takes this op's half-type operands uncast: it reads them as float32
    (the CUDA binary kernels), the op computes in float32, and a float32 array operand tells
    the kernel so."""
    return (dtype is dtypes.float32 and getattr(fn, "READS_HALVES_AS_FLOAT32", False)
            and any(isinstance(x, Tensor) and x.dtype is dtype and x.device == device
                    for x in operands))


def _check_operands(op, operands):
    if not any(isinstance(x, Tensor) for x in operands):
        raise TypeError(f"{op}(): expected at least one Tensor operand")
    for x in operands:
        if not isinstance(x, (Tensor,) + SCALAR_TYPES):
            raise TypeError(f"{op}(): expected Tensor or Number operands, got {type(x).__name__}")


def _uniform(op, operands):
    """(first tensor, kernel arguments, whether their shapes differ) when the operands of kernel
    `op` are tensors of one dtype and device, and Python scalars that keep that dtype (a float
    with a floating tensor, an int with a non-bool one, a bool); else (None, None, None).

    Such operands need no promotion or cast, and when their shapes agree no broadcast: the fast
    path of the hot small ops. The arguments are the tensors' arrays and the scalars as a
    kernel of that dtype reads them (`operand_scalar`).
    """
    first, args = None, []
    floats = ints = bools = reshaped = False
    for x in operands:
        if isinstance(x, Tensor):
            if first is None:
                first = x
            elif not (x.dtype is first.dtype
                      and (x.device is first.device or x.device == first.device)):
                return None, None, None
            elif x._data.shape != first._data.shape:
                reshaped = True
            args.append(x._data)
            continue
        kind = x.__class__
        if kind is float:
            floats = True
        elif kind is int:
            ints = True
        elif kind is bool:
            bools = True
        else:
            return None, None, None
        args.append(x)
    if first is None:
        return None, None, None
    dtype = first.dtype
    if floats and not dtype.is_floating_point or ints and dtype is dtypes.bool_:
        return None, None, None
    if dtype in _HALVES and (floats or ints or bools):
        args = [operand_scalar(op, i, dtype, x) if type(x) in SCALAR_TYPES else a
                for i, (x, a) in enumerate(zip(operands, args))]
    elif bools or ints and dtype.is_floating_point:
        args = [scalar_for(dtype, x) if type(x) in SCALAR_TYPES else a
                for x, a in zip(operands, args)]
    return first, args, reshaped


def elementwise(op, *operands, dtype=None, kernel_op=None, **kwargs):
    """Run kernel `op` on `operands` broadcast together, computed in `dtype` (default: promoted)."""
    first, args, reshaped = _uniform(kernel_op or op, operands)
    if first is not None and (dtype is None or dtype is first.dtype):
        device = first.device
        if reshaped:
            shape = broadcast_shapes(*(_shape(x) for x in operands), op=op)
            args = [broadcast_data(x, shape) if isinstance(x, Tensor) else a
                    for x, a in zip(operands, args)]
        return wrap(kernel(kernel_op or op, device.type)(*args, **kwargs), device)
    operands = tuple(python_number(x) for x in operands)
    _check_operands(op, operands)
    device = _device(op, operands)
    dtype = dtype or dtypes.result_type(*operands)
    shape = broadcast_shapes(*(_shape(x) for x in operands), op=op)
    fn = kernel(kernel_op or op, device.type)
    reads_halves = _reads_halves(fn, dtype, operands, device)
    args = [_operand(kernel_op or op, i, x, dtype, shape, device, reads_halves)
            for i, x in enumerate(operands)]
    return wrap(fn(*args, **kwargs), device)


def category(dtype):
    """"b" for bool, "i" for integers, "f" for floating point."""
    return "b" if dtype is dtypes.bool_ else ("f" if dtype.is_floating_point else "i")


def reject(op, dtype, categories):
    """NotImplementedError, as PyTorch raises, when `dtype`'s category is in `categories`."""
    if category(dtype) in categories:
        raise NotImplementedError(f"\"{op}\" not implemented for "
                                  f"'{dtypes.scalar_type_name(dtype)}'")


def _float_dtype(*operands):
    """Promoted dtype, made floating (integers and bools compute in the default float)."""
    dtype = dtypes.result_type(*operands)
    return dtype if dtype.is_floating_point else dtypes.get_default_dtype()


def _grad(ctx, i, g):
    """Input i's gradient `g` summed to the input's shape, or None when input i needs none."""
    shape = ctx.input_shape(i)
    return None if shape is None else sum_to(g, shape)


def _save_operands(ctx, *operands):
    """Save tensor operands for backward and remember the Python scalars beside them (the
    tensors only through save_for_backward, so that saved-tensor hooks see every one)."""
    ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in operands))
    ctx.scalars = tuple([None if isinstance(x, Tensor) else x for x in operands])


def _restore(ctx):
    """The saved operands, with Python scalars put back in place of missing tensors."""
    saved = ctx.saved_tensors
    return tuple([s if s is not None else scalar for s, scalar in zip(saved, ctx.scalars)])


def _is_bool(x):
    return (isinstance(x, Tensor) and x.dtype is dtypes.bool_) or isinstance(x, bool)



def _check_tensors(op, *xs):
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument must be Tensor, not {type(x).__name__}")


def invalid_arguments(op, args, name, tensor_names):
    """PyTorch's TypeError for arguments matching no signature of `op(tensors..., *, name=1)`."""
    got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__
                    for a in args if a is not None)
    expected = ", ".join("Tensor " + n for n in tensor_names)
    return TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but "
                     f"expected ({expected}, *, Number {name} = 1)")


def scalar_first(op, name, scalar, tensors, tensor_names):
    """PyTorch's deprecated overloads that take the scalar first (`x.add(alpha, other)`,
    `x.addcmul(value, tensor1, tensor2)`): `tensors` checked against `tensor_names`, after the
    warning PyTorch gives on the first such call of a process. Returns `tensors`, `scalar`."""
    if (not isinstance(scalar, numbers.Number) or len(tensors) != len(tensor_names)
            or not all(isinstance(t, Tensor) for t in tensors)):
        raise invalid_arguments(op, (scalar,) + tuple(tensors), name, tensor_names)
    old = ", ".join(["Number " + name] + ["Tensor " + n for n in tensor_names])
    new = ", ".join("Tensor " + n for n in tensor_names)
    warn_once("scalar first", f"This overload of {op} is deprecated:\n\t{op}({old})\nConsider "
              f"using one of the following signatures instead:\n\t{op}({new}, *, Number "
              f"{name} = 1)")
    return tensors, scalar
