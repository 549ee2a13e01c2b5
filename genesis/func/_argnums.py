"""Picking the differentiated arguments out of a call by `argnums`, as torch.func does."""


def _wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _check_type(argnums):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def wrap_argnums(argnums, num_args):
    """`argnums` with negative entries made positive; errors for bad, repeated or no entries."""
    _check_type(argnums)
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def slice_argnums(args, argnums):
    """The argument `argnums` names (an int), or the tuple of those it names (a tuple)."""
    argnums = wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[i] for i in argnums)


def replace_args(args, new, argnums):
    """`args` with the arguments `argnums` names replaced by `new` (shaped as slice_argnums's)."""
    argnums = wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    by_position = dict(zip(argnums, new))
    return tuple(by_position.get(i, a) for i, a in enumerate(args))
