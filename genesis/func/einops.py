"""rearrange: einops' reader-friendly reordering of a tensor's dimensions, as torch.func's. A
pattern such as "b (h w) c -> b c h w" names the dimensions on each side: brackets compose
axes into one dimension, "1" is a dimension of size 1, "..." stands for the dimensions no name
covers. The result is one reshape into the named axes, a permute and a reshape into the right
side's dimensions: a view wherever reshape gives one.

The pattern's errors are PyTorch's (its parser is einops'); a left-side axis of size 1 ("1")
over a longer dimension is refused, where PyTorch sums that dimension away.
"""

import functools
import math

from ..ops.shape_copies import stack
from ..tensor import Tensor

_ELLIPSIS = "\u2026"  # "..." once parsed: a single character, so it reads as one identifier


def rearrange(tensor, pattern, **axes_lengths):
    """`tensor` (or a sequence of tensors, stacked first) rearranged as `pattern` says;
    `axes_lengths` gives the sizes of axes composed into one dimension that cannot be
    inferred."""
    if not isinstance(tensor, Tensor):
        tensor = stack(tensor)
    left, right, left_names, right_names = _parse_pattern(pattern, _ELLIPSIS in axes_lengths)
    _check_pattern(left_names, right_names, axes_lengths)
    left, right = _expand_ellipsis(left, right, tensor.ndim)
    sizes = _axis_sizes(left, tuple(tensor.shape), dict(axes_lengths))
    named = [axis for group in left for axis in group]
    order = [named.index(axis) for group in right for axis in group]
    out = tensor.reshape([sizes[axis] for axis in named]).permute(order)
    return out.reshape([math.prod(sizes[axis] for axis in group) for group in right])


@functools.lru_cache(256)
def _parse_pattern(pattern, ellipsis_named):
    """(left, right, left names, right names) of `pattern`: each side's composition is a tuple
    of groups (tuples of axis names, () for a "1") and _ELLIPSIS."""
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if ellipsis_named:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    (left, left_names, left_bracketed), (right, right_names, _) = map(
        _parse_side, (left_text, right_text))
    if _ELLIPSIS in right_names and _ELLIPSIS not in left_names:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left_bracketed:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    return left, right, frozenset(left_names), frozenset(right_names)


def _check_pattern(left_names, right_names, axes_lengths):
    """PyTorch's checks of a parsed pattern against rearrange's rules and `axes_lengths`."""
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if any(name.isdecimal() for name in left_names | right_names):
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = set(left_names ^ right_names)
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = set(axes_lengths) - left_names
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")


def _parse_side(expression):
    """(composition, names, whether "..." sits in brackets) of one side of a pattern."""
    if "." in expression:
        if "..." not in expression:
            raise ValueError("Expression may contain dots only inside ellipsis (...)")
        if expression.count("...") != 1 or expression.count(".") != 3:
            raise ValueError("Expression may contain dots only inside ellipsis (...); only one "
                             "ellipsis for tensor ")
        expression = expression.replace("...", _ELLIPSIS)
    composition, names, group, bracketed = [], set(), None, False
    for token in _tokens(expression):
        if token == "(":
            if group is not None:
                raise ValueError("Axis composition is one-level (brackets inside brackets not "
                                 "allowed)")
            group = []
        elif token == ")":
            if group is None:
                raise ValueError("Brackets are not balanced")
            composition.append(tuple(group))
            group = None
        elif token.isdecimal() and int(token) == 1:
            if group is None:
                composition.append(())
        else:
            _add_name(token, names)
            bracketed = bracketed or (token == _ELLIPSIS and group is not None)
            if group is not None:
                group.append(token)
            else:
                composition.append(token if token == _ELLIPSIS else (token,))
    if group is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
    return tuple(composition), names, bracketed


def _tokens(expression):
    """The brackets and the names (or numbers) of one side, in order."""
    name = ""
    for char in expression + " ":
        if char.isalnum() or char in ("_", _ELLIPSIS):
            name += char
            continue
        if char not in "() ":
            raise ValueError(f"Unknown character '{char}'")
        if name:
            yield name
        name = ""
        if char != " ":
            yield char


def _add_name(name, names):
    """Record an axis name (or a number, refused later), refusing repeats and invalid names."""
    if name in names and not name.isdecimal():
        raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
    if name != _ELLIPSIS and not name.isdecimal():
        if not name.isidentifier():
            raise ValueError(f"Invalid axis identifier: {name}\nnot a valid python identifier")
        if name[0] == "_" or name[-1] == "_":
            raise ValueError(f"Invalid axis identifier: {name}\naxis name should should not "
                             "start or end with underscore")
    names.add(name)


def _expand_ellipsis(left, right, ndim):
    """Both sides with "..." replaced by one axis per dimension it covers, after checking that
    the left side has as many dimensions as the tensor."""
    count = len(left)
    if _ELLIPSIS in left:
        covered = ndim - (count - 1)
        if count - 1 > ndim:
            raise ValueError(f"Number of dimensions in pattern ({count - 1}) must be less than or "
                             f"equal to the number of dimensions in the tensor ({ndim})")
    elif count != ndim:
        raise ValueError(f"Number of dimensions in pattern ({count}) must be equal to the number "
                         f"of dimensions in the tensor ({ndim})")
    else:
        covered = 0
    axes = tuple((_ELLIPSIS, i) for i in range(covered))
    return _spread(left, axes), _spread(right, axes)


def _spread(composition, axes):
    """`composition` with _ELLIPSIS, alone or in a group, replaced by `axes`."""
    groups = []
    for item in composition:
        if item == _ELLIPSIS:
            groups.extend((axis,) for axis in axes)
        else:
            groups.append(tuple(a for name in item
                                for a in (axes if name == _ELLIPSIS else (name,))))
    return groups


def _axis_sizes(left, shape, sizes):
    """The size of every left-side axis: given, or inferred from its dimension's size."""
    for dim, (group, size) in enumerate(zip(left, shape)):
        unknown = [axis for axis in group if axis not in sizes]
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer the sizes of two axes at once: "
                             f"{unknown[0]} and {unknown[1]}")
        known = math.prod(sizes[axis] for axis in group if axis in sizes)
        if unknown and known and size % known == 0:
            sizes[unknown[0]] = size // known
        elif not group and size != 1:
            raise ValueError(f"rearrange: the left side's \"1\" at dimension {dim} stands for "
                             f"a dimension of size {size}")
        elif unknown or known != size:
            raise ValueError(f"rearrange: axes {list(group)} of sizes {known} do not fit "
                             f"dimension {dim} of size {size}")
    return sizes
