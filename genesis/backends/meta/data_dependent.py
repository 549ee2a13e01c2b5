"""Ops whose output shape depends on the input's values, which a meta tensor does not have:
they raise as torch's meta kernels do (masked_select and boolean-mask indexing go through
nonzero, and raise its error)."""

from ...dispatch import register


@register("nonzero", "meta")
def nonzero(arr):
    raise NotImplementedError(
        "The register_meta function for torch.nonzero() raises unimplemented by default, as a "
        "correct data-independent implementation does not exist.")


@register("unique", "meta")
def unique(arr, return_inverse, return_counts, dim):
    raise NotImplementedError(
        "aten::_unique2: attempted to run this operator with Meta tensors, but there was no "
        "fake impl or Meta kernel registered.")


@register("repeat_interleave", "meta")
def repeat_interleave(repeats):
    raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
