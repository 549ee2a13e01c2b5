"""The fields numpy names on an array, for the backends' own array types (CUDA and meta
arrays), derived from their `shape`, byte `strides` and numpy `dtype`."""


class StridedFields:
    """ndim, size, itemsize, nbytes and element strides, as numpy arrays have them."""

    __slots__ = ()

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def element_strides(self):
        itemsize = self.dtype.itemsize
        return tuple([s // itemsize for s in self.strides])
