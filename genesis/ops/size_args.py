"""Size and integer arguments read as PyTorch's argument parser reads them: the shape given as
`f(2, 3)`, `f((2, 3))` or `f(size=(2, 3))`, integer counts, and the parser's TypeErrors."""

import operator

from .. import dtypes
from ..device import device as Device
from ..dtypes import dtype as Dtype
from ..tensor import Tensor


def int_list(args, op, name="size", position=1):
    """The integers of an int-list argument given as `f(2, 3)`, `f((2, 3))` or `f([2, 3])`
    (numpy's and one-element integer tensors too, bools past the first), with PyTorch's
    TypeErrors for other values, naming the argument `name` at `position`."""
    if len(args) == 1:
        first = args[0]
        if type(first) is int:  # f(n): the usual case, checked first
            return args
        if isinstance(first, (tuple, list)):  # Size is a tuple
            args = first
        elif count_arg(first) is None:
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of "
                            f"ints, not {_arg_type(first)}")
    elif args and count_arg(args[0]) is None:  # f(a, b, ...) whose a is no integer
        raise TypeError(f"{op}() takes 1 positional argument but {len(args)} were given")
    for s in args:
        if type(s) is not int:
            break
    else:  # plain ints, the usual case
        return tuple(args)
    return tuple(_list_item(s, i, op, name, position) for i, s in enumerate(args))


def _list_item(value, i, op, name, position):
    """Element `i` of an int list as an int: an integer, or a bool past the first (as
    PyTorch's parser reads them)."""
    n = count_arg(value)
    if n is not None:
        return n
    if i == 0:
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of ints, "
                        f"but found element of type {_arg_type(value)} at pos 0")
    if isinstance(value, bool):
        return int(value)
    raise TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos {i + 1} with "
                    f'error "type must be tuple of ints,but got {_arg_type(value)}"')


def check_view_arguments(args):
    """torch's TypeError for view's arguments where they fit neither of its overloads, (dtype)
    and (size): more than one argument, the first no integer; or one argument that is neither
    an integer nor a sequence starting with one (a dtype is taken before)."""
    if not args or type(args[0]) is int:  # the usual case
        return
    given = ", ".join(_arg_type(a) for a in args)
    if len(args) > 1:
        if count_arg(args[0]) is None:
            raise TypeError(f"view() received an invalid combination of arguments - got "
                            f"({given}), but expected one of:\n * (torch.dtype dtype)\n * "
                            "(tuple of ints size)\n")
        return
    first = args[0]
    if isinstance(first, (tuple, list)):
        if not first or count_arg(first[0]) is not None:
            return
        given = type(first).__name__
        invalid = f"{given} of ({', '.join(_arg_type(a) for a in first)})"
    elif count_arg(first) is None:
        invalid = given
    else:
        return
    mismatch = ("      didn't match because some of the arguments have invalid types: "
                f"(!{invalid}!)\n")
    raise TypeError(f"view() received an invalid combination of arguments - got ({given}), but "
                    f"expected one of:\n * (torch.dtype dtype)\n{mismatch} * (tuple of ints "
                    f"size)\n{mismatch}")


def _shape_arg(size, op):
    """A new tensor's sizes (`int_list`), which must be non-negative."""
    shape = int_list(size, op)
    if shape and min(shape) < 0:
        if op == "zeros":  # torch's zeros checks the sizes before the allocation does
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def _sizes(args, size, op, name="size"):
    """The size given positionally (`f(2, 3)`, `f((2, 3))`) or by keyword (`f(size=(2, 3))`,
    which must be a sequence; `name` is the keyword's), as the argument tuple `_shape_arg`
    reads."""
    if size is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                        f"{type(size).__name__}")
    return (size,)


def _new_size(sizes, size, op):
    """The shape given to new_zeros/new_ones/new_empty: sizes as arguments, one sequence, or
    the `size` keyword, with torch's TypeErrors."""
    if size is None and not sizes:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    if size is not None and sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    return _shape_arg(sizes if size is None else (size,), op)


def count_arg(value):
    """`value` as a Python int where PyTorch's parser takes it for an int argument (a Python or
    numpy integer, an integer tensor of one element; not a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Tensor):
        integral = not value.dtype.is_floating_point and value.dtype is not dtypes.bool_
        return int(value.item()) if integral and value.numel() == 1 else None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _arg_type(value):
    """How PyTorch's argument errors name a value's type."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, Dtype):
        return "torch.dtype"
    if isinstance(value, Device):
        return "torch.device"
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
