"""Flatten parameters into one vector and back (for second-order methods and line searches)."""

from ...autograd.grad_mode import no_grad
from ...ops import shape_copies


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (in the graph)."""
    return shape_copies.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D `vec` into `parameters` (their data, not their graph)."""
    if vec.ndim != 1:
        raise TypeError(f"expected a 1-D vector, got shape {list(vec.shape)}")
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
