"""The argument helpers layer code imports from torch.nn.modules.utils: _single/_pair/_triple/
_quadruple turn an int into a tuple (and any iterable into a tuple as it is), and
consume_prefix_in_state_dict_if_present strips DataParallel's "module." from checkpoint keys."""

import collections.abc
import itertools


def _ntuple(n, name="parse"):
    """A parser: an iterable becomes a tuple of its items, anything else `n` copies of itself."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """`t` reversed with each item repeated `n` times: a layer's padding as F.pad takes it."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip `prefix` from the keys of `state_dict` (and of its `_metadata`) in place."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata):
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)


__all__ = ["consume_prefix_in_state_dict_if_present"]
