"""Gradient clipping: rescale gradients to a maximum total norm, or clamp their values.

`foreach` arguments are accepted for torch compatibility; gradients are updated one in-place op
per tensor either way.
"""

from ...autograd.grad_mode import no_grad
from ...ops import creation, reduce, shape
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The `norm_type` norm of all `tensors` together, as if concatenated into one vector."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        return creation.tensor(0.0)
    norm_type = float(norm_type)
    device = tensors[0].device
    norms = [reduce.vector_norm(t, norm_type).to(device) for t in tensors]
    total = reduce.vector_norm(shape.stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by max_norm / (total_norm + 1e-6) when that is below 1."""
    coef = (max_norm / (total_norm + 1e-6)).clamp_max(1.0)
    for g in _grads(parameters):
        g.mul_(coef.to(device=g.device, dtype=g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so their combined norm is at most `max_norm`.

    Returns the total norm before clipping, a 0-d tensor.
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
