"""Turning lists of samples into batches: `default_collate` and `default_convert` (PyTorch's)."""

import collections.abc
import copy
import re

import numpy as np

from ...ops.creation import as_tensor, tensor
from ...tensor import Tensor

_NUMPY_STRING_OR_OBJECT = re.compile(r"[SaUO]")
_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                  "lists; found {}")


def _is_numpy(obj):
    return type(obj).__module__ == "numpy" and not isinstance(obj, (np.str_, np.bytes_))


def _rebuild(elem, values):
    """A container like `elem` (same mapping or sequence type where possible) holding `values`."""
    if isinstance(elem, collections.abc.Mapping):
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        try:
            return type(elem)(values)
        except TypeError:
            return dict(values)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*values)
    if isinstance(elem, tuple):
        return list(values)
    try:
        return type(elem)(values)
    except TypeError:
        return list(values)


def default_collate(batch):
    """Stack tensors and numpy arrays, turn numbers into tensors, keep strings, and recurse
    into dicts, tuples and lists sample-wise (tuples become lists, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        from ...ops.shape_copies import stack
        return stack(batch, 0)
    if _is_numpy(elem):
        if isinstance(elem, np.ndarray):
            if _NUMPY_STRING_OR_OBJECT.search(elem.dtype.str) is not None:
                raise TypeError(_COLLATE_ERROR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if elem.shape == ():
            return tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype="float64")
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return _rebuild(elem, [default_collate(list(samples)) for samples in zip(*batch)])
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data):
    """Without batching: numpy arrays and scalars become tensors, containers are converted
    element-wise, everything else is returned as it is."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if isinstance(data, np.ndarray) and _NUMPY_STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
