"""Tensor layouts, as torch.layout: every Genesis tensor is strided (its elements addressed
through sizes and strides); the sparse layouts are not offered."""


class layout:
    """One tensor layout, compared by identity and printed as PyTorch prints its own."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"genesis.{self.name}"

    def __reduce__(self):
        return self.name  # pickled as the module attribute: one object per layout


strided = layout("strided")
