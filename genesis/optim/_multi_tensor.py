"""Lists of tensors handed to the multi-tensor kernels (fused Adam, gradient clipping).

The kernels see each tensor as a flat contiguous array. A dense tensor in another layout (a
channels-last weight) is handed over as a 1-D view of its memory when the order does not matter
(a norm, a scaling) or when the tensors updated together are laid out alike (a parameter, its
gradient and its states: their views pair the same elements); anything else is worked on
through a contiguous copy, written back afterwards.
"""

from .. import memory_formats


def by_device(tensors):
    """{device: [tensors]} in first-seen order."""
    out = {}
    for t in tensors:
        out.setdefault(t.device, []).append(t)
    return out


def linear(t, flat=True):
    """What a kernel indexes linearly for `t`: `t` if contiguous; with `flat`, a dense `t`'s
    elements as a 1-D view in memory order; else a contiguous copy."""
    if t.is_contiguous():
        return t
    if flat and memory_formats.non_overlapping_and_dense(tuple(t.shape), t.stride()):
        return t.as_strided((t.numel(),), (1,), t.storage_offset())
    return t.contiguous()


def laid_out_alike(*tensors):
    """Whether `tensors` (a parameter, its gradient and states) share strides, so that their
    flat views pair the same elements. Arrays of one shape, byte strides and item size share
    them (the usual case, a dtype's tensors, decided without building element strides)."""
    first = tensors[0]
    data, itemsize = first._data, first.dtype.itemsize
    shape, strides = data.shape, data.strides
    for t in tensors[1:]:
        if t._data.strides != strides or t._data.shape != shape or t.dtype.itemsize != itemsize:
            break
    else:
        return True
    element_strides = first.stride()
    return all(t.stride() == element_strides for t in tensors[1:])


class Updated:
    """Tensors a kernel updates in place: `arrays` are contiguous backend arrays (flat views,
    or copies, see `linear`; `flat` per tensor) and `write_back` stores the copies and bumps
    every version."""

    __slots__ = ("tensors", "work", "copied")

    def __init__(self, tensors, flat=None):
        self.tensors = tensors
        self.work = [linear(t, f) for t, f in zip(tensors, flat or [True] * len(tensors))]
        self.copied = [w is not t and w._base is None for t, w in zip(tensors, self.work)]

    @property
    def arrays(self):
        return [w._data for w in self.work]

    def write_back(self):
        for t, w, copied in zip(self.tensors, self.work, self.copied):
            if copied:
                t.copy_(w)
            else:
                t._bump_version()
