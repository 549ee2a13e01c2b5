"""Lists of tensors handed to the multi-tensor kernels (fused Adam, gradient clipping).

The kernels see each tensor as a flat contiguous array; a non-contiguous one is worked on through
a contiguous copy, written back afterwards.
"""


def by_device(tensors):
    """{device: [tensors]} in first-seen order."""
    out = {}
    for t in tensors:
        out.setdefault(t.device, []).append(t)
    return out


def dense(t):
    """`t` if contiguous, else a contiguous copy (the kernels index elements linearly)."""
    return t if t.is_contiguous() else t.contiguous()


class Updated:
    """Tensors a kernel updates in place: `arrays` are contiguous backend arrays (copies for
    non-contiguous tensors) and `write_back` stores the copies and bumps every version."""

    __slots__ = ("tensors", "work")

    def __init__(self, tensors):
        self.tensors = tensors
        self.work = [dense(t) for t in tensors]

    @property
    def arrays(self):
        return [w._data for w in self.work]

    def write_back(self):
        for t, w in zip(self.tensors, self.work):
            if w is t:
                t._bump_version()
            else:
                t.copy_(w)
